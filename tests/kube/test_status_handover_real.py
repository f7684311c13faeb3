"""Two status writers with work queued, on a real kube-apiserver: the deposed leader's writes are
fenced, and SIGTERM hands over at once.

Each writer runs as the console script under a ServiceAccount of its own bound as the shipped
one (its ClusterRole as shipped, its leader-election Role in the test's namespace), so the
audit log tells the two apart. The leader has hundreds of stores to write and is held to
`--qps 5`, so it always has work queued when it is stopped or signalled: fewer stores than
the thousands a cluster may hold, but the same state (a queue that outlasts the test).
"""

from __future__ import annotations

import signal
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import pytest
from kubernetes import client as k8s

from tests.kube.cluster import api_client, eventually, install_crd, new_namespace, shipped_crd
from tests.kube.controlplane import ControlPlane
from tests.kube.status_writer_support import (  # noqa: F401 (fixtures)
    LEASE,
    LEASE_DURATION,
    RENEW_DEADLINE,
    RETRY_PERIOD,
    VALID,
    Audit,
    Audited,
    Stores,
    WriterProcess,
    Writers,
    _audit,
    _stores,
    _writers,
    settle,
)
from webhook.kube.settings import ElectionSettings

pytestmark = [pytest.mark.kube, pytest.mark.xdist_group("kube")]

STORES = 300
THROTTLED = ("--qps", "5", "--burst", "1")
# SIGTERM to exit: the writes in flight (one write timeout), the release's read and write of the
# Lease (each given up after the renew deadline), and the interpreter's exit (a second or two on
# a loaded machine). Well inside a pod's 30 s grace period.
ELECTION = ElectionSettings("", LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD)
EXITS_WITHIN = ELECTION.write_timeout + 2 * RENEW_DEADLINE + 2.0
# A standby that had to wait the Lease out leads `LEASE_DURATION` after it last saw it renewed,
# which may be one retry before the signal and one more before it looked: leading sooner, it
# took the released Lease at its next retry.
BEFORE_IT_COULD_RUN_OUT = LEASE_DURATION - 2 * RETRY_PERIOD


@pytest.fixture(scope="module", autouse=True)
def shipped(control_plane: ControlPlane) -> None:
    install_crd(control_plane, shipped_crd())


@pytest.fixture
def namespace(control_plane: ControlPlane) -> str:
    return new_namespace(control_plane, "handover")


def many(stores: Stores) -> None:
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: stores.create(f"s-{i:04d}", VALID), range(STORES)))


def writes(audit: Audit, namespace: str, user: str) -> list[Audited]:
    """Every write a writer made but to its Lease: status, finalizer, Event."""
    found = [
        e
        for e in audit.events(namespace)
        if e.user == user
        and e.verb in ("create", "update", "patch", "delete")
        and e.resource != "leases"
    ]
    return sorted(found, key=lambda e: e.received)


def leader_and_standby(writers: Writers) -> tuple[WriterProcess, WriterProcess]:
    """A leader writing at --qps 5 with hundreds of stores still queued, and a warm standby."""
    leader = writers.start("leader", *THROTTLED, shipped=True)
    leader.wait_log("started leading")
    standby = writers.start("standby", *THROTTLED, shipped=True)
    standby.wait_log("listed", timeout=60)
    leader.wait_log("condition written", count=5, timeout=60)
    return leader, standby


def lease(plane: ControlPlane, namespace: str) -> dict[str, str]:
    found = k8s.CustomObjectsApi(api_client(plane)).get_namespaced_custom_object(
        "coordination.k8s.io", "v1", namespace, "leases", LEASE
    )
    spec: dict[str, str] = found["spec"]
    return spec


def test_a_leader_paused_past_its_lease_writes_nothing_after_its_successors_first_write(
    namespace: str, stores: Stores, writers: Writers, audit: Audit
) -> None:
    many(stores)
    leader, standby = leader_and_standby(writers)
    leader.signal(signal.SIGSTOP)
    try:
        standby.wait_log("started leading", timeout=LEASE_DURATION + 20)
        eventually(
            lambda: writes(audit, namespace, standby.user), timeout=30, what="the successor writes"
        )
    finally:
        leader.signal(signal.SIGCONT)
    leader.wait_log("stopped leading", timeout=30)
    # The resumed leader's workers wake to the queue they had: the first meets the fence (on a
    # loaded machine, seconds after the resume), and the others are given as long again.
    leader.wait_log("write withheld: no longer leading", timeout=30)
    settle(3.0)
    audit.flush(namespace)

    first = writes(audit, namespace, standby.user)[0].received
    late = [e for e in writes(audit, namespace, leader.user) if e.received >= first]
    assert len(late) <= 1, [(e.verb, e.name, e.received.isoformat()) for e in late]
    assert leader.metric("feedbackstore_status_writes_fenced_total") >= 1
    assert leader.messages("write withheld: no longer leading")


def test_sigterm_hands_over_at_the_standbys_next_retry_and_the_leader_exits_at_once(
    control_plane: ControlPlane, namespace: str, stores: Stores, writers: Writers, audit: Audit
) -> None:
    many(stores)
    leader, standby = leader_and_standby(writers)
    signalled = time.time()
    assert leader.stop(timeout=20) == 0
    exited = time.time() - signalled

    def taken() -> dict[str, str] | None:
        spec = lease(control_plane, namespace)
        return spec if spec.get("holderIdentity") == standby.identity else None

    spec = eventually(taken, timeout=LEASE_DURATION + 10, what="the standby holds the Lease")
    took_over = datetime.fromisoformat(spec["acquireTime"]).timestamp() - signalled
    settle(1.0)
    audit.flush(namespace)
    after = [e for e in writes(audit, namespace, leader.user) if e.received.timestamp() > signalled]

    assert exited < EXITS_WITHIN, f"exited {exited:.1f} s after SIGTERM"
    assert took_over < BEFORE_IT_COULD_RUN_OUT, f"the standby led {took_over:.2f} s after SIGTERM"
    assert spec["leaseTransitions"] == 0  # taken from a released Lease, not from the leader
    assert leader.messages("lease released")
    assert len(after) <= 2, [(e.verb, e.name) for e in after]  # one in flight per worker
    print(f"exited after {exited:.2f} s; the standby led {took_over:.2f} s after SIGTERM")
