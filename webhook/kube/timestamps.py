"""Kubernetes timestamps as the API server parses them: `isoformat()` drops a zero fraction and
writes `+00:00`, which a real API server rejects for MicroTime.
"""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> datetime:
    return datetime.now(UTC)


def rfc3339(moment: datetime) -> str:
    """metav1.Time: `2024-05-01T12:00:00Z`."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_time(moment: datetime) -> str:
    """metav1.MicroTime: `2024-05-01T12:00:00.000000Z`, six digits even when zero."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: object) -> datetime | None:
    """Either format back to an aware datetime; None for anything else."""
    if not isinstance(text, str) or len(text) > 64:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return moment
