"""Fault injection: the ways a real API server misbehaves that a controller must survive.

Each fault imitates something a client sees from a real cluster: a watch connection cut by a
load balancer or an apiserver rollout; 500 InternalError and 429 TooManyRequests with
Retry-After (API Priority and Fairness: "requests are rejected ... with a 429 and Retry-After");
etcd compaction making old resourceVersions answer 410 Gone; slow responses; and losing an
optimistic-concurrency race to another writer (409 Conflict).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.support.emulator import errors


@dataclass
class _Rule:
    remaining: int | None  # None: until cleared
    method: str | None
    path_contains: str | None
    status: int = 500
    seconds: float = 0.0
    retry_after: int = 1

    def matches(self, method: str, path: str) -> bool:
        if self.remaining is not None and self.remaining <= 0:
            return False
        if self.method is not None and self.method.upper() != method.upper():
            return False
        return self.path_contains is None or self.path_contains in path


def _bump_annotation(obj: dict[str, Any]) -> None:
    annotations = obj.setdefault("metadata", {}).setdefault("annotations", {})
    count = int(annotations.get("emulator.ctxmesh.ai/concurrent-writes", "0")) + 1
    annotations["emulator.ctxmesh.ai/concurrent-writes"] = str(count)


class Faults:
    """Armed from the test thread, consumed by the emulator's request handlers."""

    def __init__(
        self,
        drop_watches: Callable[[bool], int],
        compact: Callable[[], int],
    ) -> None:
        self._lock = threading.Lock()
        self._drop_watches = drop_watches
        self._compact = compact
        self._failures: list[_Rule] = []
        self._delays: list[_Rule] = []
        self._conflicts: list[Callable[[dict[str, Any]], None]] = []
        self._garbled: list[_Rule] = []

    def drop_watches(self, clean: bool = False) -> int:
        """Close every open watch stream now; returns how many were open.

        ``clean=False`` resets the TCP connection (a dropped connection: the client sees a
        protocol error mid-stream); ``clean=True`` ends the chunked stream normally, as the
        server does when a watch times out.
        """
        return self._drop_watches(not clean)

    def fail_next(
        self,
        n: int,
        status: int = 500,
        method: str | None = None,
        path_contains: str | None = None,
        retry_after: int = 1,
    ) -> None:
        """The next ``n`` matching requests get ``status`` (500, 429, 503, 504...) instead."""
        with self._lock:
            self._failures.append(
                _Rule(n, method, path_contains, status=status, retry_after=retry_after)
            )

    def expire_resource_versions(self) -> int:
        """Compact history at the current revision: older resourceVersions now answer 410."""
        return self._compact()

    def delay(
        self,
        seconds: float,
        method: str | None = None,
        path_contains: str | None = None,
        count: int | None = None,
    ) -> None:
        """Hold matching requests ``seconds`` before answering (``count`` times, or until clear)."""
        with self._lock:
            self._delays.append(_Rule(count, method, path_contains, seconds=seconds))

    def conflict_next_status_write(
        self, n: int = 1, mutate: Callable[[dict[str, Any]], None] | None = None
    ) -> None:
        """Another writer wins the race for the next ``n`` writes to a /status endpoint.

        Just before the write, a concurrent update (``mutate``, by default an annotation bump by
        manager ``emulator-concurrent-writer``) is stored — a new resourceVersion and a MODIFIED
        event — and the write is answered 409 Conflict "the object has been modified", what a
        real server answers when the resourceVersion precondition fails or its patch retries
        lose to a concurrent writer.
        """
        with self._lock:
            self._conflicts.extend([mutate or _bump_annotation] * n)

    def garble_watch_events(self, n: int = 1, path_contains: str | None = None) -> None:
        """The next ``n`` changes a matching watch stream carries go out as a line that is not a
        watch event (a stream corrupted on its way), in place of the event: that stream never
        carries the change; a watch started again from before it does."""
        with self._lock:
            self._garbled.append(_Rule(n, "GET", path_contains))

    def clear(self) -> None:
        with self._lock:
            self._failures.clear()
            self._delays.clear()
            self._conflicts.clear()
            self._garbled.clear()

    # -- consumed by the server ------------------------------------------------------------
    def take_failure(self, method: str, path: str) -> errors.ApiError | None:
        with self._lock:
            for rule in self._failures:
                if rule.matches(method, path):
                    if rule.remaining is not None:
                        rule.remaining -= 1
                    return _failure(rule.status, rule.retry_after)
        return None

    def delay_for(self, method: str, path: str) -> float:
        with self._lock:
            total = 0.0
            for rule in self._delays:
                if rule.matches(method, path):
                    if rule.remaining is not None:
                        rule.remaining -= 1
                    total += rule.seconds
            return total

    def take_garbled(self, path: str) -> bool:
        with self._lock:
            for rule in self._garbled:
                if rule.matches("GET", path):
                    if rule.remaining is not None:
                        rule.remaining -= 1
                    return True
        return False

    def take_status_conflict(self) -> Callable[[dict[str, Any]], None] | None:
        with self._lock:
            return self._conflicts.pop(0) if self._conflicts else None


def _failure(status: int, retry_after: int) -> errors.ApiError:
    if status == 429:
        return errors.too_many_requests(retry_after)
    if status == 500:
        return errors.internal("injected fault")
    reasons = {503: "ServiceUnavailable", 504: "Timeout", 502: "InternalError"}
    body = errors.status_body(
        status, reasons.get(status, "InternalError"), f"injected fault ({status})"
    )
    return errors.ApiError(body, {"Retry-After": str(retry_after)} if status in (503, 504) else {})
