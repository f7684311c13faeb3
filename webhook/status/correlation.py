"""Event correlation as client-go's core/v1 recorder does it (`tools/record/events_cache.go`).

The writer records core/v1 Events (`involvedObject`, `count`, `firstTimestamp`,
`lastTimestamp`), so it follows `tools/record`'s `EventCorrelator`, the recorder for that
API, not `tools/events` (events.k8s.io/v1, whose `series` would need another API group,
other RBAC and a 30-minute series heartbeat). Three steps, each with client-go's constants:

1. aggregate (`EventAggregator`, keyed by `EventAggregatorByReasonFunc`: source, object,
   type, reason, reporting controller and instance): once 10 different messages with the
   same reason on the same object arrive within 10 minutes, they are folded into one Event
   whose message starts "(combined from similar events): ";
2. observe (`eventLogger`, keyed by `getEventKey`: source, object, type, reason and the
   message): an Event seen before is not created again but patched, with `count` one
   higher, a new `lastTimestamp` and the same name and `firstTimestamp` (a strategic merge
   patch of exactly those fields, as `eventObserve` builds it);
3. spam filter (`EventSourceObjectSpamFilter`, keyed by source, object and type): a token
   bucket per object, 25 at once then one per 5 minutes; past it, Events are dropped (the
   count still moves, as client-go's does).

Caches are LRU, 4096 entries each (`maxLruCacheEntries`).
"""

from __future__ import annotations

import copy
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final, Generic, TypeVar

from webhook.status.ratelimit import TokenBucket
from webhook.status.timestamps import rfc3339

MAX_LRU_ENTRIES: Final = 4096
AGGREGATE_MAX_EVENTS: Final = 10
AGGREGATE_INTERVAL_SECONDS: Final = 600.0
SPAM_BURST: Final = 25
SPAM_QPS: Final = 1.0 / 300.0
COMBINED_PREFIX: Final = "(combined from similar events): "

V = TypeVar("V")


class LruCache(Generic[V]):
    """groupcache's `lru.Cache` as client-go uses it: get refreshes, add evicts the oldest."""

    def __init__(self, size: int = MAX_LRU_ENTRIES) -> None:
        self._size = size
        self._items: OrderedDict[str, V] = OrderedDict()

    def get(self, key: str) -> V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def add(self, key: str, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self._size:
            self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


def _source_object(event: dict[str, Any]) -> list[str]:
    source = event.get("source") or {}
    involved = event.get("involvedObject") or {}
    return [
        source.get("component", ""),
        source.get("host", ""),
        involved.get("kind", ""),
        involved.get("namespace", ""),
        involved.get("name", ""),
    ]


def event_key(event: dict[str, Any]) -> str:
    """`getEventKey`: the same Event again (message included)."""
    involved = event.get("involvedObject") or {}
    return "".join(
        [
            *_source_object(event),
            involved.get("fieldPath", ""),
            involved.get("uid", ""),
            involved.get("apiVersion", ""),
            event.get("type", ""),
            event.get("reason", ""),
            event.get("message", ""),
        ]
    )


def aggregate_key(event: dict[str, Any]) -> tuple[str, str]:
    """`EventAggregatorByReasonFunc`: (similar Events' key, what tells them apart: message)."""
    involved = event.get("involvedObject") or {}
    key = "".join(
        [
            *_source_object(event),
            involved.get("uid", ""),
            involved.get("apiVersion", ""),
            event.get("type", ""),
            event.get("reason", ""),
            event.get("reportingComponent", ""),
            event.get("reportingInstance", ""),
        ]
    )
    return key, event.get("message", "")


def spam_key(event: dict[str, Any]) -> str:
    """`getSpamKey`: one budget per source, object and type."""
    involved = event.get("involvedObject") or {}
    return "".join(
        [
            *_source_object(event),
            involved.get("uid", ""),
            involved.get("apiVersion", ""),
            event.get("type", ""),
        ]
    )


@dataclass(slots=True)
class _Similar:
    messages: set[str] = field(default_factory=set)
    last: float = float("-inf")


@dataclass(frozen=True, slots=True)
class _Seen:
    count: int
    first_timestamp: Any
    name: str
    resource_version: str


@dataclass(frozen=True, slots=True)
class Correlated:
    """What to send: `event` to create, or `patch` to apply to the existing `event['metadata']`;
    `skip` when the spam filter drops it; `key` to report the server's answer under."""

    event: dict[str, Any]
    key: str
    patch: dict[str, Any] | None = None
    skip: bool = False


class EventCorrelator:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._similar: LruCache[_Similar] = LruCache()
        self._seen: LruCache[_Seen] = LruCache()
        self._spam: LruCache[TokenBucket] = LruCache()

    def correlate(self, event: dict[str, Any], now: datetime) -> Correlated:
        with self._lock:
            event, key = self._aggregate(event, now)
            event, patch = self._observe(event, key, now)
            skip = not self._allow(event)
        return Correlated(event, key, patch, skip)

    def update_state(self, key: str, written: dict[str, Any]) -> None:
        """The server's copy of an Event we sent: its name, resourceVersion and count."""
        metadata = written.get("metadata") or {}
        with self._lock:
            self._seen.add(
                key,
                _Seen(
                    int(written.get("count") or 1),
                    written.get("firstTimestamp"),
                    str(metadata.get("name") or ""),
                    str(metadata.get("resourceVersion") or ""),
                ),
            )

    def _aggregate(self, event: dict[str, Any], now: datetime) -> tuple[dict[str, Any], str]:
        key, message = aggregate_key(event)
        moment = self._clock()
        similar = self._similar.get(key)
        if similar is None or moment - similar.last > AGGREGATE_INTERVAL_SECONDS:
            similar = _Similar()
        similar.messages.add(message)
        similar.last = moment
        self._similar.add(key, similar)
        if len(similar.messages) < AGGREGATE_MAX_EVENTS:
            return event, event_key(event)
        similar.messages.pop()  # the set never grows past the threshold
        involved = event["involvedObject"]
        combined = copy.deepcopy(event)
        combined["metadata"] = {
            "name": f"{involved['name']}.{time.time_ns():x}",
            "namespace": event["metadata"]["namespace"],
        }
        combined["message"] = COMBINED_PREFIX + message
        combined["count"] = 1
        combined["firstTimestamp"] = combined["lastTimestamp"] = rfc3339(now)
        return combined, key

    def _observe(
        self, event: dict[str, Any], key: str, now: datetime
    ) -> tuple[dict[str, Any], dict[str, Any] | None]:
        seen = self._seen.get(key)
        patch = None
        if seen is not None and seen.count > 0:
            event = copy.deepcopy(event)
            event["metadata"]["name"] = seen.name
            event["metadata"]["resourceVersion"] = seen.resource_version
            event["firstTimestamp"] = seen.first_timestamp
            event["count"] = seen.count + 1
            event["lastTimestamp"] = rfc3339(now)
            patch = {
                "count": event["count"],
                "lastTimestamp": event["lastTimestamp"],
                "message": event["message"],
            }
        self._seen.add(
            key,
            _Seen(
                int(event.get("count") or 1),
                event.get("firstTimestamp"),
                event["metadata"]["name"],
                str(event["metadata"].get("resourceVersion") or ""),
            ),
        )
        return event, patch

    def _allow(self, event: dict[str, Any]) -> bool:
        key = spam_key(event)
        bucket = self._spam.get(key)
        if bucket is None:
            bucket = TokenBucket(SPAM_QPS, SPAM_BURST, clock=self._clock)
            self._spam.add(key, bucket)
        return bucket.try_take()
