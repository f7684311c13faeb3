"""After a large review the server hands its freed heap back, once, and never for ordinary ones.

`webhook.server.memory.Trimmer` calls malloc_trim shortly after a body of
TRIM_AFTER_BYTES or more (bench/admission/trim_ab.py measures what that
gives back); these tests hold when it trims, with the trim counted instead of
run.
"""

from __future__ import annotations

import asyncio

import pytest

from webhook.admission.decode import MAX_JSON_VALUES
from webhook.server.memory import TRIM_AFTER_BYTES, Trimmer

# Longer than the trimmer's delay after a large review.
WAIT_SECONDS = 0.8


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
async def test_a_trim_follows_large_reviews_only(bodies: list[int], trims: int) -> None:
    trim = Counted()
    trimmer = Trimmer(trim)
    for size in bodies:
        trimmer.after(size)
    assert trim.calls == 0, "the trim waits until the answer is sent"
    await asyncio.sleep(WAIT_SECONDS)
    assert trim.calls == trims


async def test_a_large_review_after_a_trim_gets_its_own() -> None:
    trim = Counted()
    trimmer = Trimmer(trim)
    trimmer.after(TRIM_AFTER_BYTES)
    await asyncio.sleep(WAIT_SECONDS)
    trimmer.after(TRIM_AFTER_BYTES)
    await asyncio.sleep(WAIT_SECONDS)
    assert trim.calls == 2


async def test_a_large_review_while_a_trim_is_pending_moves_it_to_after_itself() -> None:
    trim = Counted()
    trimmer = Trimmer(trim)
    trimmer.after(TRIM_AFTER_BYTES)
    await asyncio.sleep(WAIT_SECONDS / 2)
    trimmer.after(TRIM_AFTER_BYTES)
    await asyncio.sleep(WAIT_SECONDS / 2)
    assert trim.calls == 0, "not while the second review's objects may still be alive"
    await asyncio.sleep(WAIT_SECONDS)
    assert trim.calls == 1


def test_the_densest_flood_the_bound_on_values_lets_through_is_trimmed_after() -> None:
    # `[{},{},...]`: two values per three bytes, the fewest bytes for the most decoded
    # objects; the bound on values admits it, so it must be large enough to trim after.
    flood = b"[" + b"{}," * (MAX_JSON_VALUES // 2 - 1) + b"{}]"
    assert len(flood) >= TRIM_AFTER_BYTES
