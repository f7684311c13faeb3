"""Taking back what the status writer put on FeedbackStores, planned purely: object in, writes out.

An uninstall leaves the stores (they are the platform's), so what the writer added must go with
it: a condition left behind is read by people and tools as current, and our finalizer left on a
store in use holds its deletion for ever. What is ours is read from `metadata.managedFields`, not
from the condition types we write: a condition any other manager owns part of (the platform's
`Validated`, a `Stalled` someone edited) is left as it stands, and so is a finalizer another
manager also holds.

Both writes are server-side applies as the writer's own field manager, each under a
`resourceVersion` precondition, so each removes exactly what this plan saw. An apply removes
what its manager owned and no longer applies: alone, a field goes; but a condition left out is
removed whole, even the fields another manager owns in it (docs/status-writer.md, "Beside the
platform's operator"). So each condition kept carries again the fields of it we own, at their
values: that changes and removes nothing, and the precondition makes sure no other owner came
between the read and the write (409, and a fresh read decides again).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from webhook.install import FIELD_MANAGER
from webhook.kube.managed_fields import (
    APPLY,
    Owner,
    condition_owners,
    finalizer_owners,
    owned_conditions,
    owned_part,
)
from webhook.kube.objects import find_condition, metadata_of
from webhook.rules import api, inuse

# The writer's applies; its field manager never writes another way.
OURS: Final = Owner(FIELD_MANAGER, APPLY)


@dataclass(frozen=True, slots=True)
class Shared:
    """A condition (or the finalizer) we own part of and others too: left as it stands."""

    name: str
    others: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class StatusCleanup:
    removed: tuple[str, ...]  # condition types that are ours alone
    shared: tuple[Shared, ...]
    # The apply to `status`; None: nothing of ours to remove, no request.
    body: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class FinalizerCleanup:
    removed: bool  # our finalizer goes: no other manager holds it
    shared: Shared | None  # others hold it too: it stays, only our claim goes
    body: dict[str, Any] | None  # the apply to the object; None: we hold no finalizer


@dataclass(frozen=True, slots=True)
class StoreCleanup:
    namespace: str
    name: str
    status: StatusCleanup
    finalizer: FinalizerCleanup

    @property
    def writes(self) -> bool:
        return self.status.body is not None or self.finalizer.body is not None


def _others(owners: Iterable[Owner]) -> tuple[str, ...]:
    """Owners but ours, by name (ours under another operation named with it)."""
    names = {
        owner.manager if owner.manager != FIELD_MANAGER else f"{owner.manager} ({owner.operation})"
        for owner in owners
        if owner != OURS
    }
    return tuple(sorted(names))


def _body(obj: dict[str, Any], *preconditions: str, **fields: Any) -> dict[str, Any]:
    """Name and namespace, and the `preconditions` (`uid`, `resourceVersion`) as this plan read
    them: the apply fails with 409 unless the object still has them."""
    metadata = metadata_of(obj)
    identity: dict[str, Any] = {k: metadata[k] for k in ("name", "namespace") if k in metadata}
    identity.update((k, metadata[k]) for k in preconditions if isinstance(metadata.get(k), str))
    return {"apiVersion": api.API_VERSION, "kind": api.KIND, "metadata": identity, **fields}


def plan_status_cleanup(obj: dict[str, Any]) -> StatusCleanup:
    removed: list[str] = []
    shared: list[Shared] = []
    kept: list[dict[str, Any]] = []
    for condition_type in owned_conditions(obj, OURS):
        owners = condition_owners(obj, condition_type)
        others = _others(owners)
        if not others:
            removed.append(condition_type)
            continue
        shared.append(Shared(condition_type, others))
        current = find_condition(obj, condition_type) or {"type": condition_type}
        kept.append(owned_part(current, owners[OURS]))
    if not removed:
        return StatusCleanup((), tuple(shared), None)
    status = {"status": {"conditions": kept}} if kept else {}
    body = _body(obj, "uid", "resourceVersion", **status)
    return StatusCleanup(tuple(removed), tuple(shared), body)


def plan_finalizer_cleanup(obj: dict[str, Any]) -> FinalizerCleanup:
    owners = finalizer_owners(obj, inuse.FINALIZER)
    if OURS not in owners:
        return FinalizerCleanup(False, None, None)
    others = _others(owners)
    shared = Shared(inuse.FINALIZER, others) if others else None
    # Our apply to the object holds the finalizer alone: without it, our claim goes. No version
    # precondition: the status write before it moves the version, and an item of a set another
    # manager also owns stays when we let go of it.
    return FinalizerCleanup(not others, shared, _body(obj, "uid"))


def plan_cleanup(obj: dict[str, Any]) -> StoreCleanup:
    """Both writes as planned from one read. The status goes first: the finalizer's removal may
    let the object go, and its apply needs the version the status write leaves."""
    metadata = metadata_of(obj)
    return StoreCleanup(
        str(metadata.get("namespace", "")),
        str(metadata.get("name", "")),
        plan_status_cleanup(obj),
        plan_finalizer_cleanup(obj),
    )


def describe(plan: StoreCleanup, *, dry_run: bool) -> str:
    """One line for an object that changes: what goes, and what stays because others own it."""
    remove = "would remove" if dry_run else "removed"
    parts = []
    if plan.finalizer.removed:
        parts.append(f"{remove} finalizer {inuse.FINALIZER}")
    if plan.status.removed:
        parts.append(f"{remove} conditions {', '.join(plan.status.removed)}")
    shared = [*plan.status.shared, *((plan.finalizer.shared,) if plan.finalizer.shared else ())]
    parts += [f"left {s.name} (also owned by {', '.join(s.others)})" for s in shared]
    return f"{plan.namespace}/{plan.name}: {'; '.join(parts)}"


@dataclass(slots=True)
class Tally:
    """What a run did, for its summary line."""

    stores: int = 0
    changed: int = 0
    finalizers: int = 0
    conditions: int = 0
    left: int = 0

    def add(self, plan: StoreCleanup) -> None:
        self.changed += plan.writes
        self.finalizers += plan.finalizer.removed
        self.conditions += len(plan.status.removed)
        self.left += len(plan.status.shared) + (plan.finalizer.shared is not None)

    def summary(self, *, dry_run: bool) -> str:
        verb = "would change" if dry_run else "changed"
        line = (
            f"{self.changed} of {self.stores} FeedbackStores {verb}: "
            f"{self.finalizers} finalizers and {self.conditions} conditions "
            f"{'to remove' if dry_run else 'removed'}; {self.left} left to other field managers"
        )
        return f"dry run, nothing written: {line}" if dry_run else line
