"""From a verdict to the conditions the status writer keeps, and whether it must write them,
purely: an object already holding them costs no request; hostile `status` shapes read as none yet.

`Stalled` is ours alone and always says the whole verdict. `Validated` is vocabulary we share
with the platform's operator, which writes it too, with its first problem only: we
write it while no other field manager owns any part of it, and once one does we yield it, so two
controllers never rewrite each other's message for ever. Yielding is not leaving it out of our
apply: kube-apiserver then removes the whole condition, the other manager's fields with it
(docs/status-writer.md, "Beside the platform's operator"). We keep applying the fields of it we
still own, at the values they hold, under a resourceVersion precondition, so nothing of it ever
changes; a field the other manager changes becomes its own and drops out of ours.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from webhook.install import FIELD_MANAGER
from webhook.kube.managed_fields import APPLY, Owner, condition_owners, owned_part
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
    condition: dict[str, Any]  # `Validated` by our verdict
    previous: dict[str, Any] | None
    stalled: dict[str, Any]
    previous_stalled: dict[str, Any] | None
    verdict: Verdict
    # Other field managers owning part of `Validated`: while any does, we yield it to them.
    yielded_to: tuple[str, ...]
    # While yielding: the fields of `Validated` our apply still owns, at the values they hold.
    kept: dict[str, Any] | None
    # The object's resourceVersion, the precondition of an apply that carries values of `kept`.
    resource_version: str | None
    needed: bool

    @property
    def conditions(self) -> list[dict[str, Any]]:
        """The conditions our apply carries: each one we own, as one left out is removed."""
        if not self.yielded_to:
            return [self.condition, self.stalled]
        return [self.stalled] if self.kept is None else [self.kept, self.stalled]

    @property
    def previous_status(self) -> object:
        """Our last verdict in `Validated`'s terms (`True`: valid): read from `Stalled`, else from
        a `Validated` of ours; None when neither says it."""
        if self.previous_stalled is not None:
            stalled = self.previous_stalled.get("status")
            return {CONDITION_TRUE: CONDITION_FALSE, CONDITION_FALSE: CONDITION_TRUE}.get(
                str(stalled), stalled
            )
        if self.previous is not None and not self.yielded_to:
            return self.previous.get("status")
        return None


def verdict_fields(verdict: Verdict) -> tuple[str, str, str]:
    if verdict.valid:
        return CONDITION_TRUE, api.REASON_VALID, messages.MESSAGE_VALID
    return CONDITION_FALSE, api.REASON_INVALID, summarize(verdict, MAX_CONDITION_MESSAGE)


def stalled_fields(validated: tuple[str, str, str]) -> tuple[str, str, str]:
    """`Validated`'s reason and message under the opposite status: `Stalled` True is invalid."""
    status, reason, message = validated
    return (CONDITION_FALSE if status == CONDITION_TRUE else CONDITION_TRUE), reason, message


def observed_generation(obj: dict[str, Any]) -> int | None:
    """`metadata.generation` when it is a usable int64, else None (left out of the condition)."""
    generation = metadata_of(obj).get("generation")
    return generation if type(generation) is int and 0 <= generation < 2**63 else None


def current_condition(obj: dict[str, Any]) -> dict[str, Any] | None:
    return find_condition(obj, api.CONDITION_TYPE)


def validated_writers(obj: dict[str, Any]) -> tuple[str, ...]:
    """Field managers other than ours that own part of `Validated`, by name."""
    return _others(condition_owners(obj, api.CONDITION_TYPE))


def _others(owners: dict[Owner, frozenset[str]]) -> tuple[str, ...]:
    return tuple(sorted({owner.manager for owner in owners if owner.manager != FIELD_MANAGER}))


def _kept(owned: frozenset[str], previous: dict[str, Any] | None) -> dict[str, Any] | None:
    """The part of `previous` our apply owns (None: nothing), at its values: applied again, it
    changes nothing and removes nothing."""
    if previous is None or not owned:
        return None
    return owned_part(previous, owned)


def plan_status(obj: dict[str, Any], now: datetime) -> StatusPlan:
    previous = current_condition(obj)
    previous_stalled = find_condition(obj, api.STALLED_CONDITION_TYPE)
    verdict = validate_feedbackstore(obj)
    generation = observed_generation(obj)
    extra = {} if generation is None else {"observedGeneration": generation}
    fields = verdict_fields(verdict)
    desired = make_condition(api.CONDITION_TYPE, fields, previous, now, **extra)
    stalled = make_condition(
        api.STALLED_CONDITION_TYPE, stalled_fields(fields), previous_stalled, now, **extra
    )
    needed = condition_changed(previous_stalled, stalled, _COMPARED)
    owners = condition_owners(obj, api.CONDITION_TYPE)
    yielded_to = _others(owners)
    owned = owners.get(Owner(FIELD_MANAGER, APPLY), frozenset())
    kept = _kept(owned, previous) if yielded_to else None
    if not yielded_to:
        needed = needed or condition_changed(previous, desired, _COMPARED)
    # Values of `Validated` are applied only as they stand at this version of the object.
    version = metadata_of(obj).get("resourceVersion") if kept and len(kept) > 1 else None
    return StatusPlan(
        desired,
        previous,
        stalled,
        previous_stalled,
        verdict,
        yielded_to,
        kept,
        version if isinstance(version, str) else None,
        needed,
    )


def apply_configuration(
    obj: dict[str, Any],
    condition: dict[str, Any],
    *others: dict[str, Any],
    resource_version: str | None = None,
) -> dict[str, Any]:
    """Identity plus our conditions: a list map keyed by `type`, so others' conditions stay; every
    condition we own goes in each apply, as one left out would be removed. `resource_version`
    makes the apply fail with 409 unless the object is still that version.
    """
    metadata = obj["metadata"]
    identity = {"name": metadata["name"], "namespace": metadata["namespace"]}
    if resource_version is not None:
        identity["resourceVersion"] = resource_version
    return {
        "apiVersion": api.API_VERSION,
        "kind": api.KIND,
        "metadata": identity,
        "status": {"conditions": [condition, *others]},
    }
