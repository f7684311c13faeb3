"""A TLS listening site with a handshake deadline.

aiohttp's TCPSite leaves asyncio's TLS handshake timeout at 60 s; a client
that opens connections and never finishes the handshake would hold them that
long. This site sets it, and SO_REUSEPORT so several worker processes can
listen on one port and let the kernel spread connections between them.
"""

from __future__ import annotations

import asyncio
import ssl

from aiohttp import web


class TLSSite(web.BaseSite):
    __slots__ = ("_bound_port", "_handshake_timeout", "_host", "_port", "_reuse_port")

    def __init__(
        self,
        runner: web.BaseRunner,
        host: str | None,
        port: int,
        *,
        ssl_context: ssl.SSLContext,
        handshake_timeout: float,
        reuse_port: bool = False,
    ) -> None:
        super().__init__(runner, ssl_context=ssl_context)
        self._host = host
        self._port = port
        self._bound_port = port
        self._handshake_timeout = handshake_timeout
        self._reuse_port = reuse_port

    @property
    def name(self) -> str:
        return f"https://{self._host or '0.0.0.0'}:{self._bound_port}"  # noqa: S104

    @property
    def port(self) -> int:
        """The bound port (the kernel's choice when 0 was asked for)."""
        return self._bound_port

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None
        self._server = await asyncio.get_running_loop().create_server(
            server,
            self._host,
            self._port,
            ssl=self._ssl_context,
            backlog=self._backlog,
            reuse_address=True,
            reuse_port=self._reuse_port or None,
            ssl_handshake_timeout=self._handshake_timeout,
        )
        sockets = self._server.sockets
        if sockets:
            self._bound_port = sockets[0].getsockname()[1]
