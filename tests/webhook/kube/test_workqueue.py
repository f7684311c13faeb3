"""Capped, jittered backoff and the deduplicating work queue the writer's workers share."""

from __future__ import annotations

import random
import threading
import time

import pytest

from webhook.kube.workqueue import Backoff, WorkQueue, backoff_delay


@pytest.mark.parametrize(
    ("attempt", "draw", "expected"),
    [
        (0, 0.0, 0.4),
        (0, 0.999999, 0.8),
        (1, 0.0, 0.8),
        (3, 0.5, 4.8),
        (6, 0.0, 15.0),
        (6, 0.999999, 30.0),
        (10_000, 0.0, 15.0),
        (-3, 0.0, 0.4),
    ],
    ids=[
        "the first retry waits at least half the initial delay",
        "and at most the initial delay",
        "each attempt doubles the delay",
        "jitter lands between half and all of the doubled delay",
        "the cap bounds the delay from below by half of it",
        "and from above by the cap itself",
        "a huge attempt count neither overflows nor exceeds the cap",
        "a negative attempt counts as the first",
    ],
)
def test_backoff_delay_doubles_with_jitter_up_to_the_cap(
    attempt: int, draw: float, expected: float
) -> None:
    assert backoff_delay(attempt, 0.8, 30.0, draw) == pytest.approx(expected, rel=1e-5)


def test_backoff_grows_then_resets() -> None:
    backoff = Backoff(initial=1.0, cap=8.0, rng=random.Random(7))
    delays = [backoff.next_delay() for _ in range(6)]
    ceilings = [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    assert all(c / 2 <= d <= c for d, c in zip(delays, ceilings, strict=True))
    backoff.reset()
    assert backoff.next_delay() <= 1.0


def test_a_key_added_many_times_is_processed_once() -> None:
    queue: WorkQueue[str] = WorkQueue()
    for _ in range(5):
        queue.add("a")
    queue.add("b")
    assert [queue.get(0.1), queue.get(0.1), queue.get(0.05)] == ["a", "b", None]


def test_a_key_re_added_while_processing_runs_again_after_done_not_concurrently() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    assert queue.get(0.1) == "a"
    queue.add("a")
    assert queue.get(0.05) is None  # not handed to a second worker meanwhile
    queue.done("a")
    assert queue.get(0.1) == "a"


def test_add_after_waits_then_delivers() -> None:
    queue: WorkQueue[str] = WorkQueue()
    started = time.monotonic()
    queue.add_after("late", 0.2)
    queue.add("now")
    assert queue.get(1.0) == "now"
    assert queue.get(2.0) == "late"
    assert time.monotonic() - started >= 0.19


def test_rate_limited_adds_back_off_per_key_and_forget_resets() -> None:
    queue: WorkQueue[str] = WorkQueue(retry_initial=1.0, retry_cap=100.0, rng=random.Random(1))
    delays = [queue.add_rate_limited("k") for _ in range(4)]
    assert all(c / 2 <= d <= c for d, c in zip(delays, [1, 2, 4, 8], strict=True))
    queue.forget("k")
    assert queue.add_rate_limited("k") <= 1.0
    assert queue.add_rate_limited("other", at_least=5.0) >= 5.0


def test_shutdown_wakes_a_waiting_worker() -> None:
    queue: WorkQueue[str] = WorkQueue()
    got: list[str | None] = []
    worker = threading.Thread(target=lambda: got.append(queue.get()))
    worker.start()
    time.sleep(0.05)
    queue.shutdown()
    worker.join(5)
    assert got == [None]
    queue.add("ignored after shutdown")
    assert queue.get(0.01) is None


def test_shutdown_stops_handing_out_keys_still_queued() -> None:
    queue: WorkQueue[str] = WorkQueue()
    for key in ("a", "b", "c"):
        queue.add(key)
    assert queue.get(0.01) == "a"
    queue.shutdown()
    assert queue.get(0.01) is None
    queue.done("a")
    assert queue.get(0.01) is None
