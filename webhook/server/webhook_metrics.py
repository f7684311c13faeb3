"""Prometheus metrics of the webhook: prometheus-client objects, the handler in a decorator.

As kubewebhook wraps a webhook in a measuring decorator, `measured` wraps the
/validate handler: requests in flight and the latency histogram are its
business, never the handler's. The handler only counts what it alone knows
(the verdict, or why a request was refused).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Final

from aiohttp import web
from prometheus_client import Counter, Gauge, Histogram

from webhook.admission.audit import ALLOWED, DENIED
from webhook.admission.envelope import OPERATIONS
from webhook.observability.metrics_registry import CONTENT_TYPE, MetricsRegistry
from webhook.server.connections import EVICTED_STATES

__all__ = ["CONTENT_TYPE", "ERROR", "WebhookMetrics", "measured"]

PREFIX: Final = "feedbackstore_webhook"
# An operation label outside kube-apiserver's four is client data: fold it.
_OPERATION_LABELS: Final = frozenset(OPERATIONS)
_OTHER: Final = "OTHER"
# The verdict of a review the webhook could not judge (its own fault, answered 500).
ERROR: Final = "error"
# Admission latency is dominated by TLS and the event loop: sub-millisecond to seconds.
LATENCY_BUCKETS: Final = (
    0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.0, 2.5, 5.0,
)  # fmt: skip

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class WebhookMetrics(MetricsRegistry):
    def __init__(self) -> None:
        super().__init__()
        r = self.registry
        self.requests = Counter(
            f"{PREFIX}_admission_requests",
            "Admission reviews answered, by operation and verdict (allowed, denied or error).",
            ["operation", "verdict"],
            registry=r,
        )
        self.bad_requests = Counter(
            f"{PREFIX}_bad_requests",
            "Requests answered with a 4xx instead of an AdmissionReview, by reason.",
            ["reason"],
            registry=r,
        )
        self.latency = Histogram(
            f"{PREFIX}_request_duration_seconds",
            "Time from receiving a /validate request to having its answer ready.",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.connections_evicted = Counter(
            f"{PREFIX}_connections_evicted",
            "Connections closed to make room for a new one at --max-connections, by what they "
            f"were waiting for ({', '.join(EVICTED_STATES)}).",
            ["state"],
            registry=r,
        )
        for state in EVICTED_STATES:
            self.connections_evicted.labels(state)
        self.in_flight = Gauge(
            f"{PREFIX}_in_flight_requests",
            "/validate requests being handled now.",
            registry=r,
        )
        self.certificate_expiry = Gauge(
            f"{PREFIX}_serving_certificate_expiry_timestamp_seconds",
            "When the certificate being served expires (Unix time).",
            registry=r,
        )
        self.reloads = Counter(
            f"{PREFIX}_certificate_reloads",
            "Attempts to load a changed certificate and key, by result (loaded or refused).",
            ["result"],
            registry=r,
        )

        # Every series exists from the start, at 0, so a rate() over it has no gap.
        self._answered = {
            (operation, verdict): self.requests.labels(operation, verdict)
            for operation in (*_OPERATION_LABELS, _OTHER)
            for verdict in (ALLOWED, DENIED, ERROR)
        }

    def count(self, operation: str, verdict: str) -> None:
        self._answered[operation if operation in _OPERATION_LABELS else _OTHER, verdict].inc()


def measured(metrics: WebhookMetrics, handler: Handler) -> Handler:
    """`handler`, counted in flight while it runs and its time observed in the histogram."""
    in_flight, latency = metrics.in_flight, metrics.latency

    async def measured_handler(request: web.Request) -> web.StreamResponse:
        in_flight.inc()
        started = time.perf_counter()
        try:
            return await handler(request)
        finally:
            latency.observe(time.perf_counter() - started)
            in_flight.dec()

    return measured_handler
