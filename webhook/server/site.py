"""A TLS listener for an aiohttp runner, with a handshake deadline.

aiohttp's sites leave asyncio's TLS handshake timeout at 60 s; a client that
opens connections and never finishes the handshake would hold them that long.
So the listener is asyncio's own server (`loop.create_server` with
`ssl_handshake_timeout`) around the runner's public protocol factory,
`AppRunner.server`. `close` stops accepting; `AppRunner.cleanup` then lets the
requests in flight finish, as it does for its own sites.
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass

from aiohttp import web

# aiohttp's sites' listen backlog.
_BACKLOG = 128


@dataclass(frozen=True, slots=True)
class TLSListener:
    server: asyncio.Server
    host: str | None

    @property
    def port(self) -> int:
        """The bound port (the kernel's choice when 0 was asked for)."""
        return int(self.server.sockets[0].getsockname()[1])

    @property
    def name(self) -> str:
        return f"https://{self.host or '0.0.0.0'}:{self.port}"  # noqa: S104

    def close(self) -> None:
        """Stop accepting connections; the open ones are the runner's to finish."""
        self.server.close()


async def listen(
    runner: web.AppRunner,
    host: str | None,
    port: int,
    *,
    ssl_context: ssl.SSLContext,
    handshake_timeout: float,
) -> TLSListener:
    """Listen on `host:port` for `runner` (set up) with TLS from `ssl_context`."""
    protocols = runner.server
    if protocols is None:
        raise RuntimeError("the runner is not set up")
    server = await asyncio.get_running_loop().create_server(
        protocols,
        host,
        port,
        ssl=ssl_context,
        backlog=_BACKLOG,
        reuse_address=True,
        ssl_handshake_timeout=handshake_timeout,
    )
    return TLSListener(server, host)
