"""Prometheus metrics of one status writer: prometheus-client objects in its own registry.

One registry per writer (not the process-global default) so two writers in
one process, as the tests run them, never share or clash over a counter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from webhook.observability.metrics import MetricsRegistry

# The label values of the counters that name theirs in their help.
WATCH_RESTART_REASONS: Final = ("closed", "gone", "error")
RECONCILE_OUTCOMES: Final = ("up_to_date", "written", "gone", "standby", "retry")
WRITE_RESULTS: Final = ("ok", "not_found", "conflict", "error")


def _counter_by(
    name: str, what: str, label: str, values: Sequence[str], registry: CollectorRegistry
) -> Counter:
    """A counter with one label, its help `<what>, by <label> (a, b, c)` listing `values`.

    Every value exists from the start, so a rate() over a counter that has never moved
    reads 0 rather than "no data".
    """
    counter = Counter(name, f"{what}, by {label} ({', '.join(values)})", [label], registry=registry)
    for value in values:
        counter.labels(value)
    return counter


class WriterMetrics(MetricsRegistry):
    def __init__(self) -> None:
        super().__init__()
        r = self.registry
        self.objects = Gauge(
            "feedbackstore_status_objects", "FeedbackStores in the writer's cache", registry=r
        )
        self.objects_invalid = Gauge(
            "feedbackstore_status_objects_invalid",
            "FeedbackStores whose last reconciled verdict was invalid",
            registry=r,
        )
        self.watch_events = Counter(
            "feedbackstore_status_watch_events",
            "Watch events received, by type",
            ["type"],
            registry=r,
        )
        self.lists = Counter(
            "feedbackstore_status_lists", "Full lists of FeedbackStores", registry=r
        )
        self.watch_restarts = _counter_by(
            "feedbackstore_status_watch_restarts",
            "Watch streams restarted",
            "reason",
            WATCH_RESTART_REASONS,
            r,
        )
        self.reconciles = _counter_by(
            "feedbackstore_status_reconciles",
            "Objects reconciled",
            "outcome",
            RECONCILE_OUTCOMES,
            r,
        )
        self.writes = _counter_by(
            "feedbackstore_status_writes", "Status apply requests", "result", WRITE_RESULTS, r
        )
        self.conflicts = Counter(
            "feedbackstore_status_conflicts", "409 Conflict answers to status writes", registry=r
        )
        self.events = Counter(
            "feedbackstore_status_events",
            "Kubernetes Events emitted, by reason and result",
            ["reason", "result"],
            registry=r,
        )
        self.leader = Gauge(
            "feedbackstore_status_leader", "1 while this replica holds the Lease", registry=r
        )
        self.lease_transitions = Counter(
            "feedbackstore_status_leader_transitions",
            "Times this replica started or stopped leading",
            ["to"],
            registry=r,
        )
        self.write_seconds = Histogram(
            "feedbackstore_status_write_duration_seconds",
            "Latency of status apply requests",
            registry=r,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
        )
