"""A TLS port for an aiohttp application, with a handshake deadline.

aiohttp's sites leave asyncio's TLS handshake timeout at 60 s; a client that
opens connections and never finishes the handshake would hold them that long.
So the port is asyncio's own server (`loop.create_server` with
`ssl_handshake_timeout`) making aiohttp's protocol for the runner's
`AppRunner.server`, with two changes (`_Connection`): a request head the
parser refuses is answered as every bad request is, and the connections open
at once are capped.
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass
from typing import Any, Final

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError, LineTooLong

from webhook import replies
from webhook.server.config import ServerConfig
from webhook.server.refusal import refuse
from webhook.server.webhook_metrics import WebhookMetrics

# aiohttp's sites' listen backlog.
_BACKLOG = 128
# After a 408/413 the unread rest of the body is drained this long, then dropped.
_LINGERING_SECONDS = 2.0
# aiohttp's own limits on the request head, stated so a refusal can name them:
# kube-apiserver sends a short request line and a dozen short headers.
MAX_LINE_BYTES: Final = 8190
MAX_HEADERS: Final = 128
# What aiohttp's parser says when there are more; it has no exception of its own.
_TOO_MANY_HEADERS: Final = "Too many headers received"


class _Connection(web.RequestHandler):
    """aiohttp's HTTP protocol, refusing a request head it cannot parse as every bad request is
    refused (`refusal.refuse`): a JSON Status, one warning line, counted. aiohttp's own answer is
    a plain-text 400 logged at `error` with a traceback, as if the fault were the server's.
    `handle_error` is the hook aiohttp's protocol calls with the parser's exception."""

    __slots__ = ("_manager_of", "_max_connections", "_metrics")

    def __init__(
        self, manager: web.Server, metrics: WebhookMetrics, max_connections: int, **settings: Any
    ) -> None:
        super().__init__(manager, **settings)
        self._manager_of = manager
        self._metrics = metrics
        self._max_connections = max_connections

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Past `max_connections` open at once, a new connection is closed at once (counted,
        not logged: a flood of log lines would be a second flood)."""
        super().connection_made(transport)
        if len(self._manager_of.connections) > self._max_connections:
            self._metrics.bad_requests.labels("too_many_connections").inc()
            self.force_close()
            transport.close()

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if not isinstance(exc, HttpProcessingError) or request.writer.output_size:
            return super().handle_error(request, status, exc, message)
        if isinstance(exc, LineTooLong):
            code, reason, text = 431, "header_too_large", replies.header_too_large(MAX_LINE_BYTES)
        elif exc.message == _TOO_MANY_HEADERS:
            code, reason, text = 431, "too_many_headers", replies.too_many_headers(MAX_HEADERS)
        else:
            code, reason, text = 400, "bad_http", replies.bad_http(exc.message)
        # The connection's state after a broken head is unknown: answer, then close it.
        return refuse(self._metrics, request, code, reason, text, close=True)


@dataclass(frozen=True, slots=True)
class TLSPort:
    runner: web.AppRunner
    server: asyncio.Server
    host: str | None

    @property
    def port(self) -> int:
        """The bound port (the kernel's choice when 0 was asked for)."""
        return int(self.server.sockets[0].getsockname()[1])

    @property
    def name(self) -> str:
        return f"https://{self.host or '0.0.0.0'}:{self.port}"  # noqa: S104

    async def close(self) -> None:
        """Stop accepting, let the requests in flight finish (bounded), then close."""
        self.server.close()
        await self.runner.cleanup()


async def listen(
    app: web.Application,
    config: ServerConfig,
    port: int,
    context: ssl.SSLContext,
    metrics: WebhookMetrics,
) -> TLSPort:
    settings: dict[str, Any] = {
        "access_log": None,
        "keepalive_timeout": config.idle_timeout,
        "lingering_time": _LINGERING_SECONDS,
        "max_line_size": MAX_LINE_BYTES,
        "max_field_size": MAX_LINE_BYTES,
        "max_headers": MAX_HEADERS,
    }
    runner = web.AppRunner(app, shutdown_timeout=config.shutdown_timeout, **settings)
    await runner.setup()
    manager = runner.server
    assert manager is not None  # set up just above
    loop = asyncio.get_running_loop()

    def connection() -> _Connection:
        return _Connection(manager, metrics, config.max_connections, loop=loop, **settings)

    try:
        server = await loop.create_server(
            connection,
            config.host,
            port,
            ssl=context,
            backlog=_BACKLOG,
            reuse_address=True,
            ssl_handshake_timeout=config.handshake_timeout,
        )
    except BaseException:
        await runner.cleanup()
        raise
    return TLSPort(runner, server, config.host)
