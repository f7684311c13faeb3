"""Several status writers, one Lease: only the holder writes, a standby takes over.

Writers run in-process on their own ApiClient against one emulator; each has
its own metrics registry, so "who wrote" is read from each writer's counters.
"""

from __future__ import annotations

import time

import pytest

from tests.support.emulator import ApiServerEmulator
from tests.support.status_writer import (
    INVALID,
    LEASE_DURATION,
    MICRO_TIME,
    NS,
    VALID,
    converged,
    fs,
    running_writer,
    sample,
    status_writes,
)
from webhook.kube.client import LeaseApi
from webhook.kube.leader import LeaderElector
from webhook.kube.settings import ElectionSettings
from webhook.status.controller import StatusController
from webhook.status.writer_metrics import WriterMetrics

LEASE = "feedbackstore-status-writer"


def lease_spec(emu: ApiServerEmulator) -> dict:
    leases = [lease for lease in emu.leases(NS) if lease["metadata"]["name"] == LEASE]
    assert len(leases) == 1
    spec: dict = leases[0]["spec"]
    return spec


def writes_by(controller: StatusController) -> float:
    return sample(controller, "feedbackstore_status_writes_total", result="ok")


def test_two_writers_one_lease_only_the_leader_writes_and_the_standby_takes_over(
    apiserver: ApiServerEmulator,
) -> None:
    for i in range(6):
        apiserver.create(NS, fs(f"s{i}", INVALID if i % 2 else VALID))
    # A 6 s lease: without the release on stop, the standby would wait about 6 s.
    slow_expiry = {"lease_duration": 6, "renew_deadline": 4.0}
    with running_writer(apiserver, identity="first", **slow_expiry) as first:
        apiserver.eventually(first.is_leader)
        converged(apiserver)
        with running_writer(apiserver, identity="second", **slow_expiry) as second:
            apiserver.eventually(second.ready)
            apiserver.update(NS, "s0", lambda o: o.update(spec=INVALID))
            converged(apiserver)
            time.sleep(0.5)  # several renewal rounds: the standby must stay a standby
            assert first.is_leader()
            assert not second.is_leader()
            assert writes_by(second) == 0
            assert writes_by(first) == 7
            assert lease_spec(apiserver)["holderIdentity"] == "first"

            first.stop()  # releases the Lease
            stopped = time.monotonic()
            apiserver.eventually(second.is_leader, timeout=5)
            takeover = time.monotonic() - stopped
            apiserver.update(NS, "s1", lambda o: o.update(spec=VALID))
            apiserver.update(NS, "s2", lambda o: o.update(spec=INVALID))
            converged(apiserver)
            # The emulator holds the new status before the writer has read its
            # response and counted the write: wait for the count, then hold it.
            apiserver.eventually(lambda: writes_by(second) == 2)
            time.sleep(0.2)
            assert writes_by(second) == 2
            spec = lease_spec(apiserver)
            assert spec["holderIdentity"] == "second"
            assert spec["leaseTransitions"] == 0  # taken from a released Lease, not from "first"
    assert takeover < 2.5  # released: no need to wait out the 6 s lease
    assert writes_by(first) == 7


def test_a_leader_cut_off_from_its_lease_stops_writing_until_it_renews(
    apiserver: ApiServerEmulator,
) -> None:
    apiserver.create(NS, fs("store", INVALID))
    with running_writer(apiserver) as writer:
        apiserver.eventually(writer.is_leader)
        converged(apiserver)
        apiserver.faults.fail_next(10_000, 500, path_contains="/leases/")
        apiserver.eventually(lambda: not writer.is_leader(), timeout=5)
        apiserver.reset_requests()
        apiserver.update(NS, "store", lambda o: o.update(spec=VALID))
        time.sleep(0.5)
        assert status_writes(apiserver) == []  # not the leader: writes nothing
        assert sample(writer, "feedbackstore_status_leader") == 0
        apiserver.faults.clear()
        apiserver.eventually(writer.is_leader, timeout=5)
        converged(apiserver)
        assert sample(writer, "feedbackstore_status_leader") == 1


def test_lease_times_are_microtime_with_six_fractional_digits(
    apiserver: ApiServerEmulator,
) -> None:
    with running_writer(apiserver, identity="writer-x") as writer:
        apiserver.eventually(writer.is_leader)
        first = dict(lease_spec(apiserver))
        apiserver.eventually(lambda: lease_spec(apiserver)["renewTime"] != first["renewTime"])
        renewed = lease_spec(apiserver)
    for spec in (first, renewed):
        assert MICRO_TIME.match(spec["acquireTime"]), spec
        assert MICRO_TIME.match(spec["renewTime"]), spec
        assert spec["leaseDurationSeconds"] == LEASE_DURATION
    assert renewed["acquireTime"] == first["acquireTime"]
    for request in apiserver.requests:
        if "/leases" in request.path and request.method in ("POST", "PUT"):
            body = request.json()["spec"]
            assert MICRO_TIME.match(body["renewTime"])
            assert MICRO_TIME.match(body["acquireTime"])
            assert request.status in (200, 201)


def test_a_release_leaves_an_empty_holder_for_the_next_candidate(
    apiserver: ApiServerEmulator,
) -> None:
    with running_writer(apiserver, identity="leaving") as writer:
        apiserver.eventually(writer.is_leader)
    spec = lease_spec(apiserver)
    assert spec["holderIdentity"] == ""
    assert spec["leaseDurationSeconds"] == 1
    assert MICRO_TIME.match(spec["renewTime"])


def test_the_elector_refuses_a_renew_deadline_not_shorter_than_the_lease(
    apiserver: ApiServerEmulator,
) -> None:
    lease = LeaseApi(apiserver.api_client(), NS, LEASE)
    with pytest.raises(ValueError, match="renew deadline"):
        LeaderElector(lease, ElectionSettings("x", 2, 2.0, 0.2), WriterMetrics())


def queued_behind_the_throttle(apiserver: ApiServerEmulator, count: int) -> None:
    """Invalid stores, each a status write and an Event: at --qps 2 every worker waits its turn
    for a token, its leadership checked long before the write can go."""
    for i in range(count):
        apiserver.create(NS, fs(f"s{i:02d}", INVALID))


THROTTLED = {"qps": 2.0, "burst": 1, "workers": 4}


def test_a_leader_whose_lease_lapses_sends_none_of_the_writes_waiting_for_a_token(
    apiserver: ApiServerEmulator,
) -> None:
    queued_behind_the_throttle(apiserver, 40)
    with running_writer(apiserver, **THROTTLED) as writer:
        apiserver.eventually(lambda: len(status_writes(apiserver)) >= 2, timeout=20)
        apiserver.faults.fail_next(10_000, 500, path_contains="/leases/")
        apiserver.eventually(lambda: not writer.is_leader(), timeout=10, interval=0.005)
        lapsed = time.monotonic()
        time.sleep(3.0)  # every worker's token came due meanwhile
        late = [w for w in apiserver.writes() if "/leases" not in w.path and w.received > lapsed]
        sent = [(w.method, w.path) for w in late]
        assert len(late) <= 1, f"writes after the lapse (one may be in flight): {sent}"
        assert sample(writer, "feedbackstore_status_writes_fenced_total") >= 1


def test_a_leader_stopped_with_work_queued_hands_over_at_once(
    apiserver: ApiServerEmulator,
) -> None:
    """No key handed out after the stop, the write in flight awaited (one write timeout at most),
    the Lease released: the standby leads at its next retry, not when the Lease runs out."""
    queued_behind_the_throttle(apiserver, 60)
    slow_expiry = {"lease_duration": 6, "renew_deadline": 4.0, **THROTTLED}
    with running_writer(apiserver, identity="first", **slow_expiry) as first:
        apiserver.eventually(first.is_leader)
        with running_writer(apiserver, identity="second", **slow_expiry) as second:
            apiserver.eventually(second.ready)
            apiserver.eventually(lambda: writes_by(first) >= 2, timeout=20)
            before = writes_by(first)
            began = time.monotonic()
            first.stop()
            stopping = time.monotonic() - began
            apiserver.eventually(second.is_leader, timeout=10, interval=0.01)
            takeover = time.monotonic() - began
            assert writes_by(first) - before <= 1  # the one in flight, if any
            assert stopping < first.fence.timeout + 1.0
            assert takeover < 2.0
            assert lease_spec(apiserver)["holderIdentity"] == "second"
