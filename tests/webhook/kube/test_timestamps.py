"""Kubernetes timestamps as the API server parses them: MicroTime always has six digits."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import pytest

from webhook.kube.timestamps import micro_time, parse_time, rfc3339

MICRO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        (datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC), "2025-01-02T03:04:05.000000Z"),
        (datetime(2025, 1, 2, 3, 4, 5, 7, tzinfo=UTC), "2025-01-02T03:04:05.000007Z"),
        (datetime(2025, 1, 2, 3, 4, 5, 999999, tzinfo=UTC), "2025-01-02T03:04:05.999999Z"),
        (
            datetime(2025, 1, 2, 5, 4, 5, 120000, tzinfo=timezone(timedelta(hours=2))),
            "2025-01-02T03:04:05.120000Z",
        ),
    ],
    ids=[
        "zero microseconds still print six zeros, unlike isoformat",
        "a single microsecond is zero-padded",
        "the largest fraction is kept",
        "another zone is converted to Z",
    ],
)
def test_micro_time_always_has_six_fractional_digits(moment: datetime, expected: str) -> None:
    assert micro_time(moment) == expected
    assert MICRO.match(micro_time(moment))
    assert parse_time(expected) == moment


def test_isoformat_alone_would_drop_the_fraction() -> None:
    moment = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert moment.isoformat() == "2025-01-02T03:04:05+00:00"  # why micro_time exists
    assert micro_time(moment) == "2025-01-02T03:04:05.000000Z"


def test_rfc3339_has_whole_seconds_and_z() -> None:
    assert rfc3339(datetime(2025, 1, 2, 3, 4, 5, 678, tzinfo=UTC)) == "2025-01-02T03:04:05Z"


@pytest.mark.parametrize(
    "text",
    [None, 5, "", "yesterday", "2025-01-02T03:04:05", "x" * 100, ["2025-01-02T03:04:05Z"]],
    ids=[
        "null",
        "a number",
        "an empty string",
        "words",
        "a time without a zone",
        "a very long string",
        "a list",
    ],
)
def test_parse_time_refuses_what_is_not_a_kubernetes_time(text: object) -> None:
    assert parse_time(text) is None
