"""Is the status writer keeping up: does every FeedbackStore carry a current `Validated`?

A store whose current condition is `False` is an invalid object the webhook
never saw (created before it, or while it failed open): worth a warning.
"""

from __future__ import annotations

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


def _state(store: dict[str, Any]) -> str:
    condition = current_condition(store)
    if condition is None:
        return "missing"
    seen = condition.get("observedGeneration")
    generation = observed_generation(store)
    if type(seen) is not int or (generation is not None and seen < generation):
        return "stale"
    return "invalid" if condition.get("status") == STATUS_FALSE else "current"


def check_stores(stores: list[dict[str, Any]] | Unreadable | None, scope: str) -> CheckResult:
    if isinstance(stores, Unreadable):
        return refused(NAME, "list FeedbackStores", stores, "list on feedbackstores")
    if stores is None:
        return skip(NAME, "FeedbackStores not listed")
    counted: dict[str, list[str]] = {"missing": [], "stale": [], "invalid": [], "current": []}
    for store in stores:
        counted[_state(store)].append(store_label(store))
    missing, stale, invalid = counted["missing"], counted["stale"], counted["invalid"]
    if missing or stale:
        parts = []
        if missing:
            parts.append(f"{len(missing)} without {api.CONDITION_TYPE} ({few(missing)})")
        if stale:
            parts.append(f"{len(stale)} stale: observedGeneration < generation ({few(stale)})")
        return fail(
            NAME,
            f"{count_stores(len(stores))} {scope}: {'; '.join(parts)}",
            "the status writer is not keeping up: see the Lease check, and its logs "
            "(kubectl -n feedbackstore-system logs deploy/feedbackstore-status-writer)",
        )
    if invalid:
        return warn(
            NAME,
            f"{count_stores(len(stores))} {scope}, all current; {len(invalid)} "
            f"Validated=False ({few(invalid)})",
            "kubectl describe fs NAME -n NS shows what to fix in each spec",
        )
    return ok(NAME, f"{count_stores(len(stores))} {scope}, every {api.CONDITION_TYPE} current")
