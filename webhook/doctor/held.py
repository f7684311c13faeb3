"""Stores that in-use protection holds in `Terminating`, and whether anyone will let them go.

Held while AgentDeployments reference it is the feature working (a warning).
Held with no status writer leading, or after the writer's own condition says
the store is no longer in use, is a failure; its fix is the JSON patch that
removes our finalizer alone, for an admin whose writer is gone for good.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from webhook.doctor.result import CheckResult, count_stores, fail, few, ok, skip, store_label, warn
from webhook.doctor.snapshot import Unreadable
from webhook.kube.objects import deletion_in_progress, has_finalizer
from webhook.rules import inuse
from webhook.status.usage import current_in_use

NAME: Final = "held-deletions"


def held(stores: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        store
        for store in stores
        if deletion_in_progress(store) and has_finalizer(store, inuse.FINALIZER)
    ]


def check_held(
    stores: list[dict[str, Any]] | Unreadable | None, *, writer_leads: bool
) -> CheckResult:
    if isinstance(stores, Unreadable) or stores is None:
        return skip(NAME, "FeedbackStores not listed")
    holding = held(stores)
    if not holding:
        return ok(NAME, f"no FeedbackStore held in Terminating by {inuse.FINALIZER}")
    if not writer_leads:
        return fail(
            NAME,
            f"{count_stores(len(holding))} Terminating with {inuse.FINALIZER} and no status writer "
            f"leading to release them: {_few(holding)}",
            "start the status writer again (see status-writer-lease); if it is gone for good "
            f"and no agent needs the store: {remove_command(holding[0])}",
        )
    released = [s for s in holding if _reason(s) == inuse.REASON_NOT_REFERENCED]
    if released:
        return fail(
            NAME,
            f"{count_stores(len(released))} no longer referenced but still held: {_few(released)}",
            "the status writer is not releasing them: check its logs; meanwhile "
            f"{remove_command(released[0])}",
        )
    return warn(
        NAME,
        f"{count_stores(len(holding))} Terminating until their agents let go: {_few(holding)}",
        "remove spec.feedbackStoreRef from the AgentDeployments named by "
        "kubectl describe fs NAME -n NS (or delete them); the store then goes",
    )


def remove_command(store: dict[str, Any]) -> str:
    """A JSON patch removing our finalizer alone, guarded by a `test` of its position."""
    metadata = store.get("metadata") or {}
    finalizers = list(metadata.get("finalizers") or [])
    index = finalizers.index(inuse.FINALIZER)
    path = f"/metadata/finalizers/{index}"
    patch = json.dumps(
        [{"op": "test", "path": path, "value": inuse.FINALIZER}, {"op": "remove", "path": path}],
        separators=(",", ":"),
    )
    return (
        f"kubectl -n {metadata.get('namespace')} patch fs {metadata.get('name')} "
        f"--type=json -p '{patch}'"
    )


def _reason(store: dict[str, Any]) -> object:
    condition = current_in_use(store)
    return condition.get("reason") if condition else None


def _few(stores: Sequence[dict[str, Any]]) -> str:
    return few([store_label(s) for s in stores])
