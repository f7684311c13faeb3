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
the listener's thread. The listener writes whole lines, as many as fit in
PIPE_BUF bytes per write (atomic on a pipe, so the lines of `--workers`
sharing stderr never interleave), and `stop` (run at exit, after a graceful
SIGTERM too) writes whatever is still queued.
"""

from __future__ import annotations

import atexit
import logging
import logging.handlers
import queue
import select
import sys
import time
from collections.abc import Iterable
from typing import Any, Final, TextIO

import orjson

LOGGER_NAME: Final = "feedbackstore_webhook"

# Attributes every LogRecord has; anything else on a record came from `extra=`.
_PLAIN_RECORD: Final = vars(logging.LogRecord("", 0, "", 0, "", None, None)).keys()
_PLAIN_RECORD_SIZE: Final = len(_PLAIN_RECORD)
_RECORD_ATTRIBUTES: Final = frozenset(_PLAIN_RECORD | {"message", "asctime"})
_FIELDS: Final = "fields"
# The most one write(2) to a pipe carries without interleaving with another writer's.
_ATOMIC_WRITE: Final = select.PIPE_BUF


def logger(component: str) -> logging.Logger:
    """The webhook server's logger for `component` (its lines say `feedbackstore_webhook.<c>`)."""
    return logging.getLogger(f"{LOGGER_NAME}.{component}")


def log_fields(log: logging.Logger, level: int, msg: str, fields: dict[str, Any]) -> None:
    """`log.log(level, msg, extra={"fields": fields})`, without looking up the caller.

    `Logger.log` walks the stack for the caller's file, line and function
    (`findCaller`) and LogRecord then splits that path: ~3 % of the pinned
    server's time under a stream of denials (bench/README.md, "Issue 9, second
    pass"), for attributes these JSON lines never show. `makeRecord` and
    `handle` are Logger's public API: level, filters, handlers and the queue
    behave as for `log.info`. For lines logged per request; elsewhere use the
    logger's own methods.
    """
    if log.isEnabledFor(level):
        log.handle(log.makeRecord(log.name, level, "", 0, msg, (), None, extra={_FIELDS: fields}))


class JsonFormatter(logging.Formatter):
    """`{"time", "level", "logger", "msg", "pid", ...fields}` per record, for both processes.

    `time` is RFC 3339 in UTC with milliseconds, truncated: `2023-11-14T22:13:20.999Z`.
    """

    def __init__(self) -> None:
        super().__init__()
        # The time up to the second, kept while records of the same second follow:
        # strftime and gmtime per line were a sixth of a denial line's formatting.
        self._second = -1
        self._second_text = ""

    def format(self, record: logging.LogRecord) -> str:
        created = record.created
        second = int(created)
        if second != self._second:
            self._second_text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
            self._second = second
        entry: dict[str, Any] = {
            "time": f"{self._second_text}.{int((created - second) * 1000):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
            "pid": record.process,
        }
        attributes = vars(record)
        extras = len(attributes) - _PLAIN_RECORD_SIZE  # what came with `extra=`
        fields = attributes.get(_FIELDS) if extras == 1 else None
        if type(fields) is dict:  # `log_fields`: no need to look at the others
            entry.update(fields)
        elif extras > 0:
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


class _LineWriter(logging.StreamHandler):  # type: ignore[type-arg]
    """Keeps formatted lines until `flush`, then writes them in as few writes as whole lines allow.

    StreamHandler writes and flushes every record: a system call per denial,
    ~8 µs of the pinned server's time under load (bench/README.md). Here the
    listener flushes once per drained batch. Lines go out in chunks of at most
    PIPE_BUF bytes, whole lines only, so `--workers` sharing one stderr pipe
    never interleave inside a line; a longer line is written alone.
    """

    def __init__(self, stream: TextIO) -> None:
        super().__init__(stream)
        self._pending: list[str] = []
        self._pending_bytes = 0

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record) + self.terminator
        except Exception:  # logging's contract: report, never raise
            self.handleError(record)
            return
        size = len(line) if line.isascii() else len(line.encode())
        if self._pending and self._pending_bytes + size > _ATOMIC_WRITE:
            self._write_pending()
        self._pending.append(line)
        self._pending_bytes += size

    def flush(self) -> None:
        with self.lock:  # type: ignore[union-attr]  # created by Handler.__init__
            self._write_pending()

    def _write_pending(self) -> None:
        if not self._pending:
            return
        chunk = "".join(self._pending)
        self._pending.clear()
        self._pending_bytes = 0
        try:
            self.stream.write(chunk)
            self.stream.flush()
        except Exception:  # a closed or full stderr must not stop the listener
            self.handleError(logging.makeLogRecord({"msg": "log write failed"}))


class _BatchingListener(logging.handlers.QueueListener):
    """Drains the queue every `POLL_SECONDS` instead of blocking on it.

    A listener blocked in `get()` must be woken by every `put()`: a futex
    wake per denial, on the core the event loop runs on (7 % of the loop's
    time under load, bench/README.md). Polling leaves nobody waiting, so a
    put is a plain append, and a burst of lines is written in one wake-up.
    A line reaches stderr at most `POLL_SECONDS` late; `stop()` still writes
    all of them. Its handlers are flushed whenever the queue runs dry.
    """

    POLL_SECONDS: Final = 0.01

    def dequeue(self, block: bool) -> logging.LogRecord:
        records: queue.SimpleQueue[logging.LogRecord] = self.queue  # type: ignore[assignment]
        while True:
            try:
                return records.get_nowait()
            except queue.Empty:
                for handler in self.handlers:
                    handler.flush()
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
    writer = _LineWriter(stream if stream is not None else sys.stderr)
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
    for handler in listener.handlers:
        handler.flush()
    # Anything logged later (at exit) is written at once by the same handler.
    root = logging.getLogger()
    root.handlers[:] = [
        listener.handlers[0] if isinstance(handler, _Enqueue) else handler
        for handler in root.handlers
    ]


atexit.register(stop)
