"""Reading a watch stream: events split across any chunk boundary, bad lines skipped, bounded."""

from __future__ import annotations

import json

import pytest

from webhook.kube.informer import WatchStreamError, decode_event, split_lines

EVENTS = [
    {"type": "ADDED", "object": {"metadata": {"name": "a", "resourceVersion": "1"}}},
    {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "7"}}},
    {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired"}},
]
STREAM = b"".join(json.dumps(e).encode() + b"\n" for e in EVENTS)


@pytest.mark.parametrize("size", [1, 2, 7, 64, len(STREAM)], ids=lambda n: f"chunks of {n} bytes")
def test_lines_survive_any_chunking(size: int) -> None:
    chunks = [STREAM[i : i + size] for i in range(0, len(STREAM), size)]
    events = [decode_event(line) for line in split_lines(chunks)]
    assert [(e.type, e.object) for e in events if e] == [(e["type"], e["object"]) for e in EVENTS]


def test_empty_lines_are_skipped_and_a_cut_last_line_is_dropped() -> None:
    assert list(split_lines([b"\n\n{}\n", b'{"partial'])) == [b"{}"]


@pytest.mark.parametrize(
    "line",
    [
        b"not json",
        b"[]",
        b'"ADDED"',
        b'{"type": "ADDED"}',
        b'{"type": "ADDED", "object": []}',
        b'{"type": "EXPLODED", "object": {}}',
        b'{"type": 5, "object": {}}',
        b"\xff\xfe",
    ],
    ids=[
        "not JSON",
        "a JSON list",
        "a JSON string",
        "no object",
        "an object that is a list",
        "an unknown event type",
        "a type that is a number",
        "invalid UTF-8",
    ],
)
def test_a_line_that_is_not_a_watch_event_decodes_to_none(line: bytes) -> None:
    assert decode_event(line) is None


def test_an_endless_line_is_refused_instead_of_buffered() -> None:
    chunks = (b"x" * 1024 for _ in range(100))
    with pytest.raises(WatchStreamError, match="watch line longer than 10000 bytes"):
        list(split_lines(chunks, limit=10_000))
