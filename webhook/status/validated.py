"""From a verdict to the `Validated` condition, and whether the object needs it written.

Everything here is pure: the writer asks `plan_status(obj, now)` and learns the
condition the object should hold and whether it must be written (an object
that already carries this exact condition costs no request). Hostile or
half-written `status` shapes read as "no condition yet" rather than crashing
the controller.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from webhook.kube.objects import condition_changed, find_condition, make_condition
from webhook.rules import Verdict, api, messages, validate_feedbackstore
from webhook.rules.summary import summarize

# metav1.Condition.message is capped at 32768 characters by the API.
MAX_CONDITION_MESSAGE: Final = 32768
STATUS_TRUE: Final = "True"
STATUS_FALSE: Final = "False"

# The fields whose difference means the condition must be written again;
# lastTransitionTime is derived from them, never compared on its own.
_COMPARED: Final = ("status", "reason", "message", "observedGeneration")


@dataclass(frozen=True, slots=True)
class StatusPlan:
    """The condition an object should hold, the one it holds, the verdict, and if a write is due."""

    condition: dict[str, Any]
    previous: dict[str, Any] | None
    verdict: Verdict
    needed: bool


def verdict_fields(verdict: Verdict) -> tuple[str, str, str]:
    """`(status, reason, message)` for a verdict, the message bounded for the API."""
    if verdict.valid:
        return STATUS_TRUE, api.REASON_VALID, messages.MESSAGE_VALID
    return STATUS_FALSE, api.REASON_INVALID, summarize(verdict, MAX_CONDITION_MESSAGE)


def observed_generation(obj: dict[str, Any]) -> int | None:
    """`metadata.generation` when it is a usable int64, else None (left out of the condition)."""
    metadata = obj.get("metadata")
    generation = metadata.get("generation") if isinstance(metadata, dict) else None
    if type(generation) is int and 0 <= generation < 2**63:
        return generation
    return None


def current_condition(obj: dict[str, Any]) -> dict[str, Any] | None:
    """The object's `Validated` condition as stored, or None when there is none to read."""
    return find_condition(obj, api.CONDITION_TYPE)


def plan_status(obj: dict[str, Any], now: datetime) -> StatusPlan:
    """What this object's `Validated` condition should be, and whether it must be written."""
    previous = current_condition(obj)
    verdict = validate_feedbackstore(obj)
    generation = observed_generation(obj)
    extra = {} if generation is None else {"observedGeneration": generation}
    desired = make_condition(api.CONDITION_TYPE, verdict_fields(verdict), previous, now, **extra)
    return StatusPlan(desired, previous, verdict, condition_changed(previous, desired, _COMPARED))


def apply_configuration(
    obj: dict[str, Any], condition: dict[str, Any], *others: dict[str, Any]
) -> dict[str, Any]:
    """The server-side apply body: identity plus our conditions, nothing else.

    `status.conditions` is a list map keyed by `type`, so applying a list that
    holds only ours (`Validated`, and `InUse` when in-use protection has one)
    claims those entries alone; conditions other managers own are merged, not
    replaced. Every condition the writer owns goes in each apply: one left out
    would be removed.
    """
    metadata = obj["metadata"]
    return {
        "apiVersion": api.API_VERSION,
        "kind": api.KIND,
        "metadata": {"name": metadata["name"], "namespace": metadata["namespace"]},
        "status": {"conditions": [condition, *others]},
    }
