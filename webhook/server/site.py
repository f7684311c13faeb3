"""A TLS port for an aiohttp application: a handshake deadline, and a connection table that
makes room rather than lock anyone out.

aiohttp's sites leave asyncio's TLS handshake timeout at 60 s, and asyncio's server TLS
(`create_server(ssl=...)`) shows a connection to anyone only once its handshake is done: a
handshake left unfinished could be neither counted nor closed. So the port accepts on its own
(`_accept`), each socket in the table (`connections.ConnectionTable`) from its accept, and hands
it to the loop's TLS (`loop.connect_accepted_socket`, with a handshake deadline) and then to
aiohttp's protocol for the runner's `AppRunner.server` (`_Connection`), which answers a request
head the parser refuses as every bad request is answered, and tells the table when a request is
in hand.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Final

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError, LineTooLong

from webhook import replies
from webhook.observability.logs import logger
from webhook.server.config import ServerConfig
from webhook.server.connections import ConnectionTable, Slot
from webhook.server.refusal import refuse
from webhook.server.webhook_metrics import WebhookMetrics

_log = logger("server")

# aiohttp's sites' listen backlog.
_BACKLOG = 128
# After an accept fails for want of descriptors or buffers, as asyncio's own server waits.
_ACCEPT_RETRY_SECONDS = 1.0
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
    `handle_error` is the hook aiohttp's protocol calls with the parser's exception;
    `_handle_request` the one around each request, from its parsed head to its answer sent."""

    __slots__ = ("_metrics", "_slot", "_table")

    def __init__(
        self,
        manager: web.Server,
        metrics: WebhookMetrics,
        table: ConnectionTable,
        slot: Slot,
        **settings: Any,
    ) -> None:
        super().__init__(manager, **settings)
        self._metrics = metrics
        self._table = table
        self._slot = slot

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._slot.handshaking = False
        super().connection_made(transport)

    def connection_lost(self, exc: BaseException | None) -> None:
        self._table.remove(self._slot)
        super().connection_lost(exc)

    async def _handle_request(self, *args: Any, **kwargs: Any) -> tuple[web.StreamResponse, bool]:
        self._table.busy(self._slot)
        try:
            return await super()._handle_request(*args, **kwargs)
        finally:
            self._table.idle(self._slot)

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


def _listening(host: str | None, port: int) -> list[socket.socket]:
    """Bound as `loop.create_server` binds: every address `host` resolves to (None: every
    interface), IPv6 sockets IPv6 only."""
    listeners: list[socket.socket] = []
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        for family, kind, proto, _, address in dict.fromkeys(found):
            listener = socket.socket(family, kind, proto)
            listeners.append(listener)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            listener.bind(address)
            listener.listen(_BACKLOG)
            listener.setblocking(False)
    except BaseException:
        for listener in listeners:
            listener.close()
        raise
    return listeners


def _shut(sock: socket.socket) -> Callable[[], None]:
    """Closing a slot: the connection ends whoever holds the socket now (its handshake, or its
    transport, which then sees it end)."""

    def shut() -> None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)

    return shut


async def _accept(
    listener: socket.socket,
    table: ConnectionTable,
    metrics: WebhookMetrics,
    handshake: Callable[[socket.socket, Slot], Coroutine[Any, Any, None]],
) -> None:
    """Each accepted socket takes a slot (making room), or is refused when every slot is
    answering a request. Counted, never logged: a flood of log lines would be a second flood."""
    loop = asyncio.get_running_loop()
    handshakes: set[asyncio.Task[None]] = set()
    while True:
        try:
            sock, _ = await loop.sock_accept(listener)
        except ConnectionAbortedError:  # the client gave up while queued
            continue
        except OSError as error:  # out of descriptors or buffers: as asyncio's server, wait
            _log.warning("accept failed", extra={"fields": {"error": str(error)}})
            await asyncio.sleep(_ACCEPT_RETRY_SECONDS)
            continue
        slot = Slot(_shut(sock))
        admission = table.admit(slot)
        if admission.evicted is not None:
            metrics.connections_evicted.labels(admission.evicted.state).inc()
            admission.evicted.close()
        if not admission.admitted:
            metrics.bad_requests.labels("too_many_connections").inc()
            sock.close()
            continue
        task = loop.create_task(handshake(sock, slot))
        handshakes.add(task)
        task.add_done_callback(handshakes.discard)


@dataclass(frozen=True, slots=True)
class TLSPort:
    runner: web.AppRunner
    listeners: list[socket.socket]
    accepting: list[asyncio.Task[None]]
    host: str | None
    table: ConnectionTable

    @property
    def port(self) -> int:
        """The bound port (the kernel's choice when 0 was asked for)."""
        return int(self.listeners[0].getsockname()[1])

    @property
    def name(self) -> str:
        return f"https://{self.host or '0.0.0.0'}:{self.port}"  # noqa: S104

    async def close(self) -> None:
        """Stop accepting, drop handshakes not done, let the requests in flight finish (bounded),
        then close."""
        for task in self.accepting:
            task.cancel()
        await asyncio.gather(*self.accepting, return_exceptions=True)
        for listener in self.listeners:
            listener.close()
        for slot in self.table.handshaking():
            slot.close()
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
    table = ConnectionTable(config.max_connections)

    async def handshake(sock: socket.socket, slot: Slot) -> None:
        def connection() -> _Connection:
            return _Connection(manager, metrics, table, slot, loop=loop, **settings)

        try:
            await loop.connect_accepted_socket(
                connection, sock, ssl=context, ssl_handshake_timeout=config.handshake_timeout
            )
        except OSError:  # refused, timed out, hung up, or closed to make room
            table.remove(slot)
            sock.close()

    try:
        listeners = _listening(config.host, port)
    except BaseException:
        await runner.cleanup()
        raise
    accepting = [
        loop.create_task(_accept(listener, table, metrics, handshake)) for listener in listeners
    ]
    return TLSPort(runner, listeners, accepting, config.host, table)
