"""Structured logs of both processes: one JSON object per line on stderr, through stdlib logging.

Loggers live under `feedbackstore`; fields go in `extra={"fields": {...}}` (never clashing with
LogRecord's attributes). A `QueueListener` thread formats and writes, off the event loop.
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


def log_fields(log: logging.Logger, level: int, msg: str, fields: dict[str, Any]) -> None:
    """`log.log(level, msg, extra={"fields": fields})` without `Logger.findCaller`, whose walk up
    the stack for a file and line (which no line shows) was a third of what logging a denial cost
    the event loop (bench/admission/instructions.py). For the lines a review logs."""
    if log.isEnabledFor(level):
        log.handle(log.makeRecord(log.name, level, "", 0, msg, (), None, extra={"fields": fields}))


class JsonFormatter(logging.Formatter):
    """`time` is RFC 3339 in UTC with milliseconds, truncated: `2023-11-14T22:13:20.999Z`."""

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
    """The record as it is, formatted by the listener (the default formats it in the caller)."""

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        return record


class _GatheringListener(logging.handlers.QueueListener):
    """Sleeps in `get()` while nothing is logged; once woken, lets 10 ms of lines gather, then
    takes them without a thread switch each. A shortcut kept on a measurement: woken per record
    (logging's own listener), a small denial cost 1.2x the CPU (bench/admission/run.py
    --payload small-invalid against such a revision)."""

    def dequeue(self, block: bool) -> logging.LogRecord:
        records: queue.SimpleQueue[logging.LogRecord] = self.queue  # type: ignore[assignment]
        if not block or not records.empty():
            return records.get(block)
        record = records.get()
        time.sleep(0.01)
        return record


_listener: logging.handlers.QueueListener | None = None


def configure(level: str, stream: TextIO | None = None, *, quiet: Iterable[str] = ()) -> None:
    """Route every logger to `stream` (stderr) as JSON lines; `quiet` ones at warning or above."""
    global _listener  # this process's one log output
    stop()
    # The lines carry no thread or process name: do not collect them (the logging HOWTO).
    logging.logThreads = False
    logging.logMultiprocessing = False
    records: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    writer = logging.StreamHandler(stream if stream is not None else sys.stderr)
    writer.setFormatter(JsonFormatter())
    _listener = _GatheringListener(records, writer)
    _listener.start()
    root = logging.getLogger()
    root.handlers[:] = [_Enqueue(records)]
    root.setLevel(level.upper())
    for name in quiet:
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))


def stop() -> None:
    """Write every queued line and stop the listener (again is harmless)."""
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
