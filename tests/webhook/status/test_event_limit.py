"""Each verdict change is an Event of its own, and a per-object limit stops a flapping store."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tests.support.emulator import ApiServerEmulator
from tests.support.status_writer import INVALID, NS, VALID, converged, fs, running_writer
from webhook.status.events import EventLimit, EventRecorder, Transition
from webhook.status.writer_metrics import WriterMetrics

TURNED_INVALID = Transition("Warning", "InvalidSpec")
T0 = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def store(name: str, uid: str = "u-1") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": NS, "uid": uid}}


def test_an_object_past_its_burst_waits_for_the_bucket_to_refill() -> None:
    clock = Clock()
    limit = EventLimit(burst=3, refill_seconds=60.0, clock=clock)
    assert [limit.allow(store("flappy")) for _ in range(4)] == [True, True, True, False]
    clock.now = 59.0
    assert not limit.allow(store("flappy"))
    clock.now = 60.0
    assert limit.allow(store("flappy"))
    assert not limit.allow(store("flappy"))


def test_every_object_has_its_own_budget() -> None:
    limit = EventLimit(burst=1, refill_seconds=60.0, clock=Clock())
    assert limit.allow(store("a"))
    assert not limit.allow(store("a"))
    assert limit.allow(store("b"))
    assert limit.allow(store("a", uid="u-2")), "a store recreated under the same name is new"


def test_the_least_recently_used_budget_is_dropped_past_max_objects() -> None:
    limit = EventLimit(burst=1, refill_seconds=60.0, max_objects=2, clock=Clock())
    assert limit.allow(store("a"))
    assert limit.allow(store("b"))
    assert limit.allow(store("c"))  # "a" forgotten
    assert not limit.allow(store("c"))
    assert limit.allow(store("a")), "a forgotten budget starts full again"


def test_a_store_flipping_in_a_loop_gets_no_more_events_than_its_burst(
    apiserver: ApiServerEmulator,
) -> None:
    obj = apiserver.create(NS, fs("flappy", INVALID))
    metrics = WriterMetrics()
    limit = EventLimit(burst=2, refill_seconds=300.0)
    recorder = EventRecorder(apiserver.api_client(), "writer-1", metrics, limit)
    for _ in range(5):
        recorder.emit(obj, TURNED_INVALID, "spec is invalid: x", T0)
    assert len(apiserver.events(NS)) == 2
    sample = metrics.registry.get_sample_value
    labels = {"reason": "InvalidSpec"}
    assert sample("feedbackstore_status_events_total", {**labels, "result": "ok"}) == 2
    assert sample("feedbackstore_status_events_total", {**labels, "result": "dropped"}) == 3


def test_each_change_of_a_flipping_store_is_its_own_event(apiserver: ApiServerEmulator) -> None:
    apiserver.create(NS, fs("flappy", INVALID))
    with running_writer(apiserver):
        converged(apiserver)
        for spec in (VALID, INVALID, VALID, INVALID):
            apiserver.update(NS, "flappy", lambda o, s=spec: o.update(spec=s))
            converged(apiserver)
        apiserver.eventually(lambda: len(apiserver.events(NS)) == 5)
    reasons = sorted((e["type"], e["reason"], e["count"]) for e in apiserver.events(NS))
    assert reasons == [("Normal", "SpecCoherent", 1)] * 2 + [("Warning", "InvalidSpec", 1)] * 3
