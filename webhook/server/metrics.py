"""Prometheus metrics of the webhook, kept off the hot path's critical cost.

Each server owns its registry (tests run several in one process). The four
families touched by every request (requests by operation and verdict, bad
requests, the latency histogram, requests in flight) are counted by a
`RequestCounts`:
- one server process: `LocalRequestCounts`, plain numbers on the event loop's
  thread, turned into metric families only when /metrics is scraped.
  prometheus-client's metric objects take a lock per update and run several
  calls per observation; on a server whose caches are full of TLS and HTTP
  that was ~10 µs per request, a tenth of its CPU time;
- `--workers N`: `SharedRequestCounts`, prometheus-client's own metrics,
  which write to its multiprocess files (PROMETHEUS_MULTIPROC_DIR, set by the
  supervisor before it starts the workers), so that a scrape of any worker
  reports the sum over all of them.
Both give the same names, labels, help texts, buckets and `_created` series.
"""

from __future__ import annotations

import bisect
import math
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Final, Protocol

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.samples import Sample

from webhook.server.config import MULTIPROC_ENV

PREFIX: Final = "feedbackstore_webhook"
CONTENT_TYPE: Final = CONTENT_TYPE_LATEST

REQUESTS: Final = f"{PREFIX}_admission_requests"
REQUESTS_HELP: Final = "Admission reviews answered, by operation and verdict (allowed or denied)."
BAD_REQUESTS: Final = f"{PREFIX}_bad_requests"
BAD_REQUESTS_HELP: Final = "Requests answered with a 4xx instead of an AdmissionReview, by reason."
LATENCY: Final = f"{PREFIX}_request_duration_seconds"
LATENCY_HELP: Final = "Time from receiving a /validate request to having its answer ready."
IN_FLIGHT: Final = f"{PREFIX}_in_flight_requests"
IN_FLIGHT_HELP: Final = "/validate requests being handled now."

# An operation label outside kube-apiserver's four is client data: fold it.
_OPERATION_LABELS: Final = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})
_OTHER: Final = "OTHER"
# Admission latency is dominated by TLS and the event loop: sub-millisecond to seconds.
LATENCY_BUCKETS: Final = (
    0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.0, 2.5, 5.0,
)  # fmt: skip
_BOUNDS: Final = (*LATENCY_BUCKETS, math.inf)
# prometheus-client's switch for the `_created` series, honoured the same way.
_CREATED_SERIES: Final = os.environ.get("PROMETHEUS_DISABLE_CREATED_SERIES", "").lower() not in {
    "true", "1", "t",
}  # fmt: skip


def _labels(operation: str, allowed: bool) -> tuple[str, str]:
    return (
        operation if operation in _OPERATION_LABELS else _OTHER,
        "allowed" if allowed else "denied",
    )


class RequestCounts(Protocol):
    """What the /validate handler and the error routes count, per request."""

    def begin(self) -> float:
        """A request arrives: one more in flight; its start time (time.perf_counter)."""

    def end(self, started: float) -> None:
        """The request's answer is ready: one fewer in flight, its latency observed."""

    def count_request(self, operation: str, allowed: bool) -> None: ...

    def count_bad_request(self, reason: str) -> None: ...


class LocalRequestCounts:
    """The per-request families of one process as plain numbers, collected at scrape time.

    Only the event loop's thread updates and collects them (the handlers and
    /metrics all run there), so no lock is needed.
    """

    def __init__(self) -> None:
        self._created = time.time()
        self.in_flight = 0
        # Non-cumulative counts per bucket of _BOUNDS, and the sum of all latencies.
        self._latency_counts = [0] * len(_BOUNDS)
        self._latency_sum = 0.0
        self._requests: dict[tuple[str, str], list[float]] = {}
        # The same entries by the handler's own arguments, for the four known operations.
        self._by_call: dict[tuple[str, bool], list[float]] = {}
        self._bad_requests: dict[tuple[str], list[float]] = {}

    def begin(self) -> float:
        self.in_flight += 1
        return time.perf_counter()

    def end(self, started: float) -> None:
        seconds = time.perf_counter() - started
        self.in_flight -= 1
        # A bucket counts latencies up to and including its bound.
        self._latency_counts[bisect.bisect_left(_BOUNDS, seconds)] += 1
        self._latency_sum += seconds

    def count_request(self, operation: str, allowed: bool) -> None:
        entry = self._by_call.get((operation, allowed))
        if entry is None:
            key = _labels(operation, allowed)
            entry = self._requests.get(key)
            if entry is None:
                entry = self._requests[key] = [0, time.time()]
            if operation in _OPERATION_LABELS:  # client data stays out of the shortcut
                self._by_call[operation, allowed] = entry
        entry[0] += 1

    def count_bad_request(self, reason: str) -> None:
        key = (reason,)
        entry = self._bad_requests.get(key)
        if entry is None:
            entry = self._bad_requests[key] = [0, time.time()]
        entry[0] += 1

    def collect(self) -> Iterator[Metric]:
        """The families in prometheus-client's own order and shape."""
        yield _counter(REQUESTS, REQUESTS_HELP, ["operation", "verdict"], self._requests.items())
        yield _counter(BAD_REQUESTS, BAD_REQUESTS_HELP, ["reason"], self._bad_requests.items())
        latency = HistogramMetricFamily(LATENCY, LATENCY_HELP)
        cumulative = 0
        buckets = []
        for bound, count in zip(_BOUNDS, self._latency_counts, strict=True):
            cumulative += count
            buckets.append(("+Inf" if bound == math.inf else repr(bound), float(cumulative)))
        latency.add_metric([], buckets, self._latency_sum)
        if _CREATED_SERIES:
            latency.samples.append(Sample(f"{LATENCY}_created", {}, self._created))
        yield latency
        yield GaugeMetricFamily(IN_FLIGHT, IN_FLIGHT_HELP, value=self.in_flight)


# Label values -> [count, creation time], as LocalRequestCounts keeps them.
_Entries = Iterable[tuple[Sequence[str], list[float]]]


def _counter(name: str, doc: str, labels: list[str], entries: _Entries) -> CounterMetricFamily:
    family = CounterMetricFamily(name, doc, labels=labels)
    for key, (count, created) in entries:
        family.add_metric(key, count, created if _CREATED_SERIES else None)
    return family


class SharedRequestCounts:
    """The per-request families as prometheus-client metrics (multiprocess files with workers)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._requests = Counter(REQUESTS, REQUESTS_HELP, ["operation", "verdict"],
                                 registry=registry)  # fmt: skip
        self._bad_requests = Counter(BAD_REQUESTS, BAD_REQUESTS_HELP, ["reason"],
                                     registry=registry)  # fmt: skip
        self._latency = Histogram(LATENCY, LATENCY_HELP, buckets=LATENCY_BUCKETS,
                                  registry=registry)  # fmt: skip
        self._in_flight = Gauge(IN_FLIGHT, IN_FLIGHT_HELP, multiprocess_mode="livesum",
                                registry=registry)  # fmt: skip
        # Label children resolved once each, then a dict lookup per request.
        self._request_children: dict[tuple[str, str], Counter] = {}
        self._bad_children: dict[str, Counter] = {}

    def begin(self) -> float:
        self._in_flight.inc()
        return time.perf_counter()

    def end(self, started: float) -> None:
        self._in_flight.dec()
        self._latency.observe(time.perf_counter() - started)

    def count_request(self, operation: str, allowed: bool) -> None:
        key = _labels(operation, allowed)
        child = self._request_children.get(key)
        if child is None:
            child = self._request_children[key] = self._requests.labels(*key)
        child.inc()

    def count_bad_request(self, reason: str) -> None:
        child = self._bad_children.get(reason)
        if child is None:
            child = self._bad_children[reason] = self._bad_requests.labels(reason)
        child.inc()


class WebhookMetrics:
    """The metric families of one server: the per-request counts and the certificate's."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.multiprocess_dir = os.environ.get(MULTIPROC_ENV)
        self.requests: RequestCounts
        if self.multiprocess_dir is None:
            local = LocalRequestCounts()
            self.registry.register(local)
            self.requests = local
        else:
            self.requests = SharedRequestCounts(self.registry)
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

    def count_bad_request(self, reason: str) -> None:
        self.requests.count_bad_request(reason)

    def count_reload(self, loaded: bool) -> None:
        self._reloads.labels("loaded" if loaded else "refused").inc()

    def exposition(self) -> bytes:
        """The Prometheus text format: this process's registry, or all workers' files."""
        if self.multiprocess_dir is None:
            return generate_latest(self.registry)
        merged = CollectorRegistry()
        MultiProcessCollector(merged, path=self.multiprocess_dir)  # type: ignore[no-untyped-call]
        return generate_latest(merged)
