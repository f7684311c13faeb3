"""Prometheus metrics of one status writer: prometheus-client objects in its own registry.

One registry per writer (not the process-global default) so two writers in
one process, as the tests run them, never share or clash over a counter.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from webhook.observability.metrics import Families


class WriterMetrics(Families):
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
        self.watch_restarts = Counter(
            "feedbackstore_status_watch_restarts",
            "Watch streams restarted, by reason (closed, gone, error)",
            ["reason"],
            registry=r,
        )
        self.reconciles = Counter(
            "feedbackstore_status_reconciles",
            "Objects reconciled, by outcome (up_to_date, written, gone, standby, retry)",
            ["outcome"],
            registry=r,
        )
        self.writes = Counter(
            "feedbackstore_status_writes",
            "Status apply requests, by result (ok, not_found, conflict, error)",
            ["result"],
            registry=r,
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

        # Every label value exists from the start, so a rate() over a counter that has
        # never moved reads 0 rather than "no data".
        for reason in ("closed", "gone", "error"):
            self.watch_restarts.labels(reason)
        for outcome in ("up_to_date", "written", "gone", "standby", "retry"):
            self.reconciles.labels(outcome)
        for result in ("ok", "not_found", "conflict", "error"):
            self.writes.labels(result)
