"""Prometheus metrics of the webhook, kept off the hot path's critical cost.

Each server owns its registry (tests run several in one process). Label
children are resolved once and cached, so counting a request is a dict lookup
and an increment. With `--workers N` every worker writes to prometheus-client's
multiprocess files (PROMETHEUS_MULTIPROC_DIR, set by the supervisor before it
starts them) and a scrape of any worker reports the sum over all of them.
"""

from __future__ import annotations

import os
from typing import Final

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.multiprocess import MultiProcessCollector

from webhook.server.config import MULTIPROC_ENV

PREFIX: Final = "feedbackstore_webhook"
CONTENT_TYPE: Final = CONTENT_TYPE_LATEST

# An operation label outside kube-apiserver's four is client data: fold it.
_OPERATION_LABELS: Final = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})
_OTHER: Final = "OTHER"
# Admission latency is dominated by TLS and the event loop: sub-millisecond to seconds.
_LATENCY_BUCKETS: Final = (
    0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.0, 2.5, 5.0,
)  # fmt: skip


class WebhookMetrics:
    """The metric families of one server and cached children for the hot path."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.multiprocess_dir = os.environ.get(MULTIPROC_ENV)
        self._requests = Counter(
            f"{PREFIX}_admission_requests",
            "Admission reviews answered, by operation and verdict (allowed or denied).",
            ["operation", "verdict"],
            registry=self.registry,
        )
        self._bad_requests = Counter(
            f"{PREFIX}_bad_requests",
            "Requests answered with a 4xx instead of an AdmissionReview, by reason.",
            ["reason"],
            registry=self.registry,
        )
        self.latency = Histogram(
            f"{PREFIX}_request_duration_seconds",
            "Time from receiving a /validate request to having its answer ready.",
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.in_flight = Gauge(
            f"{PREFIX}_in_flight_requests",
            "/validate requests being handled now.",
            multiprocess_mode="livesum",
            registry=self.registry,
        )
        self.certificate_expiry = Gauge(
            f"{PREFIX}_serving_certificate_expiry_timestamp_seconds",
            "When the certificate being served expires (Unix time).",
            multiprocess_mode="livemin",
            registry=self.registry,
        )
        self._reloads = Counter(
            f"{PREFIX}_certificate_reloads",
            "Attempts to load a changed certificate and key, by result (loaded or refused).",
            ["result"],
            registry=self.registry,
        )
        self._request_children: dict[tuple[str, str], Counter] = {}
        self._bad_children: dict[str, Counter] = {}

    def count_request(self, operation: str, allowed: bool) -> None:
        key = (
            operation if operation in _OPERATION_LABELS else _OTHER,
            "allowed" if allowed else "denied",
        )
        child = self._request_children.get(key)
        if child is None:
            child = self._request_children[key] = self._requests.labels(*key)
        child.inc()

    def count_bad_request(self, reason: str) -> None:
        child = self._bad_children.get(reason)
        if child is None:
            child = self._bad_children[reason] = self._bad_requests.labels(reason)
        child.inc()

    def count_reload(self, loaded: bool) -> None:
        self._reloads.labels("loaded" if loaded else "refused").inc()

    def exposition(self) -> bytes:
        """The Prometheus text format: this process's registry, or all workers' files."""
        if self.multiprocess_dir is None:
            return generate_latest(self.registry)
        merged = CollectorRegistry()
        MultiProcessCollector(merged, path=self.multiprocess_dir)  # type: ignore[no-untyped-call]
        return generate_latest(merged)
