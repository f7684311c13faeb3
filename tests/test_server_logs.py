"""The server's JSON log lines: whole lines, in order, written a few kilobytes at a time or a
moment later, and never lost at a graceful exit; the hot-path denial line is the same JSON
object the logging machinery would write, at the same level."""

from __future__ import annotations

import asyncio
import logging
import pathlib
import signal
import socket
import threading
from collections.abc import Iterator
from typing import Any, TextIO

import aiohttp
import orjson
import pytest
import trustme

from tests.admission_support.fixtures import _ca, _serving_files  # noqa: F401 (fixtures)
from tests.admission_support.pki import PlainFiles, client_context
from tests.admission_support.reviews import create, duplicate_spec, valid_spec
from tests.admission_support.servers import ConsoleServer, WebhookClient
from tests.test_server_lifecycle import _console, serving_port, tls_args  # noqa: F401 (fixture)
from tests.test_server_tls import eventually
from webhook.server import logs
from webhook.server.logs import (
    ATOMIC_WRITE_BYTES,
    LINGER_SECONDS,
    HotPathLog,
    JsonFormatter,
    JsonLines,
)


class Writes:
    """The receiving end of a SOCK_SEQPACKET pair: every write() arrives as one message.

    The sending end is a real file descriptor, as stderr is, so the sink takes its
    direct-write path, and each of its writes can be told apart.
    """

    def __init__(self) -> None:
        self._receiver, self._sender = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._receiver.setblocking(False)
        self.stream: TextIO = open(self._sender.fileno(), "w", closefd=False)  # noqa: SIM115

    def taken(self) -> list[bytes]:
        """The writes that arrived since the last call, each one whole."""
        got = []
        while True:
            try:
                got.append(self._receiver.recv(1 << 20))
            except BlockingIOError:
                return got

    def close(self) -> None:
        self.stream.close()
        self._sender.close()
        self._receiver.close()


@pytest.fixture(name="writes")
def _writes() -> Iterator[Writes]:
    writes = Writes()
    yield writes
    writes.close()


def line(n: int, size: int = 100) -> bytes:
    return orjson.dumps({"n": n, "pad": "x" * size}) + b"\n"


async def written_soon(writes: Writes) -> list[bytes]:
    """The writes that arrive once the sink's linger time has passed (polled, for a busy box)."""
    got: list[bytes] = []
    for _ in range(1000):
        await asyncio.sleep(LINGER_SECONDS)
        if got := writes.taken():
            break
    await asyncio.sleep(2 * LINGER_SECONDS)
    return got + writes.taken()


async def test_queued_lines_are_written_together_a_moment_later(writes: Writes) -> None:
    sink = JsonLines(writes.stream)
    sink.bind(asyncio.get_running_loop())
    try:
        for n in range(3):
            sink.write(line(n))
        assert writes.taken() == []
        assert await written_soon(writes) == [line(0) + line(1) + line(2)]
        sink.write(line(3))
        assert await written_soon(writes) == [line(3)]
    finally:
        sink.bind(None)


async def test_lines_filling_an_atomic_write_go_at_once_cut_between_lines(
    writes: Writes,
) -> None:
    sink = JsonLines(writes.stream)
    sink.bind(asyncio.get_running_loop())
    # Non-ASCII text counts in bytes; one line alone is longer than an atomic write.
    lines = [line(n, 300) for n in range(20)] + [orjson.dumps({"name": "é" * 400}) + b"\n"]
    lines += [line(99, 2 * ATOMIC_WRITE_BYTES), line(100)]
    try:
        for each in lines:
            sink.write(each)
        at_once = writes.taken()
        got = at_once + await written_soon(writes)
    finally:
        sink.bind(None)
    assert len(at_once) >= 3
    assert b"".join(got) == b"".join(lines)
    for write in got:
        assert write.endswith(b"\n")
        assert len(write) <= ATOMIC_WRITE_BYTES or write == line(99, 2 * ATOMIC_WRITE_BYTES)


async def test_a_regular_file_gets_every_line_whole_and_in_order(tmp_path: pathlib.Path) -> None:
    with (tmp_path / "log").open("a") as stream:
        sink = JsonLines(stream)
        sink.bind(asyncio.get_running_loop())
        lines = [line(n, 300) for n in range(500)]
        for each in lines:
            sink.write(each)
        sink.bind(None)
    assert (tmp_path / "log").read_bytes() == b"".join(lines)


@pytest.mark.parametrize(
    "bound",
    [pytest.param(False, id="with no loop bound each line is written at once"),
     pytest.param(True, id="a line from another thread than the loop's is written at once")],
)  # fmt: skip
async def test_lines_that_cannot_wait_for_the_loop_are_written_at_once(
    writes: Writes, bound: bool
) -> None:
    sink = JsonLines(writes.stream)
    if bound:
        sink.bind(asyncio.get_running_loop())
    try:
        thread = threading.Thread(target=sink.write, args=(line(1),))
        thread.start()
        thread.join()
        assert writes.taken() == [line(1)]
    finally:
        sink.bind(None)


async def test_unbinding_the_loop_writes_everything_queued(writes: Writes) -> None:
    sink = JsonLines(writes.stream)
    sink.bind(asyncio.get_running_loop())
    for n in range(5):
        sink.write(line(n))
    sink.bind(None)
    assert writes.taken() == [b"".join(line(n) for n in range(5))]
    await asyncio.sleep(3 * LINGER_SECONDS)
    assert writes.taken() == []


def test_a_stream_without_a_file_descriptor_gets_the_same_lines() -> None:
    import io

    stream = io.StringIO()
    sink = JsonLines(stream)
    sink.write(line(1))
    sink.write(orjson.dumps({"name": "é"}) + b"\n")
    assert stream.getvalue().encode() == line(1) + orjson.dumps({"name": "é"}) + b"\n"


@pytest.fixture(name="configured")
def _configured(writes: Writes) -> Iterator[Writes]:
    """`configure` on a test stream, with the process's logging put back afterwards."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level, logs._sink, logging._srcfile,
             logging.logThreads, logging.logMultiprocessing)  # fmt: skip
    try:
        yield writes
    finally:
        (root.handlers[:], level, logs._sink, logging._srcfile,
         logging.logThreads, logging.logMultiprocessing) = saved  # fmt: skip
        root.setLevel(level)


FIELDS = {"uid": "0f3c", "operation": "CREATE", "resource": "feedbackstores.agents.ctxmesh.ai",
          "namespace": "agents", "name": "support-feedback", "user": "jöhn", "dry_run": False,
          "why": "invalid", "problems": 1}  # fmt: skip


def test_the_hot_path_line_is_the_line_logging_writes(configured: Writes) -> None:
    logs.configure("info", configured.stream)
    HotPathLog("admission").info("denied", FIELDS)
    logs.logger("admission").info("denied", extra={"fields": FIELDS})
    fast, slow = (orjson.loads(write) for write in configured.taken())
    assert fast.pop("time")[:19] == slow.pop("time")[:19]
    assert list(fast) == list(slow)
    assert fast == slow == {"level": "info", "logger": "feedbackstore_webhook.admission",
                            "msg": "denied", "pid": fast["pid"], **FIELDS}  # fmt: skip


@pytest.mark.parametrize(
    ("level", "written"),
    [pytest.param("info", ["denied", "odd"], id="at info both lines are written"),
     pytest.param("warning", ["odd"], id="at warning the info line is not even built")],
)  # fmt: skip
def test_the_hot_path_respects_the_configured_level(
    configured: Writes, level: str, written: list[str]
) -> None:
    logs.configure(level, configured.stream)
    log = HotPathLog("admission")
    log.info("denied", FIELDS)
    log.warning("odd", {"why": "foreign_resource"})
    assert [orjson.loads(write)["msg"] for write in configured.taken()] == written


def test_a_line_without_fields_is_still_one_json_object(configured: Writes) -> None:
    logs.configure("info", configured.stream)
    HotPathLog("admission").warning("odd", {})
    (write,) = configured.taken()
    assert write.endswith(b"}\n")
    assert orjson.loads(write)["msg"] == "odd"


def test_the_formatter_and_the_hot_path_share_the_time_format() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "m", None, None)
    record.created = 1_700_000_000.9996
    assert orjson.loads(JsonFormatter().format(record))["time"] == "2023-11-14T22:13:20.999Z"


async def post_denials(port: int, ca: trustme.CA, count: int) -> list[str]:
    """Up to `count` denials over 8 keep-alive connections, each connection stopping at its
    first failure (the server has closed); the uids answered 200 and denied."""
    client = WebhookClient(port, client_context(ca))
    answered: list[str] = []

    async def connection(share: int) -> None:
        for _ in range(share):
            sent = create(duplicate_spec())
            try:
                status, body = await client.review(sent)
            except (OSError, aiohttp.ClientError):
                return  # the server stopped listening: never answered
            if status == 200 and orjson.loads(body)["response"]["allowed"] is False:
                answered.append(sent["request"]["uid"])

    try:
        await asyncio.gather(*(connection(count // 8) for _ in range(8)))
    finally:
        await client.close()
    return answered


async def ready(client: WebhookClient) -> bool:
    try:
        return (await client.get("/readyz"))[0] == 200
    except (OSError, aiohttp.ClientError):
        return False


def denial_lines(server: ConsoleServer) -> list[dict[str, Any]]:
    assert [e for e in server.logs if e.get("msg") == "(not JSON)"] == []
    return [e for e in server.logs if e.get("msg") == "denied"]


async def test_every_answered_denial_has_one_whole_line_even_with_sigterm_mid_load(
    console: Any, serving_files: PlainFiles, ca: trustme.CA
) -> None:
    server: ConsoleServer = console(*tls_args(serving_files), "--port", "0",
                                    "--shutdown-delay", "1")  # fmt: skip
    port = serving_port(server)
    # Denials keep coming until the port closes, the last ones still in flight when it does.
    load = asyncio.create_task(post_denials(port, ca, 100_000))
    await asyncio.sleep(0.5)
    server.signal(signal.SIGTERM)
    answered = await load
    assert await asyncio.to_thread(server.wait, 30) == 0
    lines = denial_lines(server)
    logged = [e["uid"] for e in lines]
    assert answered, "no denial was answered before the port closed"
    assert len(logged) == len(set(logged))
    assert set(answered) <= set(logged)
    for entry in lines:
        assert {k: entry[k] for k in ("operation", "namespace", "name", "user", "problems",
                                      "why", "level")} == {
            "operation": "CREATE", "namespace": "agents", "name": "support-feedback",
            "user": "jane@example.com", "problems": 1, "why": "invalid", "level": "info",
        }  # fmt: skip
    messages = [e.get("msg") for e in server.logs]
    assert messages.index("shutting down") < messages.index("stopped")


async def test_at_warning_level_denials_are_not_logged_but_bad_requests_are(
    console: Any, serving_files: PlainFiles, ca: trustme.CA
) -> None:
    with socket.socket() as probe:  # at warning level no "serving" line tells the port
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server: ConsoleServer = console(*tls_args(serving_files), "--port", str(port),
                                    "--log-level", "warning")  # fmt: skip
    client = WebhookClient(port, client_context(ca))
    try:
        await eventually(lambda: ready(client))
        assert len(await post_denials(port, ca, 16)) == 16
        assert (await client.review(create(valid_spec())))[0] == 200
        assert (await client.post("/validate", b"{"))[0] == 400
    finally:
        await client.close()
    server.signal(signal.SIGTERM)
    assert await asyncio.to_thread(server.wait, 30) == 0
    assert denial_lines(server) == []
    assert [e["reason"] for e in server.logs if e.get("msg") == "bad request"] == ["not_json"]
