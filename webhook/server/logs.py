"""Structured logs: one JSON object per line on stderr.

Log collectors in a cluster parse JSON lines without configuration, and a
denial is searchable by its admission uid. Callers pass their fields as
`extra={"fields": {...}}`; objects themselves are never logged at info level
(they can be megabytes, and may hold data the log reader must not see).

Once `configure` owns the process's output, every line goes through one
`JsonLines` sink. While the server's event loop is bound to it, lines are
queued and written a few kilobytes at a time, or 10 ms after the first at
the latest (a write per line cost more than building the line), and
whatever is queued is written when the loop is unbound, before the process
exits. The lines logged on the admission hot path (`HotPathLog`) skip the
logging machinery: a LogRecord, the handler walk and its locks cost several
times the line itself on a server whose caches are full of TLS and HTTP.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import select
import stat
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any, Final, TextIO

import orjson

LOGGER_NAME: Final = "feedbackstore_webhook"
# A write of at most PIPE_BUF bytes to a pipe is atomic: the lines of several
# workers sharing the container's stderr pipe never interleave within one.
ATOMIC_WRITE_BYTES: Final = select.PIPE_BUF
# A write to a regular file is never interleaved with another (the kernel holds the
# file's lock for all of it), so lines to a file go in larger writes.
FILE_WRITE_BYTES: Final = 64 * 1024
# The longest a queued line waits for others to share its write.
LINGER_SECONDS: Final = 0.01


def logger(component: str) -> logging.Logger:
    return logging.getLogger(f"{LOGGER_NAME}.{component}")


class _Timestamps:
    """RFC 3339 in UTC with milliseconds, cheap enough for a line per request.

    The date-and-seconds part is formatted once per second and the
    milliseconds come from a table; the cache is one tuple, replaced whole, so
    threads never see half an update.
    """

    _MILLIS: Final = tuple(f".{ms:03d}Z" for ms in range(1000))

    def __init__(self) -> None:
        self._cached = (-1, "", b"")

    def format(self, created: float) -> str:
        second = int(created)
        cached = self._cached
        if cached[0] != second:
            cached = self._renew(second)
        return cached[1] + self._MILLIS[int((created - second) * 1000)]

    def line_start(self, created: float) -> bytes:
        """`{"time":"...",` as a JSON line starts."""
        second = int(created)
        cached = self._cached
        if cached[0] != second:
            cached = self._renew(second)
        return cached[2] + _LINE_MILLIS[int((created - second) * 1000)]

    def _renew(self, second: int) -> tuple[int, str, bytes]:
        text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        self._cached = (second, text, b'{"time":"' + text.encode())
        return self._cached


_LINE_MILLIS: Final = tuple(f'.{ms:03d}Z",'.encode() for ms in range(1000))
_TIMESTAMPS: Final = _Timestamps()


def _entry(created: float, level: str, name: str, msg: str, pid: int | None) -> dict[str, Any]:
    return {
        "time": _TIMESTAMPS.format(created),
        "level": level,
        "logger": name,
        "msg": msg,
        "pid": pid,
    }


class JsonFormatter(logging.Formatter):
    """`{"time", "level", "logger", "msg", "pid", ...fields}` per record."""

    def format(self, record: logging.LogRecord) -> str:
        entry = _entry(
            record.created, record.levelname.lower(), record.name, record.getMessage(),
            record.process,
        )  # fmt: skip
        fields = getattr(record, "fields", None)
        if fields:
            entry.update(fields)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


class JsonLines:
    """Complete lines to a stream, in order; batched while an event loop is bound.

    Lines logged on the bound loop's thread are queued and written together
    when they fill a write, or within LINGER_SECONDS at the latest: a
    write costs the server several µs of system time, a queued line less
    than one. Lines from other threads, or with no loop bound, are
    written at once, and unbinding writes whatever is queued. Each write is
    at most ATOMIC_WRITE_BYTES long (FILE_WRITE_BYTES to a regular file; cut
    between lines, a longer line goes alone) and goes straight to the
    stream's file descriptor when it has one.
    If the stream is gone (stderr closed), lines are dropped: there is nowhere
    left to report it.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._fd = _file_descriptor(stream)
        self._write_bytes = FILE_WRITE_BYTES if _is_file(self._fd) else ATOMIC_WRITE_BYTES
        self._queued: list[bytes] = []
        self._queued_bytes = 0
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._lock = threading.Lock()

    def write(self, line: bytes) -> None:
        """Queue or write one line, which ends with a newline."""
        loop = self._loop
        if loop is None or threading.get_ident() != self._loop_thread:
            with self._lock:
                self._put((line,))
            return
        # Only the loop's thread touches the queue: no lock on the hot path.
        if self._queued_bytes + len(line) > self._write_bytes:
            self._write_queued()  # they fill a write; this line starts the next one
        self._queued.append(line)
        self._queued_bytes += len(line)
        if self._timer is None:
            try:
                self._timer = loop.call_later(LINGER_SECONDS, self._lingered)
            except RuntimeError:  # the loop was closed without unbinding: no batching
                self._write_queued()

    def flush(self) -> None:
        """Write what is queued now (on the loop's thread; other threads' lines never wait)."""
        if self._loop is None or threading.get_ident() == self._loop_thread:
            self._write_queued()

    def bind(self, loop: asyncio.AbstractEventLoop | None) -> None:
        """Batch lines on `loop` (call on its thread); None writes what is queued and stops."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._write_queued()
        self._loop = loop
        self._loop_thread = threading.get_ident() if loop is not None else 0

    def _lingered(self) -> None:
        self._timer = None
        self._write_queued()

    def _write_queued(self) -> None:
        queued, self._queued, self._queued_bytes = self._queued, [], 0
        if queued:
            with self._lock:
                self._put(queued)

    def _put(self, lines: Sequence[bytes]) -> None:
        try:
            if self._fd is not None:
                # Whatever was printed to the stream itself goes first.
                self._stream.flush()
            chunk: list[bytes] = []
            size = 0
            for line in lines:
                if chunk and size + len(line) > self._write_bytes:
                    self._write(b"".join(chunk))
                    chunk, size = [], 0
                chunk.append(line)
                size += len(line)
            self._write(b"".join(chunk))
        except (OSError, ValueError):
            return

    def _write(self, data: bytes) -> None:
        if self._fd is None:
            self._stream.write(data.decode())
            self._stream.flush()
            return
        written = os.write(self._fd, data)
        if written < len(data):  # a signal cut the write short: go on from there
            view = memoryview(data)[written:]
            while view:
                view = view[os.write(self._fd, view) :]


def _is_file(fd: int | None) -> bool:
    try:
        return fd is not None and stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        return False


def _file_descriptor(stream: TextIO) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both
        return None


class _JsonLinesHandler(logging.Handler):
    """The logging side of the sink: records formatted by JsonFormatter, in line with the rest."""

    def __init__(self, sink: JsonLines) -> None:
        super().__init__()
        self.sink = sink
        self.setFormatter(JsonFormatter())

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.sink.write(self.format(record).encode() + b"\n")
        except Exception:  # logging's contract: report, never raise
            self.handleError(record)

    def flush(self) -> None:
        self.sink.flush()


# The sink `configure` installed (None: logging is configured by someone else).
_sink: JsonLines | None = None
_pid = os.getpid()


def _forked() -> None:
    global _pid  # the process id, refreshed in a forked child
    _pid = os.getpid()


os.register_at_fork(after_in_child=_forked)


class HotPathLog:
    """Lines logged per request: the same JSON line as through `logger(component)`, cheaper.

    The logger's level decides as always. When `configure` owns the output the
    line is built here and queued on its sink: no LogRecord, no handlers, and
    the part after the time serialized once per message (messages are
    constants; fields never reuse the five leading keys). Otherwise (a program
    or test that set logging up itself) the call goes through the logger
    unchanged, with the fields as `extra`.
    """

    __slots__ = ("_heads", "_logger")

    def __init__(self, component: str) -> None:
        self._logger = logger(component)
        self._heads: dict[tuple[str, str, int], bytes] = {}

    def info(self, msg: str, fields: dict[str, Any]) -> None:
        self._log(logging.INFO, "info", msg, fields)

    def warning(self, msg: str, fields: dict[str, Any]) -> None:
        self._log(logging.WARNING, "warning", msg, fields)

    def _log(self, level: int, level_name: str, msg: str, fields: dict[str, Any]) -> None:
        log = self._logger
        if not log.isEnabledFor(level):
            return
        sink = _sink
        if sink is None:
            log.log(level, msg, extra={"fields": fields})
            return
        key = (level_name, msg, _pid)
        head = self._heads.get(key)
        if head is None:
            entry = {"level": level_name, "logger": log.name, "msg": msg, "pid": _pid}
            head = self._heads[key] = orjson.dumps(entry)[1:-1]
        start = _TIMESTAMPS.line_start(time.time())
        if fields:
            tail = b"," + orjson.dumps(fields, default=str, option=orjson.OPT_APPEND_NEWLINE)[1:]
        else:
            tail = b"}\n"
        sink.write(start + head + tail)


@contextlib.contextmanager
def lines_batched_on(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """Batch log lines on `loop` while inside (see JsonLines); all written on the way out."""
    sink = _sink
    if sink is None:
        yield
        return
    sink.bind(loop)
    try:
        yield
    finally:
        sink.bind(None)


def configure(level: str, stream: TextIO | None = None) -> None:
    """Route every logger (aiohttp's too) to `stream` (stderr) as JSON lines at `level`."""
    global _sink  # this process's one log output
    # The lines carry no source location or thread: skip collecting them (the logging
    # HOWTO's optimisations).
    logging._srcfile = None
    logging.logThreads = False
    logging.logMultiprocessing = False
    if _sink is not None:
        _sink.flush()
    _sink = JsonLines(stream if stream is not None else sys.stderr)
    root = logging.getLogger()
    root.handlers[:] = [_JsonLinesHandler(_sink)]
    root.setLevel(level.upper())
