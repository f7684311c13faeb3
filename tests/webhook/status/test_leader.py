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
    RETRY_PERIOD,
    VALID,
    converged,
    fs,
    reconciles,
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


# A Lease that takes 10 s to run out, a renew deadline of 4 s (a write timeout of 3 s): a standby
# that leads within `lease_duration - 2 * retry_period` of the stop (its last look at the renewed
# Lease may be one retry old, and it then tries once per retry) took a released Lease, not one
# that ran out; the margin is what the stop, the release and one retry may take on a loaded
# machine, seconds where they take a fraction of one on an idle one.
SLOW_EXPIRY = {"lease_duration": 10, "renew_deadline": 4.0}


def before_it_could_run_out() -> float:
    return SLOW_EXPIRY["lease_duration"] - 2 * RETRY_PERIOD


def lease_reads_since(emu: ApiServerEmulator, since: float) -> int:
    """Reads of the Lease since `since`: a standby's tries (a leader renews with a PUT alone)."""
    reads = [r for r in emu.requests if r.method == "GET" and r.path.endswith(f"/leases/{LEASE}")]
    return sum(1 for r in reads if r.received > since)


def test_two_writers_one_lease_only_the_leader_writes_and_the_standby_takes_over(
    apiserver: ApiServerEmulator,
) -> None:
    for i in range(6):
        apiserver.create(NS, fs(f"s{i}", INVALID if i % 2 else VALID))
    with running_writer(apiserver, identity="first", **SLOW_EXPIRY) as first:
        apiserver.eventually(first.is_leader)
        converged(apiserver)
        with running_writer(apiserver, identity="second", **SLOW_EXPIRY) as second:
            apiserver.eventually(second.ready)
            apiserver.update(NS, "s0", lambda o: o.update(spec=INVALID))
            converged(apiserver)
            # Several renewal rounds: the standby tries for the Lease and stays a standby.
            tries_from = time.monotonic()
            apiserver.eventually(
                lambda: lease_reads_since(apiserver, tries_from) >= 3, message="3 tries"
            )
            assert first.is_leader()
            assert not second.is_leader()
            assert lease_spec(apiserver)["holderIdentity"] == "first"
            # The emulator holds the new status before the writer has read its response and
            # counted the write; that nothing more is written shows in the counts at the end.
            apiserver.eventually(lambda: writes_by(first) == 7)

            began = time.monotonic()
            first.stop()  # releases the Lease
            apiserver.eventually(second.is_leader)
            takeover = time.monotonic() - began
            apiserver.update(NS, "s1", lambda o: o.update(spec=VALID))
            apiserver.update(NS, "s2", lambda o: o.update(spec=INVALID))
            converged(apiserver)
            spec = lease_spec(apiserver)
            assert spec["holderIdentity"] == "second"
            assert spec["leaseTransitions"] == 0  # taken from a released Lease, not from "first"
    # Both stopped, every write ended: the counts are final.
    assert writes_by(first) == 7
    assert writes_by(second) == 2
    assert [r.status for r in status_writes(apiserver)] == [200] * 9
    assert takeover < before_it_could_run_out()


def test_a_leader_cut_off_from_its_lease_stops_writing_until_it_renews(
    apiserver: ApiServerEmulator,
) -> None:
    apiserver.create(NS, fs("store", INVALID))
    with running_writer(apiserver) as writer:
        apiserver.eventually(writer.is_leader)
        converged(apiserver)
        apiserver.faults.fail_next(10_000, 500, path_contains="/leases/")
        apiserver.eventually(lambda: not writer.is_leader(), timeout=30)
        apiserver.reset_requests()
        decided = reconciles(writer)
        apiserver.update(NS, "store", lambda o: o.update(spec=VALID))
        apiserver.eventually(lambda: reconciles(writer) > decided, message="the change reconciled")
        assert status_writes(apiserver) == []  # not the leader: writes nothing
        # The gauge follows at the elector's next step, one retry later.
        apiserver.eventually(lambda: sample(writer, "feedbackstore_status_leader") == 0)
        apiserver.faults.clear()
        apiserver.eventually(writer.is_leader, timeout=30)
        converged(apiserver)
        assert sample(writer, "feedbackstore_status_leader") == 1


def test_a_leader_that_lapsed_on_a_slow_server_leads_again_and_writes(
    apiserver: ApiServerEmulator,
) -> None:
    """Each Lease request answered after more than half the renew deadline: one renewal is late,
    the leader steps down, and from then on each round is a read and an update. Counted from
    before the read, no such round was ever led on: the writer held the Lease and renewed it
    round after round (no standby could take it) and wrote nothing, for as long as the server
    stayed that slow."""
    apiserver.create(NS, fs("store", INVALID))
    with running_writer(apiserver, **SLOW_EXPIRY) as writer:
        apiserver.eventually(writer.is_leader)
        converged(apiserver)
        slow = 0.6 * SLOW_EXPIRY["renew_deadline"]
        apiserver.faults.delay(slow, path_contains="/leases/")
        apiserver.faults.delay(2 * slow, path_contains="/leases/", count=1)  # the late one
        apiserver.eventually(lambda: not writer.is_leader(), timeout=30)
        apiserver.update(NS, "store", lambda o: o.update(spec=VALID))
        converged(apiserver, timeout=45)
        # Still its Lease. (Leading comes and goes now: each renewal is answered after the
        # deadline of the one before it has passed.)
        assert lease_spec(apiserver)["holderIdentity"] == writer.elector.identity


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
        apiserver.eventually(lambda: len(status_writes(apiserver)) >= 2, timeout=30)
        apiserver.faults.fail_next(10_000, 500, path_contains="/leases/")
        apiserver.eventually(lambda: not writer.is_leader(), timeout=30, interval=0.005)
        lapsed = time.monotonic()
        # Each worker holds one token at most, so every token taken before the lapse is due
        # `workers / qps` seconds after it; a worker woken late on a loaded machine meets the
        # fence all the same, and the first it meets shows here.
        time.sleep(THROTTLED["workers"] / THROTTLED["qps"] + 1.0)
        fenced = "feedbackstore_status_writes_fenced_total"
        apiserver.eventually(lambda: sample(writer, fenced) >= 1, timeout=30)
        late = [w for w in apiserver.writes() if "/leases" not in w.path and w.received > lapsed]
        sent = [(w.method, w.path) for w in late]
        assert len(late) <= 1, f"writes after the lapse (one may be in flight): {sent}"


def released_at(emu: ApiServerEmulator) -> float:
    """When the emulator received the release: the Lease written with no holder."""
    return next(
        r.received
        for r in emu.writes()
        if r.method == "PUT" and r.path.endswith(f"/leases/{LEASE}")
        if r.json()["spec"]["holderIdentity"] == ""
    )


def test_a_leader_stopped_with_work_queued_hands_over_at_once(
    apiserver: ApiServerEmulator,
) -> None:
    """No key handed out after the stop, the write in flight awaited (one write timeout at most),
    the Lease released: the standby leads at its next retry, not when the Lease runs out."""
    queued_behind_the_throttle(apiserver, 60)
    with running_writer(apiserver, identity="first", **SLOW_EXPIRY, **THROTTLED) as first:
        apiserver.eventually(first.is_leader)
        with running_writer(apiserver, identity="second", **SLOW_EXPIRY, **THROTTLED) as second:
            apiserver.eventually(second.ready)
            apiserver.eventually(lambda: writes_by(first) >= 2, timeout=30)
            began = time.monotonic()
            first.stop()
            stopping = time.monotonic() - began
            apiserver.eventually(second.is_leader, interval=0.01)
            takeover = time.monotonic() - began
            spec = lease_spec(apiserver)
    # The standby leads only once the Lease is released, and the leader writes nothing after:
    # every write between the stop and the release is the leader's.
    released = released_at(apiserver)
    sent = [w for w in apiserver.writes() if "/leases" not in w.path and began < w.received]
    by_first = [(w.method, w.path) for w in sent if w.received < released]
    assert len(by_first) <= 1, f"the one in flight, if any: {by_first}"
    # One write timeout for the writes in flight, then the release's read and write of the Lease,
    # each given up after the renew deadline.
    assert stopping < first.fence.timeout + 2 * SLOW_EXPIRY["renew_deadline"]
    assert takeover < before_it_could_run_out()
    assert spec["holderIdentity"] == "second"
    assert spec["leaseTransitions"] == 0  # taken from a released Lease
