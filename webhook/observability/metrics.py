"""Prometheus metrics of both processes: prometheus-client's own metric objects.

Each component declares its families as metric objects in its own registry
(tests run several servers and writers in one process, which must never share
or clash over a counter) and exposes that registry.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

CONTENT_TYPE: Final = CONTENT_TYPE_LATEST


class MetricsRegistry:
    """One component's prometheus-client registry, which its metric objects register in."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
