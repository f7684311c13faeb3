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
    # A 5 s lease: without the release on stop, the standby would wait about 5 s.
    slow_expiry = {"lease_duration": 5, "renew_deadline": 4.0}
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
    assert takeover < 2.5  # released: no need to wait out the 5 s lease
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
