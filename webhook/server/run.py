"""Run one server process from start to a graceful exit.

On SIGTERM (the kubelet stopping the pod) the server turns not-ready at once,
keeps accepting for `shutdown_delay` seconds so Service endpoints and
kube-apiserver stop sending it new connections, then stops listening, lets
requests in flight finish (at most `shutdown_timeout` seconds) and exits 0.
SIGINT (Ctrl-C) skips the delay; a second signal skips it too.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from webhook.observability.logs import logger
from webhook.server.app import (
    CERTIFICATE,
    LIFECYCLE,
    METRICS,
    Lifecycle,
    build_app,
    build_probe_app,
)
from webhook.server.config import ServerConfig
from webhook.server.site import TLSPort, listen
from webhook.server.tls import CertificateError

_log = logger("server")


def run_server(config: ServerConfig, on_serving: Callable[[int], None] = lambda _: None) -> int:
    """Serve in this process until stopped; the exit code (1 when it cannot start)."""
    try:
        with asyncio.Runner(loop_factory=_fast_loop_factory()) as runner:
            runner.run(serve(config, on_serving))
    except CertificateError as error:
        _log.error("cannot load the serving certificate", extra={"fields": {"error": str(error)}})
        return 1
    except OSError as error:
        _log.error("cannot listen", extra={"fields": {"error": str(error), "port": config.port}})
        return 1
    return 0


def _fast_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop where it is installed: its TLS and I/O cost less than asyncio's (asyncio's loop ran
    17 % more instructions per small review, bench/admission/instructions.py)."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


async def serve(config: ServerConfig, on_serving: Callable[[int], None] = lambda _: None) -> None:
    # SIGTERM and SIGINT, in the order they arrive.
    signals: asyncio.Queue[signal.Signals] = asyncio.Queue()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, signals.put_nowait, sig)
    running = await start(config)
    # What start-up loaded lives as long as the process: out of the collector's full passes,
    # which then walk only what requests allocate (7.5 % fewer instructions per review,
    # bench/admission/instructions.py).
    gc.freeze()
    try:
        on_serving(running.port)
        first = await signals.get()
        delay = config.shutdown_delay if first == signal.SIGTERM else 0.0
        _log.info(
            "shutting down",
            extra={"fields": {"signal": first.name, "delay_seconds": delay,
                              "timeout_seconds": config.shutdown_timeout}},
        )  # fmt: skip
        running.lifecycle.shutting_down = True
        if delay:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(signals.get(), delay)
    finally:
        await running.stop()


@dataclass(frozen=True, slots=True)
class RunningServer:
    """A started server: its app (for state), its port, and the probe port."""

    app: web.Application
    site: TLSPort
    probe_site: TLSPort | None = None

    @property
    def port(self) -> int:
        return self.site.port

    @property
    def probe_port(self) -> int | None:
        return None if self.probe_site is None else self.probe_site.port

    @property
    def lifecycle(self) -> Lifecycle:
        return self.app[LIFECYCLE]

    async def stop(self) -> None:
        self.lifecycle.shutting_down = True
        await self.site.close()
        # The probe port closes last: until then it answers /readyz with 503.
        if self.probe_site is not None:
            await self.probe_site.close()
        _log.info("stopped")


async def start(config: ServerConfig) -> RunningServer:
    """Load the certificate, listen (and on the probe port), and mark the server ready."""
    app = build_app(config)
    certificate = app[CERTIFICATE]
    metrics = app[METRICS]
    site = await listen(app, config, config.port, certificate.listener, metrics)
    probe_site: TLSPort | None = None
    if config.probe_port is not None:
        try:
            probe_app = build_probe_app(app)
            probe_site = await listen(
                probe_app, config, config.probe_port, certificate.probe_listener, metrics
            )
        except BaseException:
            await site.close()
            raise
    app[LIFECYCLE].accepting = True
    running = RunningServer(app, site, probe_site)
    _log.info(
        "serving",
        extra={"fields": {"address": site.name, "port": site.port,
                          "probe_port": running.probe_port,
                          "client_certificates": config.client_ca_file is not None,
                          "not_after": certificate.current.not_after}},
    )  # fmt: skip
    return running
