"""A watch stream's newline-delimited JSON events, bounded in memory: a line past MAX_LINE_BYTES
(an object is at most ~1.5 MiB, etcd's limit) means it is not a watch stream.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final

import orjson
import urllib3

MAX_LINE_BYTES: Final = 16 * 1024 * 1024
EVENT_TYPES: Final = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"})


class WatchStreamError(Exception):
    """The stream cannot be read as a watch (oversized line); reconnect."""


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
            raise WatchStreamError(f"watch line longer than {limit} bytes")


def decode_event(line: bytes) -> WatchEvent | None:
    """One watch event, or None for a line that is not one (logged and skipped by the caller)."""
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    kind, obj = data.get("type"), data.get("object")
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
