"""From a verdict to the `Validated` condition and whether it must be written, purely: one already
holding this exact condition costs no request; hostile `status` shapes read as no condition yet.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from webhook.kube.objects import (
    CONDITION_FALSE,
    CONDITION_TRUE,
    condition_changed,
    find_condition,
    make_condition,
    metadata_of,
)
from webhook.rules import Verdict, api, messages, validate_feedbackstore
from webhook.rules.summary import summarize

MAX_CONDITION_MESSAGE: Final = 32768  # metav1.Condition's cap

_COMPARED: Final = ("status", "reason", "message", "observedGeneration")


@dataclass(frozen=True, slots=True)
class StatusPlan:
    condition: dict[str, Any]
    previous: dict[str, Any] | None
    verdict: Verdict
    needed: bool


def verdict_fields(verdict: Verdict) -> tuple[str, str, str]:
    if verdict.valid:
        return CONDITION_TRUE, api.REASON_VALID, messages.MESSAGE_VALID
    return CONDITION_FALSE, api.REASON_INVALID, summarize(verdict, MAX_CONDITION_MESSAGE)


def observed_generation(obj: dict[str, Any]) -> int | None:
    """`metadata.generation` when it is a usable int64, else None (left out of the condition)."""
    generation = metadata_of(obj).get("generation")
    return generation if type(generation) is int and 0 <= generation < 2**63 else None


def current_condition(obj: dict[str, Any]) -> dict[str, Any] | None:
    return find_condition(obj, api.CONDITION_TYPE)


def plan_status(obj: dict[str, Any], now: datetime) -> StatusPlan:
    previous = current_condition(obj)
    verdict = validate_feedbackstore(obj)
    generation = observed_generation(obj)
    extra = {} if generation is None else {"observedGeneration": generation}
    desired = make_condition(api.CONDITION_TYPE, verdict_fields(verdict), previous, now, **extra)
    return StatusPlan(desired, previous, verdict, condition_changed(previous, desired, _COMPARED))


def apply_configuration(
    obj: dict[str, Any], condition: dict[str, Any], *others: dict[str, Any]
) -> dict[str, Any]:
    """Identity plus our conditions: a list map keyed by `type`, so others' conditions stay; every
    condition we own goes in each apply, as one left out would be removed.
    """
    metadata = obj["metadata"]
    return {
        "apiVersion": api.API_VERSION,
        "kind": api.KIND,
        "metadata": {"name": metadata["name"], "namespace": metadata["namespace"]},
        "status": {"conditions": [condition, *others]},
    }
