"""Is the status writer keeping up: does every FeedbackStore carry a current `Validated`?

Missing: no `Validated` condition at all. Stale: its `observedGeneration` is
behind `metadata.generation` (or absent), so it speaks of an older spec.
Stores whose current condition is `False` are invalid objects the webhook
never saw (created before it, or while it failed open): worth a warning.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from webhook.doctor.result import (
    CheckResult,
    count_stores,
    fail,
    few,
    ok,
    refused,
    skip,
    store_label,
    warn,
)
from webhook.doctor.snapshot import Unreadable
from webhook.rules import api
from webhook.status.validated import STATUS_FALSE, current_condition, observed_generation

NAME: Final = "store-conditions"


@dataclass(slots=True)
class Tally:
    total: int = 0
    missing: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)


def tally(stores: Sequence[dict[str, Any]]) -> Tally:
    counted = Tally()
    for store in stores:
        counted.total += 1
        label = store_label(store)
        condition = current_condition(store)
        if condition is None:
            counted.missing.append(label)
            continue
        seen = condition.get("observedGeneration")
        generation = observed_generation(store)
        if type(seen) is not int or (generation is not None and seen < generation):
            counted.stale.append(label)
        elif condition.get("status") == STATUS_FALSE:
            counted.invalid.append(label)
    return counted


def check_stores(stores: list[dict[str, Any]] | Unreadable | None, scope: str) -> CheckResult:
    if isinstance(stores, Unreadable):
        return refused(NAME, "list FeedbackStores", stores, "list on feedbackstores")
    if stores is None:
        return skip(NAME, "FeedbackStores not listed")
    counted = tally(stores)
    if counted.missing or counted.stale:
        parts = []
        if counted.missing:
            parts.append(
                f"{len(counted.missing)} without {api.CONDITION_TYPE} ({few(counted.missing)})"
            )
        if counted.stale:
            stale = counted.stale
            parts.append(f"{len(stale)} stale: observedGeneration < generation ({few(stale)})")
        return fail(
            NAME,
            f"{count_stores(counted.total)} {scope}: {'; '.join(parts)}",
            "the status writer is not keeping up: see the Lease check, and its logs "
            "(kubectl -n feedbackstore-system logs deploy/feedbackstore-status-writer)",
        )
    if counted.invalid:
        return warn(
            NAME,
            f"{count_stores(counted.total)} {scope}, all current; {len(counted.invalid)} "
            f"Validated=False ({few(counted.invalid)})",
            "kubectl describe fs NAME -n NS shows what to fix in each spec",
        )
    return ok(NAME, f"{count_stores(counted.total)} {scope}, every {api.CONDITION_TYPE} current")
