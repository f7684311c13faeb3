"""After a large review the server hands its freed heap back, once, and never for ordinary ones.

`webhook.server.memory.Trimmer` calls malloc_trim shortly after a body of
TRIM_AFTER_BYTES or more (bench/admission/trim_ab.py measures what that
gives back); these tests hold when it trims, with the trim counted instead of
run, on a clock the test moves (a stall of the machine cannot reorder them).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from webhook.admission.decode import MAX_JSON_VALUES
from webhook.server.memory import TRIM_AFTER_BYTES, Trimmer

# How long after the last large review the trim runs.
DELAY_SECONDS = 0.5


class ClockLoop(asyncio.SelectorEventLoop):
    """An event loop on a clock the test moves: a timer is due when the test says its time has
    come, however late a loaded machine runs the loop."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0

    def time(self) -> float:
        return self.now

    def at(self, seconds: float) -> None:
        """Moves the clock to `seconds` and runs what is due by then."""
        self.now = seconds
        self.run_until_complete(asyncio.sleep(0))

    def review(self, trimmer: Trimmer, body_bytes: int) -> None:
        """`trimmer.after`, called from within the loop as the server calls it."""

        async def answered() -> None:
            trimmer.after(body_bytes)

        self.run_until_complete(answered())


@pytest.fixture
def loop() -> Iterator[ClockLoop]:
    clock_loop = ClockLoop()
    try:
        yield clock_loop
    finally:
        clock_loop.close()


class Counted:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1


@pytest.mark.parametrize(
    ("bodies", "trims"),
    [
        pytest.param([TRIM_AFTER_BYTES], 1, id="one large review is followed by one trim"),
        pytest.param([TRIM_AFTER_BYTES - 1], 0, id="a review just under the size is not"),
        pytest.param([30_000] * 50, 0, id="ordinary reviews, however many, never trim"),
        pytest.param([TRIM_AFTER_BYTES * 4] * 5, 1, id="large reviews back to back share one trim"),
    ],
)
def test_a_trim_follows_large_reviews_only(loop: ClockLoop, bodies: list[int], trims: int) -> None:
    trim = Counted()
    trimmer = Trimmer(trim)
    for size in bodies:
        loop.review(trimmer, size)
    loop.at(DELAY_SECONDS - 0.001)
    assert trim.calls == 0, "the trim waits until the answer is sent"
    loop.at(DELAY_SECONDS)
    assert trim.calls == trims
    loop.at(DELAY_SECONDS * 10)
    assert trim.calls == trims


def test_a_large_review_after_a_trim_gets_its_own(loop: ClockLoop) -> None:
    trim = Counted()
    trimmer = Trimmer(trim)
    loop.review(trimmer, TRIM_AFTER_BYTES)
    loop.at(DELAY_SECONDS)
    assert trim.calls == 1
    loop.review(trimmer, TRIM_AFTER_BYTES)
    loop.at(DELAY_SECONDS * 2)
    assert trim.calls == 2


def test_a_large_review_while_a_trim_is_pending_moves_it_to_after_itself(loop: ClockLoop) -> None:
    trim = Counted()
    trimmer = Trimmer(trim)
    loop.review(trimmer, TRIM_AFTER_BYTES)
    loop.at(DELAY_SECONDS * 0.8)
    loop.review(trimmer, TRIM_AFTER_BYTES)
    loop.at(DELAY_SECONDS * 1.5)
    assert trim.calls == 0, "not while the second review's objects may still be alive"
    loop.at(DELAY_SECONDS * 1.8)
    assert trim.calls == 1


def test_the_densest_flood_the_bound_on_values_lets_through_is_trimmed_after() -> None:
    # `[{},{},...]`: two values per three bytes, the fewest bytes for the most decoded
    # objects; the bound on values admits it, so it must be large enough to trim after.
    flood = b"[" + b"{}," * (MAX_JSON_VALUES // 2 - 1) + b"{}]"
    assert len(flood) >= TRIM_AFTER_BYTES
