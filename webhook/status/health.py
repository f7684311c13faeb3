"""`/healthz`, `/readyz` and `/metrics` on plain HTTP for probes and Prometheus: the standard
library's threading server suits the thread-based writer; no TLS (nothing secret, in-cluster).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from webhook import replies
from webhook.observability.metrics_registry import CONTENT_TYPE

_OK = replies.PROBE_OK.encode()
_NOT_READY = replies.PROBE_NOT_READY.encode()


class HealthServer:
    def __init__(
        self,
        host: str,
        port: int,
        alive: Callable[[], bool],
        ready: Callable[[], bool],
        metrics: Callable[[], bytes],
    ) -> None:
        routes: dict[str, Callable[[], tuple[HTTPStatus, str, bytes]]] = {
            "/healthz": lambda: _probe(alive()),
            "/readyz": lambda: _probe(ready()),
            "/metrics": lambda: (HTTPStatus.OK, CONTENT_TYPE, metrics()),
        }

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                route = routes.get(self.path.split("?", 1)[0])
                if route is None:
                    status, ctype, body = HTTPStatus.NOT_FOUND, "text/plain", b"not found\n"
                else:
                    status, ctype, body = route()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                """Probes every few seconds are not worth a log line each."""

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="status-health", daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _probe(ok: bool) -> tuple[HTTPStatus, str, bytes]:
    if ok:
        return HTTPStatus.OK, "text/plain", _OK
    return HTTPStatus.SERVICE_UNAVAILABLE, "text/plain", _NOT_READY
