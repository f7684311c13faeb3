"""An HTTP server on loopback that answers each request with what the test scripted for it.

For the client-side plumbing tested on its own (the informer's relist and resume, the doctor's
fetch and dry-run probe): the exact answers, in the exact order, and a record of what the client
asked, which the emulator (a whole API server) does not let a test choose. An unscripted path gets
404 with a NotFound Status, as kube-apiserver answers for a resource it does not serve.
"""

from __future__ import annotations

import http.server
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import orjson


@dataclass(frozen=True)
class Answer:
    """One response: a JSON body; or watch events, one line each, then the stream ends (or is
    held open until the server closes, as a watch waiting for changes is)."""

    status: int = 200
    body: Any = None
    events: tuple[dict[str, Any], ...] = ()
    hold: bool = False
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def streams(self) -> bool:
        return bool(self.events) or self.hold


def status(code: int, reason: str, message: str) -> Answer:
    """A failure as kube-apiserver sends it: a `Status` object."""
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    return Answer(code, body)


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    body: bytes


@dataclass
class ScriptedApiServer:
    """Answers per (method, path), taken in order; the last one scripted repeats."""

    port: int = 0
    requests: list[Request] = field(default_factory=list)
    _script: dict[tuple[str, str], list[Answer]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _closing: threading.Event = field(default_factory=threading.Event)
    _held: threading.Condition = field(default_factory=threading.Condition)
    _holding: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def answer(self, method: str, path: str, *answers: Answer) -> None:
        with self._lock:
            self._script.setdefault((method, path), []).extend(answers)

    def api_client(self) -> Any:
        """A `kubernetes.client.ApiClient` for this server (no auth, no global config)."""
        from kubernetes import client

        return client.ApiClient(client.Configuration(host=self.url))

    def wait_held(self, count: int = 1, timeout: float = 30.0) -> None:
        """Until `count` held streams are open: the client has done everything scripted."""
        with self._held:
            if not self._held.wait_for(lambda: self._holding >= count, timeout):
                raise AssertionError(f"{self._holding} held streams, not {count}: {self.requests}")

    def _next(self, method: str, path: str) -> Answer:
        with self._lock:
            queue = self._script.get((method, path))
            if not queue:
                return status(404, "NotFound", f"the server could not find {path}")
            return queue.pop(0) if len(queue) > 1 else queue[0]

    def _record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def _hold(self) -> None:
        with self._held:
            self._holding += 1
            self._held.notify_all()
        self._closing.wait()


@contextmanager
def scripted_apiserver() -> Iterator[ScriptedApiServer]:
    scripted = ScriptedApiServer()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_args: object) -> None:
            return None

        def _serve(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            query = dict(urllib.parse.parse_qsl(url.query))
            scripted._record(Request(self.command, url.path, query, body))
            answer = scripted._next(self.command, url.path)
            self.send_response(answer.status)
            self.send_header("Content-Type", "application/json")
            for name, value in answer.headers:
                self.send_header(name, value)
            if answer.streams:
                # A watch: no length, the stream ends when the connection closes.
                self.send_header("Connection", "close")
                self.end_headers()
                for event in answer.events:
                    self.wfile.write(orjson.dumps(event) + b"\n")
                    self.wfile.flush()
                if answer.hold:
                    scripted._hold()
                self.close_connection = True
                return
            payload = orjson.dumps(answer.body)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:
            self._serve()

        def do_POST(self) -> None:
            self._serve()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    scripted.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, name="scripted-apiserver", daemon=True)
    thread.start()
    try:
        yield scripted
    finally:
        scripted._closing.set()
        server.shutdown()
        server.server_close()
        thread.join(10)
