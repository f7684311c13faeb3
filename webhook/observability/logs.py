"""Structured logs of both processes: one JSON object per line on stderr, through stdlib logging.

Log collectors in a cluster parse JSON lines without configuration, and a
denial is searchable by its admission uid. Fields go in `extra=`: as keys of
their own (`extra={"object": name}`), or, where a key would clash with a
LogRecord attribute such as `name` or `msg`, in one mapping
(`extra={"fields": {"name": ...}}`). Whole objects are never logged at info
level (they can be megabytes, and may hold data the log reader must not see).

`configure` puts a `QueueHandler` on the root logger and a `QueueListener`
thread behind it: a denial logged on the webhook's event loop costs the loop a
LogRecord and a queue put, while formatting and the write to stderr happen on
the listener's thread. Each line is one write (lines up to PIPE_BUF bytes are
atomic on a pipe, so the lines of `--workers` sharing stderr never
interleave), and `stop` (run at exit, after a graceful SIGTERM too) writes
whatever is still queued.
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

LOGGER_NAME: Final = "feedbackstore_webhook"

# Attributes every LogRecord has; anything else on a record came from `extra=`.
_RECORD_ATTRIBUTES: Final = frozenset(
    vars(logging.LogRecord("", 0, "", 0, "", None, None)).keys() | {"message", "asctime"}
)
_FIELDS: Final = "fields"


def logger(component: str) -> logging.Logger:
    """The webhook server's logger for `component` (its lines say `feedbackstore_webhook.<c>`)."""
    return logging.getLogger(f"{LOGGER_NAME}.{component}")


def utc_millis(created: float) -> str:
    """RFC 3339 in UTC with milliseconds (truncated): `2023-11-14T22:13:20.999Z`."""
    second = int(created)
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
    return f"{text}.{int((created - second) * 1000):03d}Z"


class JsonFormatter(logging.Formatter):
    """`{"time", "level", "logger", "msg", "pid", ...fields}` per record, for both processes."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": utc_millis(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            "pid": record.process,
        }
        attributes = vars(record)
        if attributes.keys() - _RECORD_ATTRIBUTES:
            for key, value in attributes.items():
                if key == _FIELDS and isinstance(value, dict):
                    entry.update(value)
                elif key not in _RECORD_ATTRIBUTES and not key.startswith("_"):
                    entry[key] = value
        if record.exc_info and record.exc_info[0] is not None:
            entry.setdefault("error", f"{record.exc_info[0].__name__}: {record.exc_info[1]}")
            entry["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str, option=orjson.OPT_NON_STR_KEYS).decode()


class _Enqueue(logging.handlers.QueueHandler):
    """Hands the record over as it is: the listener formats it, off the caller's thread.

    (QueueHandler's own `prepare` formats and copies the record in the caller, for
    queues that cross processes; this one never leaves the process.)
    """

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        return record


class _BatchingListener(logging.handlers.QueueListener):
    """Drains the queue every `POLL_SECONDS` instead of blocking on it.

    A listener blocked in `get()` must be woken by every `put()`: a futex
    wake per denial, on the core the event loop runs on (7 % of the loop's
    time under load, bench/README.md). Polling leaves nobody waiting, so a
    put is a plain append, and a burst of lines is written in one wake-up.
    A line reaches stderr at most `POLL_SECONDS` late; `stop()` still writes
    all of them.
    """

    POLL_SECONDS: Final = 0.01

    def dequeue(self, block: bool) -> logging.LogRecord:
        records: queue.SimpleQueue[logging.LogRecord] = self.queue  # type: ignore[assignment]
        while True:
            try:
                return records.get_nowait()
            except queue.Empty:
                if not block:
                    raise
                time.sleep(self.POLL_SECONDS)


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
    _listener = _BatchingListener(records, writer)
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
