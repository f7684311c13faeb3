"""The JSON log lines of both processes: one formatter on stdlib logging, written by its
QueueListener thread; lines whole under concurrency, every one written at a graceful exit, and
the level respected."""

from __future__ import annotations

import asyncio
import io
import logging
import signal
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import aiohttp
import orjson
import pytest
import trustme

from tests.support.pki import PlainFiles, client_context
from tests.support.reviews import create, duplicate_spec, valid_spec
from tests.support.servers import ConsoleServer, WebhookClient
from tests.support.waiting import eventually, eventually_async
from tests.webhook.server.test_lifecycle import _console, serving_port, tls_args  # noqa: F401 (fixture)
from webhook.observability import logs
from webhook.observability.logs import JsonFormatter


@pytest.fixture(name="configured")
def _configured() -> Iterator[io.StringIO]:
    """`configure` on a test stream, with the process's logging put back afterwards."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level, logging.logThreads, logging.logMultiprocessing)
    stream = io.StringIO()
    try:
        yield stream
    finally:
        logs.stop()
        root.handlers[:], level, logging.logThreads, logging.logMultiprocessing = saved
        root.setLevel(level)


FIELDS = {
    "uid": "0f3c",
    "operation": "CREATE",
    "resource": "feedbackstores.agents.ctxmesh.ai",
    "namespace": "agents",
    "name": "support-feedback",
    "user": "jöhn",
    "dry_run": False,
    "why": "invalid",
    "problems": 1,
}


def written(stream: io.StringIO) -> list[dict[str, Any]]:
    """Every line logged so far (stopping the listener writes what it still holds)."""
    logs.stop()
    return [orjson.loads(line) for line in stream.getvalue().splitlines()]


def test_fields_in_one_mapping_make_the_line_s_keys_in_both_processes(
    configured: io.StringIO,
) -> None:
    logs.configure("info", configured)
    logs.logger("admission").info("denied", extra={"fields": FIELDS})
    logs.logger("status.writer").info("written", extra={"fields": {"object": "support"}})
    denied, status = written(configured)
    assert denied.pop("time")[:4] == status.pop("time")[:4]
    assert denied == {
        "level": "info",
        "logger": "feedbackstore.admission",
        "msg": "denied",
        "pid": denied["pid"],
        **FIELDS,
    }
    assert status == {
        "level": "info",
        "logger": "feedbackstore.status.writer",
        "msg": "written",
        "pid": denied["pid"],
        "object": "support",
    }


@pytest.mark.parametrize(
    ("level", "expected"),
    [
        pytest.param("info", ["denied", "odd"], id="at info both lines are written"),
        pytest.param("warning", ["odd"], id="at warning the info line is not written"),
    ],
)
def test_the_configured_level_decides(
    configured: io.StringIO, level: str, expected: list[str]
) -> None:
    logs.configure(level, configured)
    log = logs.logger("admission")
    log.info("denied", extra={"fields": FIELDS})
    log.warning("odd", extra={"fields": {"why": "foreign_resource"}})
    assert [entry["msg"] for entry in written(configured)] == expected


def test_lines_from_many_threads_are_whole_and_each_thread_s_in_order(
    configured: io.StringIO,
) -> None:
    logs.configure("info", configured)
    log = logs.logger("admission")

    def burst(thread: int) -> None:
        for n in range(500):
            log.info("denied", extra={"fields": {"thread": thread, "n": n, "pad": "é" * 300}})

    threads = [threading.Thread(target=burst, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    entries = written(configured)
    assert len(entries) == 8 * 500
    for t in range(8):
        assert [e["n"] for e in entries if e["thread"] == t] == list(range(500))


def test_an_exception_is_named_and_its_traceback_kept(configured: io.StringIO) -> None:
    logs.configure("info", configured)
    try:
        raise ValueError("boom")
    except ValueError:
        logging.getLogger("webhook.status.writer").exception("reconcile failed")
    (entry,) = written(configured)
    assert entry["error"] == "ValueError: boom"
    assert "Traceback" in entry["exception"]


def test_the_time_is_utc_with_milliseconds() -> None:
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "m", None, None)
    record.created = 1_700_000_000.9996
    assert orjson.loads(JsonFormatter().format(record))["time"] == "2023-11-14T22:13:20.999Z"


async def post_denials(
    port: int, ca: trustme.CA, count: int, answered: list[str] | None = None
) -> list[str]:
    """Up to `count` denials over 8 keep-alive connections, each connection stopping at its
    first failure (the server has closed); the uids answered 200 and denied, appended to
    `answered` as they come, for a test to watch."""
    client = WebhookClient(port, client_context(ca))
    answered = [] if answered is None else answered

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
    server: ConsoleServer = console(
        *tls_args(serving_files), "--port", "0", "--shutdown-delay", "1"
    )
    port = serving_port(server)
    # Denials keep coming until the port closes, the last ones still in flight when it does.
    answered: list[str] = []
    load = asyncio.create_task(post_denials(port, ca, 100_000, answered))
    await eventually_async(lambda: len(answered) >= 8, "denials answered before the signal")
    server.signal(signal.SIGTERM)
    await load
    assert await asyncio.to_thread(server.wait, 30) == 0
    lines = denial_lines(server)
    logged = [e["uid"] for e in lines]
    assert answered, "no denial was answered before the port closed"
    assert len(logged) == len(set(logged))
    assert set(answered) <= set(logged)
    for entry in lines:
        assert {
            k: entry[k]
            for k in ("operation", "namespace", "name", "user", "problems", "why", "level")
        } == {
            "operation": "CREATE",
            "namespace": "agents",
            "name": "support-feedback",
            "user": "jane@example.com",
            "problems": 1,
            "why": "invalid",
            "level": "info",
        }
    messages = [e.get("msg") for e in server.logs]
    assert messages.index("shutting down") < messages.index("stopped")


async def test_at_warning_level_denials_are_not_logged_but_bad_requests_are(
    console: Any, serving_files: PlainFiles, ca: trustme.CA
) -> None:
    with socket.socket() as probe:  # at warning level no "serving" line tells the port
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server: ConsoleServer = console(
        *tls_args(serving_files), "--port", str(port), "--log-level", "warning"
    )
    client = WebhookClient(port, client_context(ca))
    try:
        await eventually_async(lambda: ready(client))
        assert len(await post_denials(port, ca, 16)) == 16
        assert (await client.review(create(valid_spec())))[0] == 200
        assert (await client.post("/validate", b"{"))[0] == 400
    finally:
        await client.close()
    server.signal(signal.SIGTERM)
    assert await asyncio.to_thread(server.wait, 30) == 0
    assert denial_lines(server) == []
    assert [e["reason"] for e in server.logs if e.get("msg") == "bad request"] == ["not_json"]


def test_lines_are_written_without_waiting_for_a_stop(configured: io.StringIO) -> None:
    logs.configure("info", configured)
    logs.logger("admission").info("denied", extra={"fields": FIELDS})
    # Nothing here stops the logging: a line held until a stop never shows.
    eventually(lambda: "denied" in configured.getvalue(), interval=0.01, what="the line written")


def _switches(thread: threading.Thread) -> int:
    """How many times the kernel has woken `thread` (voluntary context switches)."""
    status = f"/proc/self/task/{thread.native_id}/status"
    with open(status) as lines:
        return next(int(line.split()[1]) for line in lines if line.startswith("voluntary"))


def test_the_log_thread_sleeps_while_nothing_is_logged(configured: io.StringIO) -> None:
    before = set(threading.enumerate())
    logs.configure("info", configured)
    (listener,) = set(threading.enumerate()) - before
    logs.logger("admission").info("denied", extra={"fields": FIELDS})
    # The line written: the thread goes back to sleep after it (one switch, allowed below).
    eventually(lambda: "denied" in configured.getvalue(), interval=0.01, what="the line written")
    woken = _switches(listener)
    time.sleep(0.5)
    assert _switches(listener) - woken <= 1, "an idle pod's log thread must not poll"
    assert [entry["msg"] for entry in written(configured)] == ["denied"]
