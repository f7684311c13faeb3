"""Event correlation as client-go's `tools/record` does it: keys, patch, aggregation, spam filter.

Pure: a fake monotonic clock, Event bodies as `events.event_body` builds them; the server's
answer is simulated by `update_state`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.emulator import ApiServerEmulator, fixtures, resources
from tests.status_support import INVALID, NS, VALID, converged, fs, running_writer
from webhook.status.correlation import (
    AGGREGATE_INTERVAL_SECONDS,
    COMBINED_PREFIX,
    SPAM_BURST,
    EventCorrelator,
    LruCache,
    aggregate_key,
    event_key,
    spam_key,
)
from webhook.status.events import NORMAL, WARNING, EventRecorder, Transition, event_body
from webhook.status.metrics import WriterMetrics

TURNED_INVALID = Transition(WARNING, "InvalidSpec")
FIXED = Transition(NORMAL, "SpecCoherent")
T0 = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def store(name: str = "s", uid: str = "u-1", rv: str = "7") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": uid, "resourceVersion": rv}}


def body(
    obj: dict[str, Any] | None = None,
    change: Transition = TURNED_INVALID,
    message: str = "spec is invalid: x",
    instance: str = "writer-1",
) -> dict[str, Any]:
    return event_body(obj or store(), change, message, instance, T0)


class Clock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


def served(event: dict[str, Any], rv: str = "900") -> dict[str, Any]:
    """What kube-apiserver answers: the Event with a resourceVersion and string times."""
    answer = {**event, "metadata": {**event["metadata"], "resourceVersion": rv}}
    for field in ("firstTimestamp", "lastTimestamp"):
        if isinstance(answer.get(field), datetime):
            answer[field] = answer[field].strftime("%Y-%m-%dT%H:%M:%SZ")
    return answer


# -- keys ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("other", "same_event", "similar", "same_budget"),
    [
        pytest.param(body(), True, True, True, id="the same Event again: one key for all three"),
        pytest.param(body(store(rv="8")), True, True, True,
                     id="a newer resourceVersion of the object is the same Event"),
        pytest.param(body(message="spec is invalid: y"), False, True, True,
                     id="another message is another Event, but similar"),
        pytest.param(body(change=Transition(WARNING, "Other")), False, False, True,
                     id="another reason is neither the same nor similar"),
        pytest.param(body(change=FIXED, message="spec is invalid: x"), False, False, False,
                     id="another type has its own spam budget"),
        pytest.param(body(store(uid="u-2")), False, False, False,
                     id="a recreated object (new uid) starts afresh"),
        pytest.param(body(store(name="t")), False, False, False, id="another object"),
        pytest.param(body(instance="writer-2"), True, False, True,
                     id="another replica: same Event, but aggregated apart (reportingInstance)"),
    ],
)  # fmt: skip
def test_keys_are_client_gos(
    other: dict[str, Any], same_event: bool, similar: bool, same_budget: bool
) -> None:
    first = body()
    assert (event_key(first) == event_key(other)) is same_event
    assert (aggregate_key(first)[0] == aggregate_key(other)[0]) is similar
    assert (spam_key(first) == spam_key(other)) is same_budget


# -- observe: the same Event again is a patch --------------------------------------------


def test_a_repeated_event_patches_the_first_with_a_growing_count() -> None:
    correlator = EventCorrelator(Clock())
    first = correlator.correlate(body(), T0)
    assert first.patch is None
    assert first.event["count"] == 1
    correlator.update_state(first.key, served(first.event, "900"))

    later = T0 + timedelta(minutes=3)
    second = correlator.correlate(body(), later)
    assert second.patch == {
        "count": 2,
        "lastTimestamp": "2026-11-30T12:03:00Z",
        "message": "spec is invalid: x",
    }
    assert second.event["metadata"]["name"] == first.event["metadata"]["name"]
    assert second.event["metadata"]["resourceVersion"] == "900"
    assert second.event["firstTimestamp"] == "2026-11-30T12:00:00Z", "kept from the first"
    correlator.update_state(second.key, {**served(second.event, "901"), "count": 2})

    third = correlator.correlate(body(), later)
    assert third.patch is not None
    assert third.patch["count"] == 3
    assert third.event["metadata"]["resourceVersion"] == "901"


def test_a_different_message_is_a_new_event() -> None:
    correlator = EventCorrelator(Clock())
    first = correlator.correlate(body(), T0)
    correlator.update_state(first.key, served(first.event))
    other = correlator.correlate(body(message="spec is invalid: y"), T0)
    assert other.patch is None
    assert other.key != first.key


def test_the_count_moves_on_even_before_the_server_answered() -> None:
    correlator = EventCorrelator(Clock())
    correlator.correlate(body(), T0)
    assert correlator.correlate(body(), T0).event["count"] == 2


# -- aggregate: ten different messages of one reason -------------------------------------


def test_the_tenth_different_message_within_ten_minutes_is_combined() -> None:
    correlator = EventCorrelator(Clock())
    results = [correlator.correlate(body(message=f"m{i}"), T0) for i in range(12)]
    assert [r.event["message"] for r in results[:9]] == [f"m{i}" for i in range(9)]
    combined = results[9]
    assert combined.event["message"] == COMBINED_PREFIX + "m9"
    assert combined.patch is None, "the combined Event is created once"
    assert combined.key == aggregate_key(body())[0]
    correlator.update_state(combined.key, served(combined.event))
    assert results[10].event["message"] == COMBINED_PREFIX + "m10"
    assert results[10].patch is not None
    assert results[10].patch["count"] == 2
    assert results[11].patch is not None
    assert results[11].patch["message"] == COMBINED_PREFIX + "m11"


def test_similar_events_further_apart_than_ten_minutes_are_never_combined() -> None:
    clock = Clock()
    correlator = EventCorrelator(clock)
    for i in range(20):
        clock.now += AGGREGATE_INTERVAL_SECONDS + 1
        result = correlator.correlate(body(message=f"m{i}"), T0)
        assert result.event["message"] == f"m{i}"


# -- spam filter ---------------------------------------------------------------------------


def test_more_than_25_events_on_one_object_are_dropped_until_the_bucket_refills() -> None:
    clock = Clock()
    correlator = EventCorrelator(clock)
    sent = [not correlator.correlate(body(), T0).skip for _ in range(SPAM_BURST + 5)]
    assert sent == [True] * SPAM_BURST + [False] * 5
    assert not correlator.correlate(body(store(name="other")), T0).skip, "per object"
    clock.now += 299.0
    assert correlator.correlate(body(), T0).skip
    clock.now += 1.0
    kept = correlator.correlate(body(), T0)
    assert not kept.skip, "one more per five minutes"
    assert kept.event["count"] == SPAM_BURST + 5 + 2, "dropped ones still counted"


# -- LRU -----------------------------------------------------------------------------------


def test_the_lru_cache_evicts_the_least_recently_used() -> None:
    cache: LruCache[int] = LruCache(2)
    cache.add("a", 1)
    cache.add("b", 2)
    assert cache.get("a") == 1
    cache.add("c", 3)
    assert cache.get("b") is None
    assert (cache.get("a"), cache.get("c"), len(cache)) == (1, 3, 2)


# -- against the emulator: the recorder's requests -----------------------------------------

apiserver = fixtures.apiserver  # a started emulator per test


def event_requests(emu: ApiServerEmulator) -> list[tuple[str, str | None]]:
    return [(r.method, r.content_type) for r in emu.requests if "/events" in r.path]


def test_the_recorder_creates_once_then_patches_count_and_last_timestamp(
    apiserver: ApiServerEmulator,
) -> None:
    obj = apiserver.create(NS, fs("flappy", INVALID))
    recorder = EventRecorder(apiserver.api_client(), "writer-1", WriterMetrics())
    for minute in range(3):
        recorder.emit(obj, TURNED_INVALID, "spec is invalid: x", T0 + timedelta(minutes=minute))
    (event,) = apiserver.events(NS)
    assert event["count"] == 3
    assert event["firstTimestamp"] == "2026-11-30T12:00:00Z"
    assert event["lastTimestamp"] == "2026-11-30T12:02:00Z"
    assert event_requests(apiserver) == [
        ("POST", None),
        ("PATCH", "application/strategic-merge-patch+json"),
        ("PATCH", "application/strategic-merge-patch+json"),
    ]


def test_a_patch_that_finds_the_event_gone_creates_it_again_with_its_count(
    apiserver: ApiServerEmulator,
) -> None:
    obj = apiserver.create(NS, fs("flappy", INVALID))
    metrics = WriterMetrics()
    recorder = EventRecorder(apiserver.api_client(), "writer-1", metrics)
    recorder.emit(obj, TURNED_INVALID, "spec is invalid: x", T0)
    (first,) = apiserver.events(NS)
    apiserver.delete(NS, first["metadata"]["name"], resource=resources.CORE_EVENTS)  # its TTL
    recorder.emit(obj, TURNED_INVALID, "spec is invalid: x", T0 + timedelta(hours=2))
    (again,) = apiserver.events(NS)
    assert again["count"] == 2
    assert again["metadata"]["name"] == first["metadata"]["name"]
    assert [method for method, _ in event_requests(apiserver)] == ["POST", "PATCH", "POST"]
    assert (
        metrics.registry.get_sample_value(
            "feedbackstore_status_events_total", {"reason": "InvalidSpec", "result": "ok"}
        )
        == 2
    )


def test_a_store_broken_again_the_same_way_bumps_its_first_warning(
    apiserver: ApiServerEmulator,
) -> None:
    apiserver.create(NS, fs("flappy", INVALID))
    with running_writer(apiserver):
        converged(apiserver)
        for spec in (VALID, INVALID, VALID, INVALID):
            apiserver.update(NS, "flappy", lambda o, s=spec: o.update(spec=s))
            converged(apiserver)
        apiserver.eventually(lambda: sum(e["count"] for e in apiserver.events(NS)) == 5)
    counts = {(e["type"], e["reason"]): e["count"] for e in apiserver.events(NS)}
    assert counts == {("Warning", "InvalidSpec"): 3, ("Normal", "SpecCoherent"): 2}
