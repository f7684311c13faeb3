"""The per-request metrics kept as plain numbers read exactly like prometheus-client's own metrics:
the same families, help texts, types, labels, buckets and values for the same requests."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from webhook.server.metrics import LocalRequestCounts, SharedRequestCounts

Counts = Any  # LocalRequestCounts or SharedRequestCounts


def answered(counts: Counts, seconds: float) -> None:
    """One /validate request that took `seconds` (its start set that far back)."""
    started = counts.begin()
    counts.end(started - seconds)


TRAFFIC: list[Callable[[Counts], None]] = [
    lambda c: c.count_request("CREATE", True),
    lambda c: c.count_request("CREATE", False),
    lambda c: c.count_request("CREATE", False),
    lambda c: c.count_request("UPDATE", True),
    lambda c: c.count_request("WEIRD", True),
    lambda c: c.count_request("ALSO-WEIRD", True),
    lambda c: c.count_bad_request("not_json"),
    lambda c: c.count_bad_request("too_large"),
    lambda c: c.count_bad_request("not_json"),
    lambda c: answered(c, 0.0002),
    lambda c: answered(c, 0.003),
    lambda c: answered(c, 0.003),
    lambda c: answered(c, 0.7),
    lambda c: answered(c, 9.0),
    lambda c: c.begin(),  # still in flight
]


def exposition(counts_for: Callable[[CollectorRegistry], Counts], traffic: list[Any]) -> str:
    registry = CollectorRegistry(auto_describe=True)
    counts = counts_for(registry)
    for event in traffic:
        event(counts)
    return generate_latest(registry).decode()


def local(registry: CollectorRegistry) -> LocalRequestCounts:
    counts = LocalRequestCounts()
    registry.register(counts)
    return counts


def samples(text: str) -> tuple[list[str], dict[str, float]]:
    """The HELP/TYPE lines, and each sample's value by its name and labels."""
    comments = [line for line in text.splitlines() if line.startswith("#")]
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            values[name] = float(value)
    return comments, values


@pytest.mark.parametrize(
    "traffic",
    [pytest.param([], id="before any request"),
     pytest.param(TRAFFIC, id="after requests of every kind")],
)  # fmt: skip
def test_plain_numbers_expose_what_prometheus_client_would(traffic: list[Any]) -> None:
    ours_comments, ours = samples(exposition(local, traffic))
    reference_comments, reference = samples(exposition(SharedRequestCounts, traffic))
    assert ours_comments == reference_comments
    assert ours.keys() == reference.keys()
    for name, value in reference.items():
        family = name.partition("{")[0]
        if family.endswith("_created"):
            assert abs(ours[name] - value) < 60
        elif family.endswith("_sum"):
            assert math.isclose(ours[name], value, rel_tol=1e-3)
        else:
            assert ours[name] == value, name


def test_the_latency_buckets_count_each_request_once_up_to_its_bound() -> None:
    _, values = samples(exposition(local, TRAFFIC))
    bucket = "feedbackstore_webhook_request_duration_seconds_bucket"
    assert values[f'{bucket}{{le="0.0005"}}'] == 1
    assert values[f'{bucket}{{le="0.004"}}'] == 3
    assert values[f'{bucket}{{le="1.0"}}'] == 4
    assert values[f'{bucket}{{le="5.0"}}'] == 4
    assert values[f'{bucket}{{le="+Inf"}}'] == 5
    assert values["feedbackstore_webhook_in_flight_requests"] == 1
    assert values[
        'feedbackstore_webhook_admission_requests_total{operation="OTHER",verdict="allowed"}'
    ] == 2  # fmt: skip


def test_a_request_counted_now_has_a_creation_time_of_now() -> None:
    _, values = samples(exposition(local, TRAFFIC[:1]))
    created = values[
        'feedbackstore_webhook_admission_requests_created{operation="CREATE",verdict="allowed"}'
    ]
    assert abs(created - time.time()) < 60
