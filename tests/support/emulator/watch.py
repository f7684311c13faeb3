"""Watch streams: newline-delimited JSON events from a resourceVersion onward.

Kubernetes imitated ("API Concepts: Efficient detection of changes", "Watch bookmarks",
"Resource versions", "410 Gone responses"):
- ``?watch=true`` answers 200 with a chunked stream of ``{"type": ..., "object": ...}`` lines,
  types ADDED, MODIFIED, DELETED, BOOKMARK and ERROR.
- ``resourceVersion=N`` sends every change after N; unset or "0" first sends a synthetic ADDED
  for every current object ("Get State and Start at Most Recent" / "Start at Any").
- a start older than the compaction point, or older than the last restart (the real
  server's new watch cache starts at the revision it listed at), gets one ERROR event whose
  object is a 410 Expired Status ("too old resource version: N (M)"), then the stream ends —
  the HTTP status stays 200, as with the watch cache.
- ``allowWatchBookmarks=true``: periodic BOOKMARK events whose object carries only kind,
  apiVersion and ``metadata.resourceVersion`` (a revision every earlier change has been sent
  for). ``sendInitialEvents=true`` ends the initial ADDED events with a bookmark annotated
  ``k8s.io/initial-events-end: "true"`` (streaming lists, KEP-3157).
- ``timeoutSeconds`` closes the stream cleanly when it elapses; without it the emulator uses
  its own default (the real server picks 30-60 minutes).
- ``labelSelector`` and ``fieldSelector`` are NOT applied (every object of the resource in the
  requested namespace is sent); the status writer does not use them.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import orjson
from aiohttp import web

from tests.support.emulator import errors
from tests.support.emulator.resources import ResourceType
from tests.support.emulator.store import ResourceVersionTooOldError, Store, parse_resource_version

_DISCONNECTED = (ConnectionResetError, ConnectionError, RuntimeError)


@dataclass(eq=False)
class Watcher:
    request: web.Request
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    stop: str | None = None  # "end" (close cleanly) or "abort" (drop the connection)


class WatchHub:
    """The open watches, so faults and restarts can end them and writes can wake them."""

    def __init__(self) -> None:
        self.watchers: set[Watcher] = set()

    def wake_all(self) -> None:
        for watcher in self.watchers:
            watcher.wake.set()

    def end_all(self, abort: bool) -> int:
        for watcher in list(self.watchers):
            watcher.stop = "abort" if abort else "end"
            if abort and watcher.request.transport is not None:
                watcher.request.transport.abort()
            watcher.wake.set()
        return len(self.watchers)


@dataclass(frozen=True)
class WatchOptions:
    resource_version: str | None
    bookmarks: bool
    timeout: float
    send_initial: bool

    @classmethod
    def parse(cls, query: dict[str, str], default_timeout: float) -> WatchOptions:
        timeout = default_timeout
        if query.get("timeoutSeconds"):
            try:
                # 0 (or less) means "the server's default", as in the apiserver's watch handler.
                seconds = int(query["timeoutSeconds"])
                timeout = float(seconds) if seconds > 0 else default_timeout
            except ValueError as error:
                raise errors.bad_request(
                    f"invalid timeoutSeconds: {query['timeoutSeconds']}"
                ) from error
        return cls(
            resource_version=query.get("resourceVersion") or None,
            bookmarks=query.get("allowWatchBookmarks", "").lower() in ("true", "1"),
            timeout=timeout,
            send_initial=query.get("sendInitialEvents", "").lower() in ("true", "1"),
        )


def _line(event_type: str, obj: Any) -> bytes:
    return orjson.dumps({"type": event_type, "object": obj}) + b"\n"


# What a garbled event is sent as (`Faults.garble_watch_events`): one line, not JSON.
GARBLED_LINE: Final = b'{"type":"MODIFIED","object":{"metadata":\x00\n'


def _bookmark(resource: ResourceType, revision: int, initial_end: bool = False) -> bytes:
    meta: dict[str, Any] = {"resourceVersion": str(revision)}
    if initial_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    return _line(
        "BOOKMARK", {"kind": resource.kind, "apiVersion": resource.api_version, "metadata": meta}
    )


async def serve(
    request: web.Request,
    store: Store,
    hub: WatchHub,
    resource: ResourceType,
    namespace: str | None,
    options: WatchOptions,
    bookmark_interval: float,
    garbled: Callable[[], bool] = lambda: False,
) -> web.StreamResponse:
    """`garbled()` is asked before each change is sent: True sends `GARBLED_LINE` instead."""
    start: int | None = None
    if options.resource_version not in (None, "0"):
        start = parse_resource_version(str(options.resource_version))
    response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    response.enable_chunked_encoding()
    await response.prepare(request)
    watcher = Watcher(request)
    hub.watchers.add(watcher)
    try:
        await _stream(
            response, watcher, store, resource, namespace, options, start, bookmark_interval,
            garbled,
        )  # fmt: skip
    except _DISCONNECTED:
        return response
    finally:
        hub.watchers.discard(watcher)
    if watcher.stop != "abort":
        with contextlib.suppress(*_DISCONNECTED):
            await response.write_eof()
    return response


async def _stream(
    response: web.StreamResponse,
    watcher: Watcher,
    store: Store,
    resource: ResourceType,
    namespace: str | None,
    options: WatchOptions,
    start: int | None,
    bookmark_interval: float,
    garbled: Callable[[], bool],
) -> None:
    deadline = time.monotonic() + options.timeout
    if start is None or options.send_initial:
        items, cursor = store.snapshot(resource, namespace)
        if items:
            await response.write(b"".join(_line("ADDED", obj) for obj in items))
        if options.send_initial and options.bookmarks:
            await response.write(_bookmark(resource, cursor, initial_end=True))
    else:
        cursor = start
    next_bookmark = time.monotonic() + bookmark_interval
    while watcher.stop is None:
        watcher.wake.clear()
        try:
            changes, cursor_seen = store.changes_since(resource, namespace, cursor)
        except ResourceVersionTooOldError as gone:
            await response.write(_line("ERROR", errors.too_old_watch(gone.requested, gone.oldest)))
            return
        if changes:
            lines = (GARBLED_LINE if garbled() else _line(c.type, c.obj) for c in changes)
            await response.write(b"".join(lines))
        cursor = cursor_seen
        now = time.monotonic()
        if now >= deadline:
            return
        if options.bookmarks and now >= next_bookmark:
            await response.write(_bookmark(resource, cursor))
            next_bookmark = now + bookmark_interval
        transport = watcher.request.transport
        if transport is None or transport.is_closing():
            return
        wait = min(deadline - now, 1.0)
        if options.bookmarks:
            wait = min(wait, max(next_bookmark - now, 0.0))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(watcher.wake.wait(), timeout=wait)
