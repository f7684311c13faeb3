"""The writer's cache keeps a projection of each store, and nothing the writer reads is missing.

The proof is behavioural, so a new reader of a dropped field fails here whatever it reads: the
whole writer reconciles each store once from a cache of whole objects and once from a cache of
projections, and must send the same requests and Events, and keep the same plans. Every store
also carries what no consumer should read (others' conditions and managedFields, labels,
annotations with a last-applied copy), so a reader of any of it shows.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.webhook.status.test_stalled_yield import (
    DUPLICATE_SPEC,
    INVALID_STALLED,
    INVALID_VALIDATED,
    OUR_STALLED,
    PLATFORM,
    VALID,
    WRITER,
    YIELD_CASES,
    owning,
    store,
)
from webhook.kube.cache import Key, ObjectCache
from webhook.rules import inuse
from webhook.status.events import EventRecorder, Transition, event_body
from webhook.status.kubeapi import FeedbackStoreApi
from webhook.status.projection import project_store
from webhook.status.usage import NOT_SERVED, View, plan_usage
from webhook.status.validated import plan_status
from webhook.status.writer import StatusWriter
from webhook.status.writer_metrics import WriterMetrics

NOW = datetime(2026, 12, 7, 3, 0, 0, tzinfo=UTC)
KEY: Key = ("agents", "support")
IN_USE = {
    "type": inuse.CONDITION_TYPE,
    "status": "True",
    "reason": inuse.REASON_REFERENCED,
    "message": "used by AgentDeployment a",
    "lastTransitionTime": "2026-12-04T05:00:00Z",
}


def with_noise(obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` carrying what no consumer reads; a reader of any of it changes what it does."""
    noisy = copy.deepcopy(obj)
    metadata = noisy["metadata"]
    metadata["labels"] = {"team": "support"}
    metadata["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": "{}"}
    metadata["creationTimestamp"] = "2026-12-01T00:00:00Z"
    metadata.setdefault("managedFields", []).append(
        {"manager": "kubectl", "operation": "Apply", "fieldsV1": {"f:spec": {"f:human": {}}}}
    )
    noisy["status"]["conditions"].append({"type": "Ready", "status": "True", "reason": "Up"})
    noisy["status"]["observedGeneration"] = 7
    return noisy


def deleted(obj: dict[str, Any], *finalizers: str) -> dict[str, Any]:
    gone = copy.deepcopy(obj)
    gone["metadata"] |= {"deletionTimestamp": "2026-12-07T02:00:00Z", "finalizers": [*finalizers]}
    return gone


def held(obj: dict[str, Any]) -> dict[str, Any]:
    kept = copy.deepcopy(obj)
    kept["metadata"] |= {"uid": "u-1", "finalizers": [inuse.FINALIZER, "example.com/backup"]}
    kept["status"]["conditions"].append(IN_USE)
    return kept


BASE: list[tuple[str, dict[str, Any]]] = [
    *((case[0], case[1]) for case in YIELD_CASES),
    ("nothing written yet", store(VALID, [])),
    ("in use and held", held(store(DUPLICATE_SPEC, [INVALID_VALIDATED, INVALID_STALLED]))),
    (
        "being deleted, held by us and another",
        deleted(held(store(VALID, [])), inuse.FINALIZER, "example.com/backup"),
    ),
    (
        "yielded while being deleted",
        deleted(
            store(
                DUPLICATE_SPEC,
                [INVALID_VALIDATED, INVALID_STALLED],
                owning(WRITER, "Apply", "Validated", ".", "type", "status"),
                owning(PLATFORM, "Update", "Validated", "message"),
                OUR_STALLED,
            ),
            inuse.FINALIZER,
        ),
    ),
]
CASES = [(f"{name}, with what nobody reads", with_noise(obj)) for name, obj in BASE]
VIEWS: list[tuple[str, View]] = [
    ("agents not synced", None),
    ("no agent names it", ()),
    ("an agent names it", ("a",)),
    ("agents not served", NOT_SERVED),
]


class Recorded(FeedbackStoreApi):
    """Answers each write with the object as the server would keep it, and records the write."""

    def __init__(self, obj: dict[str, Any]) -> None:
        self.obj = copy.deepcopy(obj)
        self.sent: list[tuple[str, Any]] = []

    def apply_status(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        self.sent.append(("status", body))
        return copy.deepcopy(self.obj)

    def apply_finalizer(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        self.sent.append(("finalizer", body))
        answer = copy.deepcopy(self.obj)
        finalizers = [f for f in answer["metadata"].get("finalizers", []) if f != inuse.FINALIZER]
        answer["metadata"]["finalizers"] = finalizers + body["metadata"].get("finalizers", [])
        return answer

    def patch_guarded(self, namespace: str, name: str, operations: Any) -> dict[str, Any]:
        self.sent.append(("patch", operations))
        return copy.deepcopy(self.obj)


class Events(EventRecorder):
    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def emit(self, obj: dict[str, Any], change: Transition, message: str, *_: Any) -> None:
        body = event_body(obj, change, message, "test", NOW)
        del body["metadata"]["name"]  # its clock's nanoseconds
        self.sent.append(body)


@pytest.fixture(autouse=True)
def _still_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both runs stamp their conditions with the same time."""
    monkeypatch.setattr("webhook.status.writer.utc_now", lambda: NOW)


def reconciled(obj: dict[str, Any], cache: ObjectCache, view: View) -> list[tuple[str, Any]]:
    """What one reconcile of `obj` sends: writes, then Events; twice, the second from the cache
    as the first write's answer left it."""
    api, events = Recorded(obj), Events()
    writer = StatusWriter(
        api, cache, WriterMetrics(), events, lambda: True, lambda _: view, lambda _: ()
    )
    cache.put(KEY, copy.deepcopy(obj))
    for _ in range(2):
        writer.reconcile(KEY)
    return [*api.sent, *(("event", body) for body in events.sent)]


@pytest.mark.parametrize("view", [v for _, v in VIEWS], ids=[name for name, _ in VIEWS])
@pytest.mark.parametrize("obj", [obj for _, obj in CASES], ids=[name for name, _ in CASES])
def test_the_writer_does_the_same_from_the_projection_as_from_the_whole_object(
    obj: dict[str, Any], view: View
) -> None:
    whole = reconciled(obj, ObjectCache(lambda o: o), view)
    assert reconciled(obj, ObjectCache(project_store), view) == whole


@pytest.mark.parametrize("obj", [obj for _, obj in CASES], ids=[name for name, _ in CASES])
def test_the_plans_are_the_same_from_the_projection(obj: dict[str, Any]) -> None:
    projected = project_store(obj)
    assert plan_status(projected, NOW) == plan_status(obj, NOW)
    for _, view in VIEWS:
        assert plan_usage(projected, view, NOW) == plan_usage(obj, view, NOW)


def test_the_projection_keeps_ownership_only_while_another_manager_shares_validated() -> None:
    alone = with_noise(
        store(
            DUPLICATE_SPEC,
            [INVALID_VALIDATED, INVALID_STALLED],
            owning(WRITER, "Apply", "Validated", ".", "status"),
            OUR_STALLED,
        )
    )
    shared = copy.deepcopy(alone)
    shared["metadata"]["managedFields"].append(owning(PLATFORM, "Update", "Validated", "message"))
    assert "managedFields" not in project_store(alone)["metadata"]
    assert [e["manager"] for e in project_store(shared)["metadata"]["managedFields"]] == [
        WRITER,
        PLATFORM,
    ]


def test_the_projection_drops_what_nobody_reads_and_leaves_the_object_it_was_given() -> None:
    obj = with_noise(held(store(VALID, [INVALID_VALIDATED])))
    before = copy.deepcopy(obj)
    projected = project_store(obj)
    assert obj == before
    assert set(projected) == {"metadata", "spec", "status"}
    assert set(projected["metadata"]) == {
        "name",
        "namespace",
        "uid",
        "generation",
        "resourceVersion",
        "finalizers",
    }
    assert projected["status"] == {"conditions": [INVALID_VALIDATED, IN_USE]}
