"""The status writer survives what a real API server does to controllers, and converges.

Each test breaks the connection or the server in one documented way while
objects keep changing, then checks that no object is left stale.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.emulator import ApiServerEmulator
from tests.support.status_writer import (
    INVALID,
    NS,
    VALID,
    converged,
    fs,
    lists,
    running_writer,
    sample,
    status_writes,
    store_requests,
    validated,
)
from webhook.rules import inuse


def flip(emu: ApiServerEmulator, name: str) -> None:
    """Swap the object's spec between valid and invalid (a new generation)."""

    def change(obj: dict) -> None:
        obj["spec"] = INVALID if obj["spec"] == VALID else VALID

    emu.update(NS, name, change)


def seed(emu: ApiServerEmulator, count: int = 6) -> list[str]:
    names = [f"s{i}" for i in range(count)]
    for i, name in enumerate(names):
        emu.create(NS, fs(name, VALID if i % 2 else INVALID))
    return names


def test_a_conflicting_concurrent_write_is_retried_and_both_changes_survive(
    apiserver: ApiServerEmulator,
) -> None:
    apiserver.create(NS, fs("store", INVALID))
    apiserver.faults.conflict_next_status_write(n=2)
    with running_writer(apiserver) as writer:
        converged(apiserver)
        assert sample(writer, "feedbackstore_status_conflicts_total") == 2
    codes = [r.status for r in status_writes(apiserver)]
    assert codes == [409, 409, 200]
    stored = apiserver.get(NS, "store")
    assert stored is not None
    assert stored["metadata"]["annotations"]["emulator.ctxmesh.ai/concurrent-writes"] == "2"


def test_conflicts_that_never_end_fall_back_to_backoff_and_then_converge(
    apiserver: ApiServerEmulator,
) -> None:
    apiserver.create(NS, fs("store", INVALID))
    apiserver.faults.conflict_next_status_write(n=9)
    with running_writer(apiserver) as writer:
        converged(apiserver)
        assert sample(writer, "feedbackstore_status_reconciles_total", outcome="retry") >= 1
    assert [r.status for r in status_writes(apiserver)][-1] == 200


@pytest.mark.parametrize("clean", [False, True], ids=["a reset connection", "a watch that ends"])
def test_a_dropped_watch_is_resumed_and_changes_made_meanwhile_arrive(
    apiserver: ApiServerEmulator, clean: bool
) -> None:
    names = seed(apiserver)
    with running_writer(apiserver) as writer:
        converged(apiserver)
        for _ in range(3):
            assert apiserver.faults.drop_watches(clean=clean) == 1
            for name in names[:3]:
                flip(apiserver, name)
            converged(apiserver)
        assert sample(writer, "feedbackstore_status_lists_total") == 1  # resumed, not relisted
        restarts = sample(writer, "feedbackstore_status_watch_restarts_total", reason="closed")
        restarts += sample(writer, "feedbackstore_status_watch_restarts_total", reason="error")
        assert restarts >= 3


def test_an_expired_resource_version_means_a_relist_that_also_sees_deletions(
    apiserver: ApiServerEmulator,
) -> None:
    names = seed(apiserver)
    with running_writer(apiserver) as writer:
        converged(apiserver)
        # Hold the writer's reconnecting watch while the cluster moves on and compacts.
        apiserver.faults.delay(1.0, method="GET", path_contains="/feedbackstores", count=1)
        apiserver.faults.drop_watches()
        flip(apiserver, names[0])
        apiserver.delete(NS, names[1])
        apiserver.create(NS, fs("newcomer", INVALID))
        apiserver.faults.expire_resource_versions()
        converged(apiserver)
        apiserver.eventually(
            lambda: sample(writer, "feedbackstore_status_watch_restarts_total", reason="gone") == 1
        )
        apiserver.eventually(lambda: sample(writer, "feedbackstore_status_objects") == 6)
    assert len(lists(apiserver)) == 2


def in_background(action: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=action, daemon=True)
    thread.start()
    return thread


def test_an_api_server_restart_mid_stream_is_survived(apiserver: ApiServerEmulator) -> None:
    names = seed(apiserver)
    with running_writer(apiserver):
        converged(apiserver)
        for name in names:
            flip(apiserver, name)
        apiserver.restart(downtime=0.5)
        converged(apiserver)
        restart = in_background(lambda: apiserver.restart(downtime=1.0))
        for name in names:
            flip(apiserver, name)
        restart.join()
        converged(apiserver)


def test_changes_and_compaction_while_the_server_is_down_arrive_after_it_returns(
    apiserver: ApiServerEmulator,
) -> None:
    names = seed(apiserver)
    with running_writer(apiserver) as writer:
        converged(apiserver)
        apiserver.go_down()
        for name in names:
            flip(apiserver, name)
        apiserver.faults.expire_resource_versions()
        apiserver.come_back()
        converged(apiserver)
        assert sample(writer, "feedbackstore_status_watch_restarts_total", reason="gone") >= 1


def test_a_server_that_refuses_connections_at_start_is_retried(
    apiserver: ApiServerEmulator,
) -> None:
    seed(apiserver)
    apiserver.go_down()
    with running_writer(apiserver) as writer:
        apiserver.eventually(
            lambda: sample(writer, "feedbackstore_status_watch_restarts_total", reason="error"),
            timeout=30,
            message="the first list refused",
        )
        apiserver.come_back()
        converged(apiserver)


@pytest.mark.parametrize(
    ("status", "count"),
    [(500, 3), (429, 2), (503, 2)],
    ids=["500 InternalError", "429 TooManyRequests", "503 ServiceUnavailable"],
)
def test_failed_status_writes_are_retried_until_they_land(
    apiserver: ApiServerEmulator, status: int, count: int
) -> None:
    apiserver.create(NS, fs("store", INVALID))
    apiserver.faults.fail_next(
        count, status, method="PATCH", path_contains="/status", retry_after=0
    )
    with running_writer(apiserver) as writer:
        converged(apiserver)
        assert sample(writer, "feedbackstore_status_writes_total", result="error") == count
    assert [r.status for r in status_writes(apiserver)] == [status] * count + [200]


def test_a_429_waits_at_least_its_retry_after(apiserver: ApiServerEmulator) -> None:
    apiserver.create(NS, fs("store", INVALID))
    apiserver.faults.fail_next(
        1, status=429, method="PATCH", path_contains="/status", retry_after=1
    )
    with running_writer(apiserver):
        apiserver.eventually(lambda: len(status_writes(apiserver)) == 2, interval=0.005)
        converged(apiserver)
    writes = status_writes(apiserver)
    assert [r.status for r in writes] == [429, 200]
    assert writes[1].received - writes[0].received >= 0.9


def test_a_429_holds_the_next_write_even_when_the_object_changes_meanwhile(
    apiserver: ApiServerEmulator,
) -> None:
    """A watch event queues the key again at once; the server's Retry-After still stands."""
    apiserver.create(NS, fs("store", INVALID))
    apiserver.faults.fail_next(
        1, status=429, method="PATCH", path_contains="/status", retry_after=1
    )
    with running_writer(apiserver):
        apiserver.eventually(lambda: len(status_writes(apiserver)) == 1, interval=0.005)
        flip(apiserver, "store")
        apiserver.eventually(lambda: len(status_writes(apiserver)) == 2, interval=0.005)
        converged(apiserver)
    writes = status_writes(apiserver)
    assert writes[0].status == 429
    assert writes[1].received - writes[0].received >= 0.9


def test_a_429_holds_a_finalizer_write_of_another_object_too(
    apiserver: ApiServerEmulator,
) -> None:
    """The server's Retry-After holds every write: a finalizer to take off a store whose status
    is up to date waits for it as a status write does."""
    apiserver.create(NS, fs("held", VALID))
    with running_writer(apiserver) as writer:
        converged(apiserver)
        apiserver.faults.fail_next(
            1, status=429, method="PATCH", path_contains="/busy/status", retry_after=1
        )
        apiserver.create(NS, fs("busy", INVALID))
        # Not only sent: answered and taken in by the writer (counted), so the hold stands.
        apiserver.eventually(
            lambda: sample(writer, "feedbackstore_status_writes_total", result="error") == 1,
            interval=0.005,
        )

        def hold(obj: dict) -> None:  # no agent uses it: the writer takes our finalizer off
            obj["metadata"]["finalizers"] = [inuse.FINALIZER]

        apiserver.update(NS, "held", hold)
        apiserver.eventually(lambda: finalizer_writes(apiserver, "held"), interval=0.005)
        converged(apiserver)
    refused = status_writes(apiserver, "busy")[0]
    assert refused.status == 429
    assert finalizer_writes(apiserver, "held")[0].received - refused.received >= 0.9


def finalizer_writes(emu: ApiServerEmulator, name: str) -> list[Any]:
    """PATCHes of the object itself (not its status): the finalizer's apply."""
    return [
        r
        for r in emu.requests
        if r.method == "PATCH" and r.path.split("?")[0].endswith(f"/feedbackstores/{name}")
    ]


def get_statuses(emu: ApiServerEmulator) -> list[int | None]:
    return [r.status for r in emu.requests if r.method == "GET" and "feedbackstores" in r.path]


@pytest.mark.parametrize(
    ("after_sync", "errors"),
    [(False, 2), (True, 3)],
    ids=[
        "the first list fails twice with 500",
        "a dropped watch reconnects into two 500s",
    ],
)
def test_a_failing_list_or_watch_is_retried_with_backoff(
    apiserver: ApiServerEmulator, after_sync: bool, errors: int
) -> None:
    names = seed(apiserver)

    def fail() -> None:
        apiserver.faults.fail_next(2, 500, method="GET", path_contains="/feedbackstores")

    if not after_sync:
        fail()
    with running_writer(apiserver) as writer:
        if after_sync:
            converged(apiserver)
            fail()
            apiserver.faults.drop_watches()
            flip(apiserver, names[0])
        converged(apiserver)
        assert sample(writer, "feedbackstore_status_watch_restarts_total", reason="error") == errors
    assert get_statuses(apiserver).count(500) == 2


def test_a_throttled_list_is_retried_after_retry_after(apiserver: ApiServerEmulator) -> None:
    """GETs answered 429 with Retry-After are retried by the client's transport itself
    (urllib3 honours Retry-After for idempotent requests), so the writer never sees them."""
    seed(apiserver)
    apiserver.faults.fail_next(2, 429, method="GET", path_contains="/feedbackstores", retry_after=0)
    with running_writer(apiserver) as writer:
        converged(apiserver)
        assert sample(writer, "feedbackstore_status_watch_restarts_total", reason="error") == 0
    assert get_statuses(apiserver)[:3] == [429, 429, 200]


def test_chaos_of_every_kind_still_leaves_no_object_stale(apiserver: ApiServerEmulator) -> None:
    names = seed(apiserver, 12)
    with running_writer(apiserver, workers=3):
        converged(apiserver)
        apiserver.faults.fail_next(4, status=500, method="PATCH")
        apiserver.faults.fail_next(2, status=429, method="PATCH", retry_after=0)
        apiserver.faults.conflict_next_status_write(n=3)
        for round_ in range(4):
            for name in names[round_::3]:
                flip(apiserver, name)
            if round_ == 1:
                apiserver.faults.drop_watches()
            if round_ == 2:
                apiserver.faults.expire_resource_versions()
                apiserver.faults.drop_watches()
            if round_ == 3:
                apiserver.restart(downtime=0.3)
            time.sleep(0.1)
        converged(apiserver, timeout=30)
    for name in names:
        assert validated(apiserver.get(NS, name)) is not None


ALLOWED = [
    # (method, path pattern): exactly the RBAC docs/status-writer.md documents.
    ("GET", r"^/apis/agents\.ctxmesh\.ai/v1beta1/feedbackstores$"),  # list, watch
    # in-use protection: AgentDeployments looked for (404 here), listed and watched
    ("GET", r"^/apis/agents\.ctxmesh\.ai/v1beta1/agentdeployments$"),
    ("PATCH", r"^/apis/agents\.ctxmesh\.ai/v1beta1/namespaces/[^/]+/feedbackstores/[^/]+/status$"),
    ("GET", rf"^/apis/coordination\.k8s\.io/v1/namespaces/{NS}/leases/[^/]+$"),
    ("POST", rf"^/apis/coordination\.k8s\.io/v1/namespaces/{NS}/leases$"),
    ("PUT", rf"^/apis/coordination\.k8s\.io/v1/namespaces/{NS}/leases/[^/]+$"),
    ("POST", r"^/api/v1/namespaces/[^/]+/events$"),
]


def test_every_request_stays_within_the_documented_rbac(apiserver: ApiServerEmulator) -> None:
    names = seed(apiserver)
    apiserver.faults.conflict_next_status_write(n=2)
    apiserver.faults.fail_next(1, 500, method="PATCH")
    with running_writer(apiserver):
        converged(apiserver)
        for name in names:
            flip(apiserver, name)
        apiserver.faults.drop_watches()
        converged(apiserver)
    seen = {(r.method, r.path) for r in apiserver.requests}
    outside = [
        (method, path)
        for method, path in seen
        if not any(m == method and re.match(p, path) for m, p in ALLOWED)
    ]
    assert outside == []
    assert {m for m, _ in seen} == {"GET", "PATCH", "POST", "PUT"}


def test_an_unreadable_watch_event_restarts_the_watch_from_the_last_event_read(
    apiserver: ApiServerEmulator,
) -> None:
    names = seed(apiserver, count=2)
    with running_writer(apiserver) as writer:
        converged(apiserver)
        apiserver.faults.garble_watch_events(1, path_contains="/feedbackstores")
        flipped_at = time.monotonic()
        flip(apiserver, names[0])  # its event arrives as a line that is not JSON
        flip(apiserver, names[1])  # and this one readable, later in the same stream
        changed = apiserver.get(NS, names[0])
        assert changed is not None
        converged(apiserver)  # names[0] is not left stale
        assert sample(writer, "feedbackstore_status_watch_restarts_total", reason="unreadable") == 1
        assert len(lists(apiserver)) == 1, "restarted, not relisted"
    watches = [r for r in store_requests(apiserver) if "watch" in r.query]
    restarted = next(r for r in watches if r.received > flipped_at)
    assert int(restarted.query["resourceVersion"]) < int(changed["metadata"]["resourceVersion"])
