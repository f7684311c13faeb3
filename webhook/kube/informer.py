"""client-go's reflector: list in pages, watch from the list's resourceVersion with bookmarks.

410 Gone (an answer or an ERROR event) relists; a watch ended by its timeout resumes at once, a
failure after a capped, jittered backoff. A line that cannot be read as an event ends the watch,
which starts again from the last event read: skipping it would move the resourceVersion past a
change never applied, and leave that object stale until it changes again. Not the client's
`SharedInformer`: it misses dict items.
"""

from __future__ import annotations

import contextlib
import http
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final, Protocol

import orjson
import urllib3
from prometheus_client import Counter, Gauge

from webhook.kube.cache import Key, object_key, resource_version
from webhook.kube.client import (
    TRANSPORT_ERRORS,
    CollectionApi,
    error_text,
    retry_after,
    status_code,
)
from webhook.kube.pager import Page
from webhook.kube.settings import InformerSettings
from webhook.kube.workqueue import Backoff
from webhook.observability.logs import logger

log = logger("kube.informer")

# A watch that ran this long, or delivered an event, was healthy: it resumes at once.
_HEALTHY_WATCH_SECONDS = 1.0


class ResourceExpiredError(Exception):
    """410 Gone: our resourceVersion was compacted away."""


# A watch line is one object (at most ~1.5 MiB, etcd's limit): one longer is not a watch stream.
MAX_LINE_BYTES: Final = 16 * 1024 * 1024
EVENT_TYPES: Final = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"})


class WatchStreamError(Exception):
    """The watch cannot go on (an ERROR event other than 410); reconnect."""


class UnreadableEventError(WatchStreamError):
    """A line that is not a watch event (not JSON, no type or object, oversized): the watch starts
    again from the last event read."""


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: str
    object: dict[str, Any]


def split_lines(chunks: Iterable[bytes], limit: int = MAX_LINE_BYTES) -> Iterator[bytes]:
    """Complete non-empty lines from arbitrarily cut chunks; a trailing partial line is dropped."""
    buffer = bytearray()
    for chunk in chunks:
        buffer.extend(chunk)
        start = 0
        while (end := buffer.find(b"\n", start)) != -1:
            if end > start:
                yield bytes(buffer[start:end])
            start = end + 1
        del buffer[:start]
        if len(buffer) > limit:
            raise UnreadableEventError(f"watch line longer than {limit} bytes")


def decode_event(line: bytes) -> WatchEvent | None:
    """One watch event, or None for a line that is not one."""
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    kind, obj = (data.get("type"), data.get("object")) if isinstance(data, dict) else (None, None)
    if kind not in EVENT_TYPES or not isinstance(obj, dict):
        return None
    return WatchEvent(str(kind), obj)


def response_chunks(response: urllib3.BaseHTTPResponse) -> Iterator[bytes]:
    """Bytes as they arrive: chunk by chunk for chunked encoding, else whatever is ready."""
    if getattr(response, "chunked", False):
        yield from response.stream(None)
        return
    while chunk := response.read1(65536):
        yield chunk


class InformerMetrics(Protocol):
    """The owner names the counters (prometheus-client objects)."""

    lists: Counter
    objects: Gauge
    watch_events: Counter
    watch_restarts: Counter


class Informer:
    """`on_change` gets each listed, added or modified object (the owner's to keep), `on_delete`
    each key gone (also one found gone on relist), `on_synced` runs once after the first list.
    """

    def __init__(
        self,
        api: CollectionApi,
        on_change: Callable[[Key, dict[str, Any]], None],
        on_delete: Callable[[Key], None],
        metrics: InformerMetrics,
        settings: InformerSettings,
        on_synced: Callable[[], None] = lambda: None,
    ) -> None:
        self._api = api
        self._on_change = on_change
        self._on_delete = on_delete
        self._on_synced = on_synced
        self._metrics = metrics
        self._settings = settings
        # What a relist compares against.
        self._known: set[Key] = set()
        self._backoff = Backoff(
            self._settings.backoff_initial, self._settings.backoff_cap, self._settings.rng
        )
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._response: urllib3.BaseHTTPResponse | None = None
        self._version: str | None = None
        self.synced = threading.Event()

    def run(self) -> None:
        while not self._stop.is_set():
            try:
                if self._version is None:
                    self._version = self._list()
                self._watch(self._version)
            except Exception as error:  # never die
                expired = isinstance(error, ResourceExpiredError)
                if not expired and status_code(error) != http.HTTPStatus.GONE:
                    unreadable = isinstance(error, UnreadableEventError)
                    self._fail(error, "unreadable" if unreadable else "error")
                    continue
                self._version = None
                self._metrics.watch_restarts.labels("gone").inc()
                log.info(
                    "resourceVersion expired (410 Gone); relisting",
                    extra={"fields": {"reason": "gone"}},
                )

    def stop(self) -> None:
        """Also unblocks a watch read in progress."""
        self._stop.set()
        with self._lock:
            response = self._response
        if response is not None:
            with contextlib.suppress(OSError):
                response.shutdown()

    def _list(self) -> str:
        """Each page's objects go to the owner as the page arrives, and the page is let go before
        the next is fetched: the owner's cache is all the list leaves behind. What the list lacks
        is deleted after its last page, as client-go's `DeltaFIFO.Replace` does."""
        fresh: set[Key] = set()

        def take(page: Page, restarted: bool) -> None:
            if restarted:  # the full list after an expired token: only what it names exists
                fresh.clear()
            for item in page.items:
                key = object_key(item)
                if key is None:
                    continue
                fresh.add(key)
                # Known at once: a list that fails after this page still notices it gone later.
                self._known.add(key)
                self._on_change(key, item)

        listed = self._api.list_pages(take)
        version = listed.resource_version
        for gone in self._known - fresh:
            self._on_delete(gone)
        self._known = fresh
        self._metrics.lists.inc()
        self._metrics.objects.set(len(fresh))
        self._backoff.reset()
        first = not self.synced.is_set()
        self.synced.set()
        fields = {"objects": len(fresh), "resourceVersion": version, "requests": listed.requests}
        fields["fullListFallback"] = listed.full_list_fallback
        log.info("listed", extra={"fields": fields})
        if first:
            self._on_synced()
        return version

    def _watch(self, version: str) -> None:
        base = self._settings.watch_timeout_seconds
        timeout = base + self._settings.rng.randrange(max(base, 1))
        started = time.monotonic()
        response = self._api.watch(version, timeout, read_timeout=timeout + 30.0)
        with self._lock:
            self._response = response
        if self._stop.is_set():
            response.shutdown()
        delivered = False
        try:
            for line in split_lines(response_chunks(response)):
                event = decode_event(line)
                if event is None:
                    raise UnreadableEventError(f"a {len(line)}-byte line is not a watch event")
                self._apply(event)
                delivered = True
        finally:
            with self._lock:
                self._response = None
            # Closed, not just released: a stream left mid-body (410, stop, error) must
            # not go back to the pool for another request to read.
            response.close()
            response.release_conn()
        if self._stop.is_set():
            return
        healthy = delivered or time.monotonic() - started >= _HEALTHY_WATCH_SECONDS
        self._metrics.watch_restarts.labels("closed").inc()
        if healthy:
            self._backoff.reset()
        else:
            self._stop.wait(self._backoff.next_delay())

    def _apply(self, event: WatchEvent) -> None:
        self._metrics.watch_events.labels(event.type).inc()
        obj = event.object
        if event.type == "ERROR":
            if obj.get("code") == http.HTTPStatus.GONE:
                raise ResourceExpiredError
            raise WatchStreamError(f"watch error {obj.get('code')}: {obj.get('message')}")
        self._version = resource_version(obj) or self._version
        if event.type == "BOOKMARK":
            return
        key = object_key(obj)
        if key is None:
            log.warning(
                "watch event without namespace/name skipped", extra={"fields": {"type": event.type}}
            )
            return
        if log.isEnabledFor(logging.DEBUG):
            fields = {"type": event.type, "namespace": key[0], "name": key[1]}
            log.debug("watch event", extra={"fields": {**fields, "resourceVersion": self._version}})
        if event.type == "DELETED":
            self._known.discard(key)
            self._on_delete(key)
        else:
            self._known.add(key)
            self._on_change(key, obj)
        self._metrics.objects.set(len(self._known))

    def _fail(self, error: Exception, reason: str) -> None:
        """Counted by `reason`, logged once, retried after the backoff from `_version` (the
        last event read; None relists)."""
        if self._stop.is_set():
            return
        delay = max(self._backoff.next_delay(), retry_after(error))
        self._metrics.watch_restarts.labels(reason).inc()
        fields = {
            "status": status_code(error),
            "error": error_text(error),
            "retry_in": round(delay, 3),
            "reason": reason,
            "resourceVersion": self._version,
        }
        fields["transport"] = isinstance(error, TRANSPORT_ERRORS)
        log.warning("list/watch failed", extra={"fields": fields})
        self._stop.wait(delay)
