"""A deduplicating work queue with delayed and rate-limited adds (client-go's workqueue).

Keys, not objects, are queued: a worker always reconciles the latest cached
object, so ten events for one object between two reconciles cost one
reconcile. A key is never handed to two workers at once; one re-added while it
is being processed runs again once the first run is done.
"""

from __future__ import annotations

import heapq
import itertools
import random
import threading
import time
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

from webhook.kube.backoff import Backoff
from webhook.kube.settings import RETRY_CAP, RETRY_INITIAL

K = TypeVar("K", bound=Hashable)


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
        # Per key: the failures in a row so far, as one `Backoff` each.
        self._failures: dict[K, Backoff] = {}
        self._retry_initial = retry_initial
        self._retry_cap = retry_cap
        self._rng = rng or random.Random()  # noqa: S311 - jitter, not secrets
        self._shut = False

    def add(self, key: K) -> None:
        with self._cond:
            self._add_locked(key)

    def add_after(self, key: K, delay: float) -> None:
        """Queue `key` once `delay` seconds have passed (at once when delay <= 0)."""
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
            backoff = self._failures.get(key)
            if backoff is None:
                backoff = Backoff(self._retry_initial, self._retry_cap, self._rng)
                self._failures[key] = backoff
            delay = max(at_least, backoff.next_delay())
        self.add_after(key, delay)
        return delay

    def forget(self, key: K) -> None:
        """`key` succeeded: its next failure starts from the shortest backoff."""
        with self._cond:
            self._failures.pop(key, None)

    def get(self, timeout: float | None = None) -> K | None:
        """The next key to process, or None on shutdown or when `timeout` passes."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                self._promote_due_locked()
                if self._queue:
                    key = self._queue.popleft()
                    self._processing.add(key)
                    self._dirty.discard(key)
                    return key
                if self._shut:
                    return None
                if deadline is not None and time.monotonic() >= deadline:
                    return None
                self._cond.wait(self._wait_locked(deadline))

    def done(self, key: K) -> None:
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty:
                self._queue.append(key)
                self._cond.notify()

    def shutdown(self) -> None:
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
            _, _, key = heapq.heappop(self._delayed)
            self._add_locked(key)

    def _wait_locked(self, deadline: float | None) -> float | None:
        """How long to sleep: until the next delayed key or the deadline, whichever is first."""
        due = [self._delayed[0][0]] if self._delayed else []
        if deadline is not None:
            due.append(deadline)
        return max(min(due) - time.monotonic(), 0.0) if due else None
