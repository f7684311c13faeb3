"""Memory given back to the system after a large review.

A large review is decoded into tens of MiB of Python objects. When they are
freed, glibc keeps the pages of its heap for reuse, so the pod's resident
memory would stay at the peak of its largest review. `malloc_trim(0)` returns
the free pages; it costs a few milliseconds, so it runs once, shortly after a
large review is answered, not after every review. Kept because it was shown
to matter: trimming vs not, two servers in one run (bench/admission/trim_ab.py),
after bursts of hostile reviews RSS settles about a quarter lower with it.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
from collections.abc import Callable
from typing import Final

# A body at least this large is followed by a trim. Not 1 MiB: within the bound on JSON
# values the densest floods (`[{},{},...]`) are 400-500 KiB and decode to ~15 MiB, which
# stayed resident untrimmed; ordinary reviews (a maximal store: tens of KiB) never trim.
TRIM_AFTER_BYTES: Final = 256 * 1024
# Long enough for the answer to be sent and the review's objects freed.
_DELAY_SECONDS: Final = 0.5


def _malloc_trim() -> Callable[[], None] | None:
    """glibc's malloc_trim(0), or None where the C library has none (musl)."""
    try:
        trim = ctypes.CDLL(ctypes.util.find_library("c") or None).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    return lambda: trim(0)


class Trimmer:
    """Trims once, shortly after the last of one or more large reviews.

    Each large review moves the pending trim to after itself: a trim due while the
    next large review is already read would leave that one's objects resident.
    """

    def __init__(self, trim: Callable[[], None] | None = None) -> None:
        self._trim = trim or _malloc_trim()
        self._pending: asyncio.TimerHandle | None = None

    def after(self, body_bytes: int) -> None:
        if body_bytes < TRIM_AFTER_BYTES or self._trim is None:
            return
        if self._pending is not None:
            self._pending.cancel()
        self._pending = asyncio.get_running_loop().call_later(_DELAY_SECONDS, self._run)

    def _run(self) -> None:
        self._pending = None
        if self._trim is not None:
            self._trim()
