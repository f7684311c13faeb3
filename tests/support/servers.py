"""Webhook servers for the tests: in-process on the test's event loop, or the real console script.

Clients reach them as kube-apiserver does: by the Service DNS name (resolved
to 127.0.0.1 by a resolver standing in for cluster DNS), verifying the chain
and that name.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pathlib
import queue
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import aiohttp
import orjson
import trustme
from aiohttp.abc import AbstractResolver, ResolveResult

from tests.support.pki import SERVICE_DNS, PlainFiles
from webhook.server.config import ServerConfig
from webhook.server.run import RunningServer, start


class ServiceResolver(AbstractResolver):
    """Cluster DNS for one name: the Service resolves to the loopback address."""

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        assert host == SERVICE_DNS, f"only the Service name is resolvable here, not {host}"
        return [
            ResolveResult(
                hostname=host,
                host="127.0.0.1",
                port=port,
                family=socket.AF_INET,
                proto=0,
                flags=socket.AI_NUMERICHOST,
            )
        ]

    async def close(self) -> None:
        return None


class WebhookClient:
    """An HTTPS client calling the webhook the way kube-apiserver does."""

    def __init__(self, port: int, context: ssl.SSLContext, *, keepalive: bool = True) -> None:
        self.port = port
        self.base = f"https://{SERVICE_DNS}:{port}"
        connector = aiohttp.TCPConnector(
            ssl=context, resolver=ServiceResolver(), force_close=not keepalive, limit=64
        )
        self.session = aiohttp.ClientSession(
            connector=connector, timeout=aiohttp.ClientTimeout(total=60)
        )

    async def review(self, sent: Mapping[str, Any]) -> tuple[int, bytes]:
        return await self.post("/validate", orjson.dumps(sent))

    async def post(
        self, path: str, body: bytes, content_type: str = "application/json"
    ) -> tuple[int, bytes]:
        headers = {"Content-Type": content_type}
        async with self.session.post(self.base + path, data=body, headers=headers) as response:
            return response.status, await response.read()

    async def get(self, path: str) -> tuple[int, bytes]:
        async with self.session.get(self.base + path) as response:
            return response.status, await response.read()

    async def metric(self, sample: str) -> float:
        """The value of one sample line (`name{labels}`) of /metrics, 0 when absent."""
        status, body = await self.get("/metrics")
        assert status == 200
        for line in body.decode().splitlines():
            name, _, value = line.rpartition(" ")
            if name == sample:
                return float(value)
        return 0.0

    async def close(self) -> None:
        await self.session.close()


def config_for(cert: pathlib.Path, key: pathlib.Path, **overrides: Any) -> ServerConfig:
    """A test server: loopback, a free port, fast certificate polling, no shutdown delay."""
    base = ServerConfig(
        cert_file=cert,
        key_file=key,
        host="127.0.0.1",
        port=0,
        cert_poll_interval=0.1,
        shutdown_delay=0.0,
        shutdown_timeout=5.0,
    )
    return dataclasses.replace(base, **overrides)


@contextlib.asynccontextmanager
async def running_webhook(config: ServerConfig) -> AsyncIterator[RunningServer]:
    server = await start(config)
    try:
        yield server
    finally:
        await server.stop()


@dataclasses.dataclass
class Webhook:
    """A running in-process server, its certificate files and a verifying client (the server
    tests' `webhook` fixture, tests/webhook/server/conftest.py)."""

    server: RunningServer
    client: WebhookClient
    ca: trustme.CA
    files: PlainFiles

    @property
    def port(self) -> int:
        return self.server.port


# `start_webhook`'s value: call it with ServerConfig overrides, get a started Webhook.
WebhookFactory = Callable[..., Any]


def console_script() -> str:
    """The installed `feedbackstore-webhook` entry point next to this interpreter."""
    script = pathlib.Path(sys.executable).parent / "feedbackstore-webhook"
    assert script.exists(), f"console script not installed at {script}"
    return str(script)


class ConsoleServer:
    """`feedbackstore-webhook serve ...` as a child process, its JSON log lines collected."""

    def __init__(self, args: list[str], cwd: pathlib.Path) -> None:
        self.process = subprocess.Popen(
            [console_script(), "serve", *args],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self.logs: list[dict[str, Any]] = []
        self.stdout: list[str] = []
        self._lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self._readers = [
            threading.Thread(target=self._read_logs, daemon=True),
            threading.Thread(target=self._read_stdout, daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read_logs(self) -> None:
        assert self.process.stderr is not None
        for raw in self.process.stderr:
            try:
                entry = orjson.loads(raw)
            except orjson.JSONDecodeError:
                entry = {"msg": "(not JSON)", "line": raw.decode(errors="replace")}
            self.logs.append(entry)
            self._lines.put(entry)

    def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            self.stdout.append(raw.decode())

    def wait_log(
        self, matches: Callable[[dict[str, Any]], bool], timeout: float = 30
    ) -> dict[str, Any]:
        """The first log entry (seen so far or arriving) that `matches`."""
        for entry in list(self.logs):
            if matches(entry):
                return entry
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                entry = self._lines.get(timeout=min(left, 0.5))
            except queue.Empty:
                if self.process.poll() is not None and self._lines.empty():
                    break
                continue
            if matches(entry):
                return entry
        raise AssertionError(f"no matching log line; exit={self.process.poll()} logs={self.logs}")

    def wait_stdout(self, fragment: str, timeout: float = 30) -> str:
        """Everything printed on stdout, once `fragment` has appeared in it."""
        deadline = time.monotonic() + timeout
        while fragment not in "".join(self.stdout):
            assert time.monotonic() < deadline, f"{fragment!r} never printed: {self.stdout}"
            time.sleep(0.05)
        return "".join(self.stdout)

    def signal(self, sig: signal.Signals) -> None:
        self.process.send_signal(sig)

    def wait(self, timeout: float) -> int:
        """The exit code, once every line the process wrote is in `logs` and `stdout`: its pipes
        reach end-of-file after it exits, and only then have the readers seen its last lines."""
        deadline = time.monotonic() + timeout
        code = self.process.wait(timeout)
        for reader in self._readers:
            reader.join(max(deadline - time.monotonic(), 1.0))
            assert not reader.is_alive(), "the process exited but its output never ended"
        return code

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)
