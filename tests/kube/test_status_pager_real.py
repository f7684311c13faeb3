"""The pager's answer to an expired continue token, against a real kube-apiserver and etcd.

The writer lists in pages (webhook/kube/pager.py); when a continue token has expired
it falls back to one full list, as client-go's pager does. On the real server a token
expires only when two things have happened, which is why this module runs a plane of
its own, whose kube-apiserver compacts etcd every second (`--etcd-compaction-interval=1s`;
the default is 5 minutes):
- etcd was compacted past the first page's revision by kube-apiserver's own compactor.
  A compaction behind its back (`ControlPlane.compact_etcd`) is not enough: the server
  was seen to keep serving the token, and even an Exact list at its revision, 40 s later,
  because its watch cache learns of compactions only through that compactor (the
  `compact_rev_key` it keeps in etcd);
- the watch cache dropped its snapshot at that revision. Since v1.34 it serves continue
  tokens from snapshots (`ListFromCacheSnapshot`, on by default), and it reads the
  compaction revision every 15 s (`compactorPollPeriod`, a constant), so the token
  expires up to ~15 s after the compaction. Seen: 12 s, and ~22 s for the whole module,
  the plane's start included.

The fixture is named `control_plane` so that a failure shows this plane's logs (see
conftest.py), and running this module alone starts no other plane.
"""

from __future__ import annotations

import base64
import json
import pathlib
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes.client import ApiClient
from kubernetes.client.exceptions import ApiException

from tests.kube.cluster import (
    GROUP,
    PLURAL,
    VERSION,
    api_client,
    eventually,
    install_crd,
    new_namespace,
    shipped_crd,
)
from tests.kube.controlplane import ControlPlane, running
from tests.kube.status_writer_support import VALID, Stores
from tests.support.emulator.errors import CONTINUE_INCONSISTENT
from webhook.kube.informer import Informer
from webhook.kube.pager import Listing, Page, PageConsumer
from webhook.kube.settings import InformerSettings
from webhook.status.kubeapi import FeedbackStoreApi
from webhook.status.writer_metrics import WriterMetrics

pytestmark = [pytest.mark.kube, pytest.mark.xdist_group("kube")]

COMPACTION = "--etcd-compaction-interval=1s"
PAGE = 2
NAMES = [f"s-{i}" for i in range(7)]  # four pages of two
# Generous for a loaded machine: expected within ~15 s of the compaction (module docstring).
EXPIRY_TIMEOUT = 90.0


@pytest.fixture(scope="module", name="control_plane")
def _compacting_plane(
    control_plane_binaries: pathlib.Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ControlPlane]:
    workdir = tmp_path_factory.mktemp("compacting-plane")
    with running(control_plane_binaries, workdir, extra_apiserver_args=[COMPACTION]) as plane:
        install_crd(plane, shipped_crd())
        yield plane


class PausedAfterFirstPage(FeedbackStoreApi):
    """The writer's own list calls, recorded, with one pause between the first and second page.

    `pause(token)` runs before the first request that carries a token: the time a slow
    client takes between pages, during which the cluster moves on and the token expires.
    """

    def __init__(self, client: ApiClient, namespace: str, pause: Callable[[str], None]) -> None:
        super().__init__(client, namespace)
        self.calls: list[tuple[int | None, str | None]] = []
        self.failures: list[int] = []
        self._pause: Callable[[str], None] | None = pause

    def list_page(self, limit: int | None, token: str | None) -> Page:
        if token is not None and self._pause is not None:
            pause, self._pause = self._pause, None
            pause(token)
        self.calls.append((limit, token))
        try:
            return super().list_page(limit, token)
        except ApiException as error:
            self.failures.append(error.status)
            raise


def continue_path(namespace: str, token: str) -> str:
    query = urllib.parse.urlencode({"limit": PAGE, "continue": token})
    return f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}?{query}"


def wait_expired(plane: ControlPlane, namespace: str, token: str) -> dict[str, Any]:
    """Ask for the next page (raw, no client) until the server stops serving it; its Status."""

    def answered() -> tuple[int, bytes] | None:
        code, body = plane.raw("GET", continue_path(namespace, token))
        return None if code == 200 else (code, body)

    code, body = eventually(
        answered, timeout=EXPIRY_TIMEOUT, interval=0.25, what="the continue token expired"
    )
    assert code == 410, body
    status: dict[str, Any] = json.loads(body)
    return status


def decoded(token: str) -> dict[str, Any]:
    """A continue token's content (upstream's `storage.EncodeContinue`: base64url JSON)."""
    content: dict[str, Any] = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    return content


def test_an_expired_continue_token_is_410_expired_and_the_pager_lists_everything_once(
    control_plane: ControlPlane,
) -> None:
    namespace = new_namespace(control_plane, "pager")
    stores = Stores(control_plane, namespace)
    for name in NAMES:
        stores.create(name, VALID)
    seen: dict[str, Any] = {}

    def cluster_moves_on_until_the_token_expires(token: str) -> None:
        stores.delete("s-0")  # on the first page, already read
        stores.merge("s-5", {"metadata": {"labels": {"moved": "on"}}})  # on a page to come
        seen["last_write"] = stores.create("s-9-late", VALID)["metadata"]["resourceVersion"]
        seen["status"] = wait_expired(control_plane, namespace, token)

    collection = PausedAfterFirstPage(
        api_client(control_plane), namespace, cluster_moves_on_until_the_token_expires
    )
    listed = collection.list(PAGE)

    # What the real server answers an expired continue token with.
    status = seen["status"]
    shape = {key: status[key] for key in ("kind", "status", "code", "reason")}
    assert shape == {"kind": "Status", "status": "Failure", "code": 410, "reason": "Expired"}
    assert status["message"] == CONTINUE_INCONSISTENT, "the emulator's text is the server's"
    # ... and a token for the rest of the list after the first page, at the latest revision.
    first_token = collection.calls[1][1]
    assert first_token is not None
    assert decoded(first_token)["start"] == "/s-1\x00"
    way_on = decoded(status["metadata"]["continue"])
    assert way_on == {"v": "meta.k8s.io/v1", "rv": -1, "start": "s-1\x00"}

    # The pager got that 410 on its second page and listed everything once, without limit.
    assert collection.calls == [(PAGE, None), (PAGE, first_token), (None, None)]
    assert collection.failures == [410]
    assert listed.full_list_fallback
    assert listed.requests == 3
    names = [item["metadata"]["name"] for item in listed.items]
    assert names == ["s-1", "s-2", "s-3", "s-4", "s-5", "s-6", "s-9-late"], (
        "every object exactly once, as it is now: none of the stale first page"
    )
    assert listed.items[names.index("s-5")]["metadata"]["labels"] == {"moved": "on"}
    assert int(listed.resource_version) >= int(seen["last_write"]), "watch from after the writes"


class SmallPages(PausedAfterFirstPage):
    """The informer asks for pages of the default size; these are of `PAGE`."""

    def list_pages(self, consume: PageConsumer, page_size: int | None = PAGE) -> Listing:
        return super().list_pages(consume, PAGE)


def test_the_informer_tells_each_page_as_it_comes_and_deletes_what_the_full_list_lacks(
    control_plane: ControlPlane,
) -> None:
    """After an expired token the full list replaces what the first page told: s-0, deleted
    meanwhile, is told gone once the list is done; the watch starts from the full list's
    resourceVersion."""
    namespace = new_namespace(control_plane, "pager-informer")
    stores = Stores(control_plane, namespace)
    for name in NAMES:
        stores.create(name, VALID)
    told: list[tuple[str, str]] = []
    seen: dict[str, Any] = {}

    def cluster_moves_on_until_the_token_expires(token: str) -> None:
        told.append(("page 2 asked", ""))
        stores.delete("s-0")
        seen["last_write"] = stores.create("s-9-late", VALID)["metadata"]["resourceVersion"]
        wait_expired(control_plane, namespace, token)

    collection = SmallPages(
        api_client(control_plane), namespace, cluster_moves_on_until_the_token_expires
    )
    metrics = WriterMetrics()
    informer = Informer(
        collection,
        lambda key, obj: told.append(("change", key[1])),
        lambda key: told.append(("delete", key[1])),
        metrics,
        InformerSettings(),
        on_synced=lambda: told.append(("synced", "")),
    )
    thread = threading.Thread(target=informer.run, daemon=True)
    thread.start()
    try:
        assert informer.synced.wait(EXPIRY_TIMEOUT + 30), "the list never finished"
    finally:
        informer.stop()
        thread.join(30)
    later = ["s-1", "s-2", "s-3", "s-4", "s-5", "s-6", "s-9-late"]
    assert told == [
        ("change", "s-0"),
        ("change", "s-1"),
        ("page 2 asked", ""),
        *(("change", name) for name in later),
        ("delete", "s-0"),
        ("synced", ""),
    ]
    assert collection.calls == [(PAGE, None), (PAGE, collection.calls[1][1]), (None, None)]
    assert metrics.objects.collect()[0].samples[0].value == len(later)
