"""Prometheus metrics: each component's prometheus-client objects in a registry of its own (tests
run several servers and writers in one process, which must never share or clash over a counter).
"""

from __future__ import annotations

from typing import Final

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

CONTENT_TYPE: Final = CONTENT_TYPE_LATEST


class MetricsRegistry:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
