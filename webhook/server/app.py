"""The aiohttp applications: routes, typed state and the certificate watcher's lifecycle.

`build_app` is the webhook port's; `build_probe_app` the probe port's
(`--probe-port`): the same health, readiness and metrics handlers over the same
state, and no /validate, so a caller without a client certificate reaches
nothing that judges.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from aiohttp import web

from webhook import install, replies
from webhook.server.admission_endpoint import AdmissionEndpoint
from webhook.server.certificate import ServingCertificate
from webhook.server.config import ServerConfig
from webhook.server.refusal import refusal
from webhook.server.tls import LoadedPair
from webhook.server.webhook_metrics import CONTENT_TYPE, WebhookMetrics, measured


@dataclass(slots=True)
class Lifecycle:
    """Where the server is between start and exit, for /readyz."""

    accepting: bool = False
    shutting_down: bool = False


CONFIG = web.AppKey("config", ServerConfig)
METRICS = web.AppKey("metrics", WebhookMetrics)
CERTIFICATE = web.AppKey("certificate", ServingCertificate)
LIFECYCLE = web.AppKey("lifecycle", Lifecycle)


def build_app(config: ServerConfig) -> web.Application:
    """The webhook application; loads the serving pair now (CertificateError if unusable)."""
    metrics = WebhookMetrics()
    certificate = ServingCertificate(
        config.cert_file,
        config.key_file,
        on_reload=lambda pair: _reloaded(metrics, pair),
        client_ca_file=config.client_ca_file,
    )
    metrics.certificate_expiry.set(certificate.current.not_after.timestamp())
    app = web.Application(client_max_size=config.max_body_bytes)
    app[CONFIG] = config
    app[METRICS] = metrics
    app[CERTIFICATE] = certificate
    app[LIFECYCLE] = lifecycle = Lifecycle()
    app.cleanup_ctx.append(_watch_certificate)
    endpoint = AdmissionEndpoint(
        metrics, lambda: lifecycle.shutting_down, config.max_body_bytes, config.body_timeout
    )
    app.router.add_route("*", install.VALIDATE_PATH, measured(metrics, endpoint.handle))
    _add_probe_routes(app)
    return app


def build_probe_app(app: web.Application) -> web.Application:
    """The probe port's application, sharing `app`'s state (the watcher runs in `app`)."""
    probes = web.Application(client_max_size=_PROBE_MAX_BODY_BYTES)
    probes[CONFIG] = app[CONFIG]
    probes[METRICS] = app[METRICS]
    probes[CERTIFICATE] = app[CERTIFICATE]
    probes[LIFECYCLE] = app[LIFECYCLE]
    _add_probe_routes(probes)
    return probes


# The probe port answers GETs; a body is never read there.
_PROBE_MAX_BODY_BYTES = 1024


def _add_probe_routes(app: web.Application) -> None:
    app.router.add_route("*", "/healthz", healthz)
    app.router.add_route("*", "/readyz", readyz)
    app.router.add_route("*", "/metrics", metrics_page)
    app.router.add_route("*", "/{tail:.*}", not_found)


def _reloaded(metrics: WebhookMetrics, pair: LoadedPair | None) -> None:
    metrics.reloads.labels("refused" if pair is None else "loaded").inc()
    if pair is not None:
        metrics.certificate_expiry.set(pair.not_after.timestamp())


async def _watch_certificate(app: web.Application) -> AsyncIterator[None]:
    task = asyncio.create_task(app[CERTIFICATE].watch(app[CONFIG].cert_poll_interval))
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def healthz(request: web.Request) -> web.Response:
    """Alive: the event loop answers."""
    if request.method not in ("GET", "HEAD"):
        return _get_only(request)
    return web.Response(text=replies.PROBE_OK)


async def readyz(request: web.Request) -> web.Response:
    """Ready: a certificate is loaded, the port accepts, and no shutdown has begun."""
    if request.method not in ("GET", "HEAD"):
        return _get_only(request)
    lifecycle = request.app[LIFECYCLE]
    if lifecycle.shutting_down:
        return web.Response(status=503, text=replies.PROBE_SHUTTING_DOWN)
    if not lifecycle.accepting:
        return web.Response(status=503, text=replies.PROBE_NOT_ACCEPTING)
    return web.Response(text=replies.PROBE_OK)


async def metrics_page(request: web.Request) -> web.Response:
    if request.method not in ("GET", "HEAD"):
        return _get_only(request)
    body = request.app[METRICS].exposition()
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE})


async def not_found(request: web.Request) -> web.Response:
    request.app[METRICS].bad_requests.labels("not_found").inc()
    return refusal(404, replies.no_endpoint(request.path)[:200])


def _get_only(request: web.Request) -> web.Response:
    request.app[METRICS].bad_requests.labels("method_not_allowed").inc()
    return refusal(405, replies.get_only(request.path), allow="GET, HEAD")
