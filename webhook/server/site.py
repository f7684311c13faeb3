"""A TLS port for an aiohttp application, with a handshake deadline.

aiohttp's sites leave asyncio's TLS handshake timeout at 60 s; a client that
opens connections and never finishes the handshake would hold them that long.
So the port is asyncio's own server (`loop.create_server` with
`ssl_handshake_timeout`) around the runner's public protocol factory,
`AppRunner.server`.
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass

from aiohttp import web

from webhook.server.config import ServerConfig

# aiohttp's sites' listen backlog.
_BACKLOG = 128
# After a 408/413 the unread rest of the body is drained this long, then dropped.
_LINGERING_SECONDS = 2.0


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
    app: web.Application, config: ServerConfig, port: int, context: ssl.SSLContext
) -> TLSPort:
    runner = web.AppRunner(
        app,
        access_log=None,
        keepalive_timeout=config.idle_timeout,
        shutdown_timeout=config.shutdown_timeout,
        lingering_time=_LINGERING_SECONDS,
    )
    await runner.setup()
    assert runner.server is not None  # set up just above
    try:
        server = await asyncio.get_running_loop().create_server(
            runner.server,
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
