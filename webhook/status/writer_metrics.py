"""Prometheus metrics of one status writer, in a registry of its own (`MetricsRegistry`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from webhook.observability.metrics_registry import MetricsRegistry

WATCH_RESTART_REASONS: Final = ("closed", "gone", "error", "unreadable")
RECONCILE_OUTCOMES: Final = ("up_to_date", "written", "gone", "standby", "retry")
WRITE_RESULTS: Final = ("ok", "not_found", "conflict", "error")


def _counter_by(
    name: str, what: str, label: str, values: Sequence[str], registry: CollectorRegistry
) -> Counter:
    """Help `<what>, by <label> (a, b, c)`; every value exists from the start, so a rate() over a
    counter that never moved reads 0 rather than "no data".
    """
    counter = Counter(name, f"{what}, by {label} ({', '.join(values)})", [label], registry=registry)
    for value in values:
        counter.labels(value)
    return counter


@dataclass(slots=True)
class WatchedMetrics:
    """What one informer counts (`webhook.kube.informer.InformerMetrics`), named for what it
    watches."""

    lists: Counter
    objects: Gauge
    watch_events: Counter
    watch_restarts: Counter


def _watched(prefix: str, objects: str, noun: str, registry: CollectorRegistry) -> WatchedMetrics:
    return WatchedMetrics(
        lists=Counter(f"{prefix}lists", f"Full lists of {noun}", registry=registry),
        objects=Gauge(objects, f"{noun} in the writer's cache", registry=registry),
        watch_events=Counter(
            f"{prefix}watch_events",
            f"Watch events of {noun} received, by type",
            ["type"],
            registry=registry,
        ),
        watch_restarts=_counter_by(
            f"{prefix}watch_restarts",
            f"Watch streams of {noun} restarted",
            "reason",
            WATCH_RESTART_REASONS,
            registry,
        ),
    )


class WriterMetrics(MetricsRegistry):
    def __init__(self) -> None:
        super().__init__()
        r = self.registry
        stores = _watched(
            "feedbackstore_status_", "feedbackstore_status_objects", "FeedbackStores", r
        )
        self.lists, self.objects = stores.lists, stores.objects
        self.watch_events, self.watch_restarts = stores.watch_events, stores.watch_restarts
        # The AgentDeployments' informer (in-use protection, inline declarations).
        self.agents = _watched(
            "feedbackstore_status_agent_", "feedbackstore_status_agents", "AgentDeployments", r
        )
        self.objects_invalid = Gauge(
            "feedbackstore_status_objects_invalid",
            "FeedbackStores whose last reconciled verdict was invalid (their Stalled is True)",
            registry=r,
        )
        self.objects_yielded = Gauge(
            "feedbackstore_status_objects_validated_yielded",
            "FeedbackStores whose Validated condition another field manager writes (yielded to it)",
            registry=r,
        )
        self.validated_yielded = Counter(
            "feedbackstore_status_validated_yielded",
            "Objects whose Validated condition the writer began to leave to another field "
            "manager, by that manager",
            ["manager"],
            registry=r,
        )
        self.inline_invalid = Gauge(
            "feedbackstore_status_inline_invalid",
            "AgentDeployments whose inline declaration (spec.feedback) is invalid, as this "
            "replica's watch sees them",
            registry=r,
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
        self.writes_fenced = Counter(
            "feedbackstore_status_writes_fenced",
            "Writes (status, finalizer, Event) withheld as they were due to leave: this replica "
            "no longer led",
            registry=r,
        )
        self.conflicts = Counter(
            "feedbackstore_status_conflicts", "409 Conflict answers to status writes", registry=r
        )
        self.finalizers_shared = Counter(
            "feedbackstore_status_finalizers_shared",
            "Finalizers another field manager also listed, so that server-side apply left them; "
            "each taken off by a guarded JSON patch",
            registry=r,
        )
        events_help = "Kubernetes Events emitted, by reason and result"
        self.events = Counter(
            "feedbackstore_status_events", events_help, ["reason", "result"], registry=r
        )
        self.leader = Gauge(
            "feedbackstore_status_leader", "1 while this replica holds the Lease", registry=r
        )
        transitions_help = "Times this replica started or stopped leading"
        self.lease_transitions = Counter(
            "feedbackstore_status_leader_transitions", transitions_help, ["to"], registry=r
        )
        self.write_seconds = Histogram(
            "feedbackstore_status_write_duration_seconds",
            "Latency of status apply requests",
            registry=r,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
        )
