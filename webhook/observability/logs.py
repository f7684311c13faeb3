"""Structured logs of both processes: one JSON object per line on stderr, through stdlib logging.

Log collectors parse JSON lines without configuration, and a denial is
searchable by its admission uid. Loggers live under one namespace,
`feedbackstore`, and structured fields go in one mapping, `extra={"fields":
{...}}` (a mapping, so that keys such as `name` or `msg` never clash with
LogRecord's own attributes). Whole objects are never logged at info level
(they can be megabytes, and may hold what the log reader must not see).

A `QueueListener` thread formats and writes, so a line logged on the
webhook's event loop costs the loop only a LogRecord and a queue put.
"""

from __future__ import annotations

import atexit
import logging
import logging.handlers
import queue
import sys
import time
from collections.abc import Iterable
from typing import Any, Final, TextIO

import orjson

NAMESPACE: Final = "feedbackstore"


def logger(component: str) -> logging.Logger:
    """The logger of `component` (its lines say `feedbackstore.<component>`)."""
    return logging.getLogger(f"{NAMESPACE}.{component}")


class JsonFormatter(logging.Formatter):
    """`{"time", "level", "logger", "msg", "pid", ...fields}` per record, for both processes.

    `time` is RFC 3339 in UTC with milliseconds, truncated: `2023-11-14T22:13:20.999Z`.
    """

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802
        created = record.created
        second = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(created))
        return f"{second}.{int((created - int(created)) * 1000):03d}Z"

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": self.formatTime(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            "pid": record.process,
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update(fields)
        if record.exc_info and record.exc_info[0] is not None:
            entry.setdefault("error", f"{record.exc_info[0].__name__}: {record.exc_info[1]}")
            entry["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str, option=orjson.OPT_NON_STR_KEYS).decode()


class _Enqueue(logging.handlers.QueueHandler):
    """Hands the record over as it is, so the listener formats it off the caller's thread.

    `prepare` is QueueHandler's documented hook for this; its default formats
    and copies the record in the caller, for queues that cross processes.
    """

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        return record


class _PollingListener(logging.handlers.QueueListener):
    """Takes what is queued every 10 ms instead of blocking on the queue.

    A listener blocked in `get()` must be woken by every `put()`: a futex wake
    per line on the event loop's thread. A line reaches stderr at most 10 ms
    late; `stop()` still writes them all. `dequeue` is QueueListener's
    documented hook for how records are taken. A shortcut for speed: what it
    saves on denials is in bench/README.md, "Issue 15: the log listener polls".
    """

    def dequeue(self, block: bool) -> logging.LogRecord:
        records: queue.SimpleQueue[logging.LogRecord] = self.queue  # type: ignore[assignment]
        while True:
            try:
                return records.get_nowait()
            except queue.Empty:
                if not block:
                    raise
                time.sleep(0.01)


# This process's listener while `configure` owns the output.
_listener: logging.handlers.QueueListener | None = None


def configure(level: str, stream: TextIO | None = None, *, quiet: Iterable[str] = ()) -> None:
    """Route every logger to `stream` (stderr) as JSON lines at `level`.

    `quiet` names loggers held at warning or above (a client library's
    per-request debug lines, say).
    """
    global _listener  # this process's one log output
    stop()
    # The lines carry no thread or process name: do not collect them (the logging HOWTO).
    logging.logThreads = False
    logging.logMultiprocessing = False
    records: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    writer = logging.StreamHandler(stream if stream is not None else sys.stderr)
    writer.setFormatter(JsonFormatter())
    _listener = _PollingListener(records, writer)
    _listener.start()
    root = logging.getLogger()
    root.handlers[:] = [_Enqueue(records)]
    root.setLevel(level.upper())
    for name in quiet:
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))


def stop() -> None:
    """Write every queued line and stop the listener (at exit; again is harmless)."""
    global _listener  # cleared once stopped
    listener, _listener = _listener, None
    if listener is None:
        return
    listener.stop()
    # Anything logged later (at exit) is written at once by the same handler.
    root = logging.getLogger()
    root.handlers[:] = [
        listener.handlers[0] if isinstance(handler, _Enqueue) else handler
        for handler in root.handlers
    ]


atexit.register(stop)
