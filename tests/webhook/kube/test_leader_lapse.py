"""A leader whose renewals lapsed (a paused process, a hung request) leads afresh when it renews.

Found against the real kube-apiserver (tests/kube/test_status_writer_real.py pauses the
writer with SIGSTOP): past the renew deadline `is_leader()` is False, so every object
reconciled meanwhile is skipped as by a standby and dropped. If the next renewal simply
succeeded, nothing would queue those objects again until the periodic resync (300 s by
default). Driven here round by round on a fake clock and an in-memory Lease.
"""

from __future__ import annotations

from typing import Any

from kubernetes.client.exceptions import ApiException

from webhook.kube.leader import LeaderElector
from webhook.kube.settings import ElectionSettings
from webhook.status.writer_metrics import WriterMetrics

RETRY = 0.25
DEADLINE = 2.0


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class MemoryLease:
    """The three calls `LeaseApi` offers, on one in-memory Lease; a request may take time."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.lease: dict[str, Any] | None = None
        self.request_seconds = 0.0
        self.calls: list[str] = []

    def get(self) -> dict[str, Any] | None:
        self.clock.now += self.request_seconds
        self.calls.append("get")
        return self.lease

    def create(self, spec: dict[str, Any]) -> dict[str, Any]:
        self.clock.now += self.request_seconds
        self.lease = {"metadata": {"resourceVersion": "1"}, "spec": spec}
        return self.lease

    def replace(self, resource_version: str, spec: dict[str, Any]) -> dict[str, Any]:
        self.clock.now += self.request_seconds
        self.calls.append("replace")
        assert self.lease is not None
        if resource_version != self.lease["metadata"]["resourceVersion"]:
            raise ApiException(status=409, reason="Conflict")
        self.lease = {"metadata": {"resourceVersion": str(int(resource_version) + 1)}, "spec": spec}
        return self.lease


def elector(clock: Clock, api: MemoryLease, starts: list[float]) -> LeaderElector:
    return LeaderElector(
        api,  # type: ignore[arg-type]  # the same three methods as LeaseApi
        ElectionSettings("me_1", lease_duration=3, renew_deadline=DEADLINE, retry_period=RETRY),
        WriterMetrics(),
        on_started_leading=lambda: starts.append(clock.now),
        clock=clock,
    )


def transitions(candidate: LeaderElector, to: str) -> float:
    value = candidate._metrics.registry.get_sample_value(
        "feedbackstore_status_leader_transitions_total", {"to": to}
    )
    return value or 0.0


def test_a_renewal_after_a_pause_longer_than_the_deadline_starts_leading_again() -> None:
    clock, starts = Clock(), []
    api = MemoryLease(clock)
    candidate = elector(clock, api, starts)
    candidate.step()
    assert candidate.is_leader()
    clock.now += RETRY
    candidate.step()
    assert starts == [100.0]  # renewing is not starting again

    clock.now += 10.0  # the process was paused; nobody else took the Lease
    assert not candidate.is_leader()  # objects reconciled now are skipped
    candidate.step()
    assert candidate.is_leader()
    assert starts == [100.0, clock.now]  # the resync that re-queues what was skipped
    assert transitions(candidate, "standby") == 1
    assert transitions(candidate, "leader") == 2


def test_a_renewal_whose_request_outlasted_the_deadline_is_not_led_on() -> None:
    clock, starts = Clock(), []
    api = MemoryLease(clock)
    candidate = elector(clock, api, starts)
    candidate.step()
    api.request_seconds = DEADLINE + 1.0  # the next renewal hangs, then succeeds
    clock.now += RETRY
    candidate.step()
    assert not candidate.is_leader()
    assert transitions(candidate, "standby") == 1
    assert starts == [100.0]  # no resync while it cannot write

    api.request_seconds = 0.0
    clock.now += RETRY
    candidate.step()
    assert candidate.is_leader()
    assert starts == [100.0, clock.now]


def test_steady_renewals_keep_one_leadership() -> None:
    clock, starts = Clock(), []
    candidate = elector(clock, MemoryLease(clock), starts)
    for _ in range(20):
        candidate.step()
        assert candidate.is_leader()
        clock.now += RETRY
    assert starts == [100.0]
    assert transitions(candidate, "standby") == 0


def test_a_leader_renews_with_one_update_and_no_read() -> None:
    """client-go's fast path: the Lease a leader last wrote is the one it updates."""
    clock, starts = Clock(), []
    api = MemoryLease(clock)
    candidate = elector(clock, api, starts)
    candidate.step()  # acquire: read (none there), then create
    api.calls.clear()
    for _ in range(5):
        clock.now += RETRY
        candidate.step()
    assert api.calls == ["replace"] * 5
    assert candidate.is_leader()


def test_a_stale_optimistic_renewal_falls_back_to_reading_the_lease() -> None:
    clock, starts = Clock(), []
    api = MemoryLease(clock)
    candidate = elector(clock, api, starts)
    candidate.step()
    assert api.lease is not None
    api.lease = {**api.lease, "metadata": {"resourceVersion": "7"}}  # written by someone else
    api.calls.clear()
    clock.now += RETRY
    candidate.step()
    assert api.calls == ["replace", "get", "replace"]  # 409, then the slow path
    assert candidate.is_leader()
    assert starts == [100.0]


def test_a_resigned_leader_leads_no_more_even_if_a_renewal_in_flight_succeeds() -> None:
    """Shutdown: `is_leader` turns False at once (the fence shuts), and a renewal that was in
    flight and comes back afterwards does not make it lead again."""
    clock, starts = Clock(), []
    api = MemoryLease(clock)
    candidate = elector(clock, api, starts)
    candidate.step()
    assert candidate.is_leader()
    candidate.resign()
    assert not candidate.is_leader()
    candidate.step()  # the elector thread's renewal, already under way
    assert not candidate.is_leader()
    assert len(starts) == 1
    assert transitions(candidate, "standby") == 1


# One Lease request takes more than half the deadline: a round of one update fits in it, a round
# of a read and an update does not.
SLOW_REQUEST = 0.6 * DEADLINE


def test_a_lapsed_leader_leads_again_though_its_read_and_update_outlast_the_deadline() -> None:
    """The renewal the Lease stands on is the update that stamped it: another candidate counts
    its expiry from when it sees that update, never from the read before it. Counted from the
    read, a lapsed leader (its next round a read and an update) never led again on a server
    this slow: it held the Lease and renewed it every round, kept every standby out, and wrote
    nothing."""
    clock, starts = Clock(), []
    api = MemoryLease(clock)
    candidate = elector(clock, api, starts)
    candidate.step()
    clock.now += 10.0  # one renewal very late (a paused process, a request that hung)
    assert not candidate.is_leader()
    api.request_seconds = SLOW_REQUEST
    for _ in range(5):
        candidate.step()
        assert api.lease is not None
        assert api.lease["spec"]["holderIdentity"] == "me_1"
        assert candidate.is_leader()
        clock.now += RETRY
    assert starts[0] == 100.0
    assert starts[1] > 110.0  # leading afresh, with its resync


def test_a_first_acquisition_whose_read_and_create_outlast_the_deadline_leads() -> None:
    """A writer starting against such a server: a read (no Lease yet), then the create."""
    clock, starts = Clock(), []
    api = MemoryLease(clock)
    api.request_seconds = SLOW_REQUEST
    candidate = elector(clock, api, starts)
    candidate.step()
    assert candidate.is_leader()
    assert len(starts) == 1
