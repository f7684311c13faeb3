"""The FeedbackStores: does each carry a current `Stalled`, who else writes `Validated`, and does
any hang in `Terminating`? `Stalled` is the status writer's own condition, with every problem
of the spec; `Validated` may be the platform's operator's (its first problem only, and `True`
for some invalid stores), so neither the count of invalid stores nor the writer's freshness is
read from it. A current `Stalled` `True` is an invalid object the webhook never saw (created
before it, or while it failed open): worth a warning."""

from __future__ import annotations

import json
import shlex
from collections import defaultdict
from collections.abc import Sequence
from typing import Any, Final

from webhook import install
from webhook.doctor.result import CheckResult, fail, ok, refused, skip, warn
from webhook.doctor.snapshot import FetchedList, Unreadable
from webhook.install import FIELD_MANAGER
from webhook.kube.objects import (
    CONDITION_TRUE,
    deletion_in_progress,
    find_condition,
    has_finalizer,
    metadata_of,
)
from webhook.rules import api, inuse
from webhook.status.cleanup import plan_finalizer_cleanup
from webhook.status.usage import current_in_use
from webhook.status.validated import current_condition, observed_generation, validated_writers
from webhook.text import counted, named

NAME: Final = "store-conditions"
WRITERS: Final = "validated-writers"
HELD: Final = "held-deletions"
SHOWN: Final = 5


def check_stores(stores: FetchedList, scope: str, namespace: str) -> CheckResult:
    """`namespace` is the components' (`--namespace`), where the status writer's logs are."""
    if isinstance(stores, Unreadable):
        return refused(NAME, "list FeedbackStores", stores, "list on feedbackstores")
    if stores is None:
        return skip(NAME, "FeedbackStores not listed")
    by_state: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for store in stores:
        by_state[_state(store)].append(store)
    missing, stale, invalid = by_state["missing"], by_state["stale"], by_state["invalid"]
    total = f"{_count(stores)} {scope}"
    stalled = api.STALLED_CONDITION_TYPE
    if missing or stale:
        parts = []
        if missing:
            parts.append(f"{len(missing)} without {stalled} ({_few(missing)})")
        if stale:
            parts.append(f"{len(stale)} stale: observedGeneration < generation ({_few(stale)})")
        return fail(
            NAME,
            f"{total}: {'; '.join(parts)}",
            "the status writer is not keeping up: see the Lease check, and its logs "
            f"(kubectl -n {namespace} logs deploy/{install.STATUS_WRITER.name})",
        )
    if invalid:
        return warn(
            NAME,
            f"{total}, all current; {len(invalid)} invalid, {stalled}=True ({_few(invalid)})",
            f"kubectl describe fs NAME -n NS: its {stalled} condition names every problem "
            "to fix in the spec",
        )
    return ok(NAME, f"{total}, every {stalled} current")


def _state(store: dict[str, Any]) -> str:
    condition = find_condition(store, api.STALLED_CONDITION_TYPE)
    if condition is None:
        return "missing"
    seen = condition.get("observedGeneration")
    generation = observed_generation(store)
    if type(seen) is not int or (generation is not None and seen < generation):
        return "stale"
    return "invalid" if condition.get("status") == CONDITION_TRUE else "current"


def check_validated_writers(stores: FetchedList) -> CheckResult:
    """Another field manager owning part of `Validated`: the status writer leaves it to it (the
    platform's operator does write it); worth knowing which, and how to hand it back."""
    if isinstance(stores, Unreadable) or stores is None:
        return skip(WRITERS, "FeedbackStores not listed")
    by_manager: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for store in stores:
        for manager in validated_writers(store):
            by_manager[manager].append(store)
    kind, stalled = api.CONDITION_TYPE, api.STALLED_CONDITION_TYPE
    if not by_manager:
        return ok(WRITERS, f"no field manager but {FIELD_MANAGER} writes {kind}")
    found = "; ".join(
        f"{manager} on {_count(written)} ({_few(written)})"
        for manager, written in sorted(by_manager.items())
    )
    first = by_manager[min(by_manager)][0]
    return warn(
        WRITERS,
        f"{kind} is also written by {found}: the status writer leaves it to them and keeps "
        f"every problem in {stalled}",
        f"if that is the platform's operator, nothing to fix: its {kind} says its first problem "
        f"(kubectl describe fs NAME -n NS shows every one under {stalled}); else stop that "
        f"controller and give {kind} back to the status writer, e.g. {hand_back_command(first)}",
    )


def hand_back_command(store: dict[str, Any]) -> str:
    """A JSON patch of the status removing `Validated` whole (everyone's fields of it, so its
    managers with it), guarded by a `test` of its position; the writer then writes its own."""
    metadata = metadata_of(store)
    status = store.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    items = conditions if isinstance(conditions, list) else []
    found = current_condition(store)
    index = next((i for i, condition in enumerate(items) if condition is found), 0)
    path = f"/status/conditions/{index}"
    patch = json.dumps(
        [{"op": "test", "path": f"{path}/type", "value": api.CONDITION_TYPE},
         {"op": "remove", "path": path}],
        separators=(",", ":"),
    )  # fmt: skip
    return (
        f"kubectl -n {metadata.get('namespace')} patch fs {metadata.get('name')} "
        f"--subresource=status --type=json -p '{patch}'"
    )


def check_held(stores: FetchedList, *, writer_leads: bool, lease: tuple[str, str]) -> CheckResult:
    """Held while AgentDeployments use it: the feature working; held unused or unled: a failure.
    `lease`: (namespace, name) of the status writer's Lease, which `cleanup` must be told of."""
    if isinstance(stores, Unreadable) or stores is None:
        return skip(HELD, "FeedbackStores not listed")
    holding = [s for s in stores if deletion_in_progress(s) and has_finalizer(s, inuse.FINALIZER)]
    if not holding:
        return ok(HELD, f"no FeedbackStore held in Terminating by {inuse.FINALIZER}")
    if not writer_leads:
        return fail(
            HELD,
            f"{_count(holding)} Terminating with {inuse.FINALIZER} and no status writer "
            f"leading to release them: {_few(holding)}",
            "start the status writer again (see status-writer-lease); if it is gone for good: "
            + _way_out(holding, lease),
        )
    released = [s for s in holding if _in_use_reason(s) == inuse.REASON_NOT_REFERENCED]
    if released:
        return fail(
            HELD,
            f"{_count(released)} no longer referenced but still held: {_few(released)}",
            "the status writer is not releasing them: check its logs; meanwhile "
            f"{remove_command(released[0])}",
        )
    return warn(
        HELD,
        f"{_count(holding)} Terminating until their agents let go: {_few(holding)}",
        "remove spec.feedbackStoreRef from the AgentDeployments named by "
        "kubectl describe fs NAME -n NS (or delete them); the store then goes",
    )


def _way_out(holding: Sequence[dict[str, Any]], lease: tuple[str, str]) -> str:
    """`cleanup`, the command built for a writer gone for good, for the stores whose finalizer
    it removes (the writer's alone, by `metadata.managedFields`); for the others, which it
    leaves as they stand, the patch of the first."""
    left = [store for store in holding if not plan_finalizer_cleanup(store).removed]
    ways = []
    if len(left) < len(holding):
        ways.append(
            f"run {cleanup_command(*lease)}, which takes the writer's finalizer and conditions "
            "off every FeedbackStore (docs/install.md, Uninstall)"
        )
    if left:
        ways.append(
            f"{_count(left)} whose finalizer is not the writer's alone, which cleanup leaves "
            f"({_few(left)}): where no agent needs the store, remove ours alone, e.g. "
            f"{remove_command(left[0])}"
        )
    return "; ".join(ways)


def cleanup_command(lease_namespace: str, lease_name: str) -> str:
    """The command built for a writer gone for good, told of a Lease not where it ships."""
    words = ["feedbackstore-webhook", "cleanup"]
    if lease_namespace != install.NAMESPACE:
        words += ["--lease-namespace", lease_namespace]
    if lease_name != install.LEASE:
        words += ["--lease-name", lease_name]
    return shlex.join(words)


def remove_command(store: dict[str, Any]) -> str:
    """For a store the leading writer fails to release (`cleanup` refuses while a writer leads):
    a JSON patch removing our finalizer alone, guarded by a `test` of its position."""
    metadata = metadata_of(store)
    path = f"/metadata/finalizers/{list(metadata.get('finalizers') or []).index(inuse.FINALIZER)}"
    patch = json.dumps(
        [{"op": "test", "path": path, "value": inuse.FINALIZER}, {"op": "remove", "path": path}],
        separators=(",", ":"),
    )
    return (
        f"kubectl -n {metadata.get('namespace')} patch fs {metadata.get('name')} "
        f"--type=json -p '{patch}'"
    )


def _in_use_reason(store: dict[str, Any]) -> object:
    condition = current_in_use(store)
    return condition.get("reason") if condition else None


def _count(stores: Sequence[object]) -> str:
    return counted(len(stores), api.KIND)


def _few(stores: Sequence[dict[str, Any]]) -> str:
    labels = []
    for store in stores[:SHOWN]:
        metadata = metadata_of(store)
        labels.append(f"{metadata.get('namespace')}/{metadata.get('name')}")
    return named(labels, len(stores))
