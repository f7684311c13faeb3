"""An object's metadata, conditions, finalizers and deletion, read tolerant of any shape, and a
condition built by metav1.Condition's rule (`lastTransitionTime` moves only when `status` changes).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, Final

from webhook.kube.timestamps import parse_time, rfc3339

CONDITION_TRUE: Final = "True"  # metav1.ConditionStatus; the third is "Unknown"
CONDITION_FALSE: Final = "False"


def metadata_of(obj: object) -> dict[str, Any]:
    """`metadata` of a decoded object; empty when either is not a mapping."""
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    return metadata if isinstance(metadata, dict) else {}


def find_condition(
    obj: object, condition_type: str, *, within: int | None = None
) -> dict[str, Any] | None:
    """The `status.conditions` entry of this `type`, None when there is none (among the first
    `within`, when given: what a client sent, unlike what the API server stored, is unbounded)."""
    status = obj.get("status") if isinstance(obj, dict) else None
    conditions = status.get("conditions") if isinstance(status, dict) else None
    if not isinstance(conditions, list):
        return None
    for condition in conditions if within is None else conditions[:within]:
        if isinstance(condition, dict) and condition.get("type") == condition_type:
            return condition
    return None


def deletion_in_progress(obj: object) -> bool:
    """`metadata.deletionTimestamp` is set: the object waits only for its finalizers."""
    return metadata_of(obj).get("deletionTimestamp") is not None


def has_finalizer(obj: object, finalizer: str) -> bool:
    finalizers = metadata_of(obj).get("finalizers")
    return isinstance(finalizers, list) and finalizer in finalizers


def make_condition(
    condition_type: str,
    fields: tuple[str, str, str],
    previous: dict[str, Any] | None,
    now: datetime,
    **extra: Any,
) -> dict[str, Any]:
    """A stored `lastTransitionTime` missing or unreadable is replaced, as if `status` flipped."""
    status, reason, message = fields
    kept = previous.get("lastTransitionTime") if previous is not None else None
    flipped = previous is None or previous.get("status") != status or parse_time(kept) is None
    return {
        "type": condition_type,
        "status": status,
        "reason": reason,
        "message": message,
        **extra,
        "lastTransitionTime": rfc3339(now) if flipped else str(kept),
    }


def condition_changed(
    previous: dict[str, Any] | None, desired: dict[str, Any], compared: Iterable[str]
) -> bool:
    """`lastTransitionTime` is derived, not compared, but one missing or unreadable is rewritten."""
    if previous is None or parse_time(previous.get("lastTransitionTime")) is None:
        return True
    return any(previous.get(key) != desired.get(key) for key in compared)
