"""The real console script: `serve` turns not-ready on SIGTERM, finishes requests in flight and
exits 0; `--dev` works out of the box."""

from __future__ import annotations

import asyncio
import pathlib
import re
import shlex
import signal
import ssl
import time
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
import trustme

from tests.support.admission_apiserver import accepted_answer, kubectl_denial_text
from tests.support.pki import SERVICE_DNS, PlainFiles, client_context, issue
from tests.support.reviews import create, duplicate_spec
from tests.support.servers import ConsoleServer, WebhookClient
from tests.support.waiting import eventually_async
from tests.webhook.server.test_tls import (
    HANDSHAKE_REFUSED,
    REFUSAL,
    legacy_client,
    served_fingerprint,
)


@pytest.fixture(name="console")
def _console(tmp_path: pathlib.Path) -> Iterator[Any]:
    started: list[ConsoleServer] = []

    def start(*args: str) -> ConsoleServer:
        server = ConsoleServer(list(args), cwd=tmp_path)
        started.append(server)
        return server

    yield start
    for server in started:
        server.kill()


def tls_args(files: PlainFiles) -> list[str]:
    return [
        "--tls-cert-file",
        str(files.cert),
        "--tls-private-key-file",
        str(files.key),
        "--host",
        "127.0.0.1",
    ]


def serving_port(server: ConsoleServer) -> int:
    entry = server.wait_log(lambda e: e.get("msg") == "serving")
    return int(entry["port"])


async def test_sigterm_turns_not_ready_finishes_in_flight_requests_and_exits_0(
    console: Any, serving_files: PlainFiles, ca: trustme.CA
) -> None:
    server: ConsoleServer = console(
        *tls_args(serving_files),
        "--port",
        "0",
        "--shutdown-delay",
        "1.5",
        "--shutdown-timeout",
        "10",
    )
    port = serving_port(server)
    context = client_context(ca)
    # A request in flight: headers and half the body sent before SIGTERM, the rest after.
    sent = create(duplicate_spec())
    body = orjson.dumps(sent)
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", port, ssl=context, server_hostname=SERVICE_DNS
    )
    writer.write(
        f"POST /validate HTTP/1.1\r\nHost: {SERVICE_DNS}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body[: len(body) // 2]
    )
    await writer.drain()
    client = WebhookClient(port, context, keepalive=False)
    try:
        assert await client.get("/readyz") == (200, b"ok\n")
        signalled = time.monotonic()
        server.signal(signal.SIGTERM)
        server.wait_log(lambda e: e.get("msg") == "shutting down")
        assert await client.get("/readyz") == (503, b"shutting down\n")
        assert (await client.get("/healthz"))[0] == 200
    finally:
        await client.close()
    writer.write(body[len(body) // 2 :])
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 15)
    length = int(re.search(rb"Content-Length: (\d+)", head, re.IGNORECASE).group(1))  # type: ignore[union-attr]
    answer = await asyncio.wait_for(reader.readexactly(length), 15)
    writer.close()
    assert accepted_answer(sent, int(head.split()[1]), answer)["allowed"] is False
    # Answered while draining: the connection is not kept alive for another call.
    assert b"\r\nconnection: close\r\n" in head.lower(), head
    assert server.wait(timeout=20) == 0
    assert time.monotonic() - signalled < 15
    messages = [e.get("msg") for e in server.logs]
    assert messages.index("shutting down") < messages.index("stopped")


@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1_1:DeprecationWarning")
async def test_the_real_process_rotates_its_certificate_and_refuses_old_tls(
    console: Any, serving_files: PlainFiles, ca: trustme.CA
) -> None:
    """The console script runs on uvloop; rotation and TLS settings must hold there too."""
    server: ConsoleServer = console(*tls_args(serving_files), "--port", "0")
    port = serving_port(server)
    context = client_context(ca)
    assert await served_fingerprint(port, context)
    new = issue(ca)
    serving_files.write(new)

    async def serving_new() -> bool:
        return await served_fingerprint(port, context) == new.fingerprint

    await eventually_async(serving_new)
    with pytest.raises(HANDSHAKE_REFUSED, match=REFUSAL):
        await served_fingerprint(port, legacy_client(ca, ssl.TLSVersion.TLSv1_1))
    server.signal(signal.SIGTERM)
    assert server.wait(timeout=20) == 0


async def test_sigint_stops_at_once_and_exits_0(console: Any, serving_files: PlainFiles) -> None:
    server: ConsoleServer = console(
        *tls_args(serving_files), "--port", "0", "--shutdown-delay", "30"
    )
    serving_port(server)
    server.signal(signal.SIGINT)
    assert server.wait(timeout=15) == 0


async def test_dev_mode_makes_certificates_and_prints_a_working_curl_command(
    console: Any, tmp_path: pathlib.Path
) -> None:
    server: ConsoleServer = console("--dev", "--port", "0")
    port = serving_port(server)
    hint = server.wait_stdout("curl")
    command = shlex.split(hint[hint.index("curl") :].replace("\\\n", " "))
    cacert = tmp_path / command[command.index("--cacert") + 1]
    url = next(arg for arg in command if arg.startswith("https://"))
    data = command[command.index("--data") + 1].encode()
    assert url == f"https://localhost:{port}/validate"
    assert cacert == tmp_path / "certs/dev/ca.crt"
    context = ssl.create_default_context(cafile=cacert)
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", port, ssl=context, server_hostname="localhost"
    )
    writer.write(
        b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode()
        + data
    )
    raw = await asyncio.wait_for(reader.read(), 15)
    writer.close()
    head, _, answer = raw.partition(b"\r\n\r\n")
    response = accepted_answer(orjson.loads(data), int(head.split()[1]), answer)
    assert kubectl_denial_text(response).startswith(
        'The FeedbackStore "support-feedback" is invalid: spec.human.scores[1].name: '
        'Duplicate value: "thumbs"'
    )
    server.signal(signal.SIGINT)
    assert server.wait(timeout=15) == 0


async def test_dev_mode_reuses_its_certificates(console: Any, tmp_path: pathlib.Path) -> None:
    first: ConsoleServer = console("--dev", "--port", "0")
    serving_port(first)
    ca_pem = (tmp_path / "certs/dev/ca.crt").read_bytes()
    first.signal(signal.SIGINT)
    assert first.wait(timeout=15) == 0
    second: ConsoleServer = console("--dev", "--port", "0")
    serving_port(second)
    assert (tmp_path / "certs/dev/ca.crt").read_bytes() == ca_pem
    second.signal(signal.SIGINT)
    assert second.wait(timeout=15) == 0


@pytest.mark.parametrize(
    ("args", "code", "expected"),
    [
        pytest.param(
            ["--port", "0"],
            2,
            "--tls-cert-file and --tls-private-key-file are required",
            id="no certificate flags is a usage error",
        ),
        pytest.param(
            ["--tls-cert-file", "nope.crt", "--tls-private-key-file", "nope.key", "--port", "0"],
            1,
            "cannot load the serving certificate",
            id="a missing certificate file stops the server with exit 1",
        ),
    ],
)
def test_a_server_that_cannot_start_says_why(
    console: Any, args: list[str], code: int, expected: str
) -> None:
    server: ConsoleServer = console(*args)
    assert server.wait(timeout=30) == code
    time.sleep(0.2)
    text = "".join(e.get("msg", "") + e.get("line", "") for e in server.logs)
    assert expected in text


def test_a_port_in_use_exits_1(console: Any, serving_files: PlainFiles) -> None:
    first: ConsoleServer = console(*tls_args(serving_files), "--port", "0")
    port = serving_port(first)
    second: ConsoleServer = console(*tls_args(serving_files), "--port", str(port))
    assert second.wait(timeout=60) == 1
    assert any(e.get("msg") == "cannot listen" for e in second.logs)
