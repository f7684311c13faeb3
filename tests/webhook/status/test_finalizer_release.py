"""Our finalizer goes only on the server's word: the agents it lists, and the object it answers.

One reconcile of a store being deleted, on a writer whose agents watch says nobody uses it:
the writer asks the server (an uncached list) before letting go, reads what the removal did,
and says "removed" (a log line, `DeletionReleased`) only when the finalizer is gone.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.emulator import ApiServerEmulator
from tests.support.status_writer import NS, VALID, fs, validated
from webhook.install import FIELD_MANAGER
from webhook.kube.cache import Key, ObjectCache
from webhook.rules import api, inuse
from webhook.status.events import EventRecorder
from webhook.status.kubeapi import APPLY_PATCH, FeedbackStoreApi
from webhook.status.writer import StatusWriter
from webhook.status.writer_metrics import WriterMetrics

KUBECTL = "kubectl"
LOGGER = "feedbackstore.status.writer"


@pytest.fixture(name="client")
def _client(apiserver: ApiServerEmulator) -> Iterator[Any]:
    client = apiserver.api_client()
    yield client
    client.close()


def apply_finalizer(client: Any, name: str, manager: str) -> None:
    """A server-side apply listing our finalizer, as `manager` (a kubectl apply of a manifest
    that names it, or the writer itself)."""
    from kubernetes.client import CustomObjectsApi

    body = fs(name, None, namespace=NS, finalizers=[inuse.FINALIZER])
    del body["spec"]
    CustomObjectsApi(client).patch_namespaced_custom_object(
        api.GROUP, api.VERSION, NS, api.PLURAL, name, body,
        field_manager=manager, force=True, _content_type=APPLY_PATCH,
    )  # fmt: skip


def writer(
    apiserver: ApiServerEmulator,
    client: Any,
    on_server: tuple[str, ...] = (),
    api: FeedbackStoreApi | None = None,
) -> tuple[StatusWriter, WriterMetrics, ObjectCache]:
    """A leader whose agents watch sees no user of any store; the server lists `on_server`."""
    metrics = WriterMetrics()
    cache = ObjectCache()
    written = StatusWriter(
        api or FeedbackStoreApi(client),
        cache,
        metrics,
        EventRecorder(client, "test", metrics),
        is_leader=lambda: True,
        agents=lambda _key: (),
        users_on_server=lambda _key: on_server,
    )
    return written, metrics, cache


def held_store(apiserver: ApiServerEmulator, client: Any, name: str, *managers: str) -> Key:
    apiserver.create(NS, fs(name, VALID))
    for manager in managers:
        apply_finalizer(client, name, manager)
    return NS, name


def released_events(apiserver: ApiServerEmulator) -> list[dict[str, Any]]:
    return [e for e in apiserver.events(NS) if e["reason"] == inuse.REASON_RELEASED]


def said(caplog: pytest.LogCaptureFixture, message: str) -> int:
    return sum(1 for record in caplog.records if record.getMessage() == message)


@pytest.mark.parametrize(
    "managers",
    [(FIELD_MANAGER,), (KUBECTL, FIELD_MANAGER)],
    ids=["a finalizer only we list", "a finalizer a kubectl apply lists too"],
)
def test_a_deleted_store_nobody_uses_is_released_and_the_release_is_told_once(
    apiserver: ApiServerEmulator,
    client: Any,
    caplog: pytest.LogCaptureFixture,
    managers: tuple[str, ...],
) -> None:
    key = held_store(apiserver, client, "store", *managers)
    apiserver.delete(*key)
    status_writer, metrics, cache = writer(apiserver, client)
    cache.put(key, apiserver.get(*key) or {})
    caplog.set_level(logging.INFO, logger=LOGGER)

    for _ in range(2):  # the second pass finds the status to write, then nothing to remove
        status_writer.reconcile(key)
        if apiserver.get(*key) is None:
            break
        cache.put(key, apiserver.get(*key) or {})

    assert apiserver.get(*key) is None
    assert len(released_events(apiserver)) == 1
    assert said(caplog, "finalizer removed") == 1
    shared = metrics.registry.get_sample_value("feedbackstore_status_finalizers_shared_total")
    assert shared == (1.0 if KUBECTL in managers else 0.0)


class Raced(FeedbackStoreApi):
    """Another controller adds its finalizer just after our apply answers."""

    def __init__(self, client: Any, apiserver: ApiServerEmulator) -> None:
        super().__init__(client)
        self._apiserver = apiserver

    def apply_finalizer(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        answer = super().apply_finalizer(namespace, name, body)

        def add(obj: dict[str, Any]) -> None:
            obj["metadata"]["finalizers"].append(OTHER)

        self._apiserver.update(namespace, name, add)
        return answer


OTHER = "example.com/backup"


def test_a_removal_the_server_refuses_is_neither_logged_nor_told(
    apiserver: ApiServerEmulator, client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The guarded patch fails its `test`: the finalizers are not those it was built from."""
    key = held_store(apiserver, client, "store", KUBECTL, FIELD_MANAGER)
    apiserver.delete(*key)
    status_writer, _, cache = writer(apiserver, client, api=Raced(client, apiserver))
    cache.put(key, apiserver.get(*key) or {})
    caplog.set_level(logging.INFO, logger=LOGGER)

    outcome = status_writer.reconcile(key)

    assert outcome.retry_after is not None
    assert (apiserver.get(*key) or {})["metadata"]["finalizers"] == [inuse.FINALIZER, OTHER]
    assert [r.status for r in apiserver.requests if r.method == "PATCH"][-1] == 422
    assert released_events(apiserver) == []
    assert said(caplog, "finalizer removed") == 0


def test_an_agent_the_watch_has_not_brought_yet_keeps_the_store_held_and_in_use(
    apiserver: ApiServerEmulator, client: Any
) -> None:
    key = held_store(apiserver, client, "store", FIELD_MANAGER)
    status_writer, _, cache = writer(apiserver, client, on_server=("late-agent",))
    cache.put(key, apiserver.get(*key) or {})

    status_writer.reconcile(key)

    stored = apiserver.get(*key) or {}
    assert stored["metadata"]["finalizers"] == [inuse.FINALIZER]
    in_use = validated(stored, inuse.CONDITION_TYPE)
    assert in_use is not None
    assert (in_use["status"], in_use["reason"]) == ("True", inuse.REASON_REFERENCED)
    assert "late-agent" in in_use["message"]
