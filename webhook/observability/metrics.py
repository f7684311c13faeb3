"""Prometheus metrics of both processes: prometheus-client's own metric objects.

Each component declares its families as metric objects in its own registry
(tests run several servers and writers in one process, which must never share
or clash over a counter) and exposes that registry; a webhook run with
`--workers N` exposes prometheus-client's multiprocess files instead, so a
scrape of any worker reports the sum over all of them.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

CONTENT_TYPE: Final = CONTENT_TYPE_LATEST


class Families:
    """A registry for one component's metric objects, and its exposition."""

    def __init__(self, multiprocess_dir: str | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.multiprocess_dir = multiprocess_dir

    def exposition(self) -> bytes:
        """The Prometheus text format: this registry, or all processes' files."""
        if self.multiprocess_dir is None:
            return generate_latest(self.registry)
        merged = CollectorRegistry()
        MultiProcessCollector(merged, path=self.multiprocess_dir)  # type: ignore[no-untyped-call]
        return generate_latest(merged)
