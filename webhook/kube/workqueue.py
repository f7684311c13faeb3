"""A deduplicating work queue of keys with per-key jittered backoff (client-go's workqueue).

Keys, not objects: a worker reconciles the latest cached object, so ten events cost one reconcile.
A key is never handed to two workers at once; one re-added meanwhile runs again after.
"""

from __future__ import annotations

import heapq
import itertools
import random
import threading
import time
from collections import defaultdict, deque
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from webhook.kube.settings import RETRY_CAP, RETRY_INITIAL

K = TypeVar("K", bound=Hashable)


def backoff_delay(attempt: int, initial: float, cap: float, draw: float) -> float:
    """`d` = initial doubled per attempt up to `cap`, "equal jitter" within [d/2, d].

    Jitter keeps many retries from hammering a recovering server in lockstep; `draw` is in [0, 1).
    """
    ceiling = min(cap, initial * (2.0 ** min(max(attempt, 0), 62)))
    return ceiling * (0.5 + 0.5 * draw)


@dataclass(slots=True)
class Backoff:
    """Failures in a row so far; no defaults of its own (each owner's settings state them)."""

    initial: float
    cap: float
    rng: random.Random = field(default_factory=random.Random)
    attempt: int = 0

    def next_delay(self) -> float:
        delay = backoff_delay(self.attempt, self.initial, self.cap, self.rng.random())
        self.attempt += 1
        return delay

    def reset(self) -> None:
        self.attempt = 0


class WorkQueue(Generic[K]):
    def __init__(
        self,
        retry_initial: float = RETRY_INITIAL,
        retry_cap: float = RETRY_CAP,
        rng: random.Random | None = None,
    ) -> None:
        self._cond = threading.Condition()
        self._queue: deque[K] = deque()
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._delayed: list[tuple[float, int, K]] = []
        self._sequence = itertools.count()
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not secrets
        self._failures: defaultdict[K, Backoff] = defaultdict(
            lambda: Backoff(retry_initial, retry_cap, self._rng)
        )
        self._shut = False

    def add(self, key: K) -> None:
        with self._cond:
            self._add_locked(key)

    def add_after(self, key: K, delay: float) -> None:
        with self._cond:
            if delay <= 0:
                self._add_locked(key)
                return
            due = time.monotonic() + delay
            heapq.heappush(self._delayed, (due, next(self._sequence), key))
            self._cond.notify()

    def add_rate_limited(self, key: K, at_least: float = 0.0) -> float:
        """Queue `key` after its own backoff (it failed again); returns the delay chosen."""
        with self._cond:
            delay = max(at_least, self._failures[key].next_delay())
        self.add_after(key, delay)
        return delay

    def forget(self, key: K) -> None:
        """`key` succeeded: its next failure starts from the shortest backoff."""
        with self._cond:
            self._failures.pop(key, None)

    def get(self, timeout: float | None = None) -> K | None:
        """The next key to process, or None once shut down or when `timeout` passes."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while not self._shut:
                self._promote_due_locked()
                if self._queue:
                    key = self._queue.popleft()
                    self._processing.add(key)
                    self._dirty.discard(key)
                    return key
                if deadline is not None and time.monotonic() >= deadline:
                    return None
                self._cond.wait(self._wait_locked(deadline))
            return None

    def done(self, key: K) -> None:
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty:
                self._queue.append(key)
                self._cond.notify()

    def shutdown(self) -> None:
        """Hand out no key any more, even those queued (unlike client-go's, which drains): the
        owner is stopping, and whoever takes over queues every object again."""
        with self._cond:
            self._shut = True
            self._cond.notify_all()

    def _add_locked(self, key: K) -> None:
        if self._shut or key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._processing:
            self._queue.append(key)
            self._cond.notify()

    def _promote_due_locked(self) -> None:
        now = time.monotonic()
        while self._delayed and self._delayed[0][0] <= now:
            self._add_locked(heapq.heappop(self._delayed)[2])

    def _wait_locked(self, deadline: float | None) -> float | None:
        """Until the next delayed key or the deadline, whichever is first."""
        due = [self._delayed[0][0]] if self._delayed else []
        if deadline is not None:
            due.append(deadline)
        return max(min(due) - time.monotonic(), 0.0) if due else None
