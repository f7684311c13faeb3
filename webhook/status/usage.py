"""Who uses which FeedbackStore: its `InUse` condition and our finalizer, planned purely.

As `kubernetes.io/pvc-protection`: the finalizer is held while agents reference the store (never
added once deletion began: kube-apiserver forbids it) and removed as soon as none does.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from webhook.kube.cache import Key
from webhook.kube.objects import (
    CONDITION_FALSE,
    CONDITION_TRUE,
    condition_changed,
    deletion_in_progress,
    find_condition,
    has_finalizer,
    make_condition,
    metadata_of,
)
from webhook.rules import api, inuse

_COMPARED: Final = ("status", "reason", "message")
RELEASED_MESSAGE: Final = (
    f"no {inuse.AGENT_KIND} references it any more: "
    f"finalizer {inuse.FINALIZER} removed, deletion goes on"
)


class NotServed(enum.Enum):
    """The AgentDeployment resource is not served: nothing can use a store."""

    NOT_SERVED = "not_served"


NOT_SERVED: Final = NotServed.NOT_SERVED
# None: the view is not synced; a tuple: the sorted names of the agents using the store.
View = tuple[str, ...] | NotServed | None


class Finalizer(enum.Enum):
    ADD = "add"
    REMOVE = "remove"


def store_reference(agent: object) -> Key | None:
    """`(namespace, store name)` an AgentDeployment names, or None when it names none."""
    spec = agent.get("spec") if isinstance(agent, dict) else None
    ref = spec.get("feedbackStoreRef") if isinstance(spec, dict) else None
    namespace = metadata_of(agent).get("namespace")
    if not isinstance(namespace, str) or not namespace or not isinstance(ref, str) or not ref:
        return None
    return namespace, ref


class ReferenceIndex:
    """Agent → its store, store → its agents; a change returns the stores it touched. Not locked."""

    def __init__(self) -> None:
        self._store_of: dict[Key, Key] = {}
        self._agents_of: dict[Key, set[str]] = {}

    def link(self, agent: Key, store: Key | None) -> set[Key]:
        before = self._store_of.get(agent)
        if before == store:
            return set()
        if before is not None:
            del self._store_of[agent]
            names = self._agents_of[before]
            names.discard(agent[1])
            if not names:
                del self._agents_of[before]
        if store is not None:
            self._store_of[agent] = store
            self._agents_of.setdefault(store, set()).add(agent[1])
        return {key for key in (before, store) if key is not None}

    def remove(self, agent: Key) -> set[Key]:
        return self.link(agent, None)

    def holders(self, store: Key) -> tuple[str, ...]:
        return tuple(sorted(self._agents_of.get(store, ())))


def current_in_use(store: dict[str, Any]) -> dict[str, Any] | None:
    return find_condition(store, inuse.CONDITION_TYPE)


def in_use_fields(store: dict[str, Any], view: tuple[str, ...] | NotServed) -> tuple[str, str, str]:
    if view is NOT_SERVED:
        return CONDITION_FALSE, inuse.REASON_NOT_SERVED, inuse.NOT_SERVED_MESSAGE
    if not view:
        return CONDITION_FALSE, inuse.REASON_NOT_REFERENCED, inuse.NOT_REFERENCED_MESSAGE
    deferred = deletion_in_progress(store)
    reason = inuse.REASON_DEFERRED if deferred else inuse.REASON_REFERENCED
    return CONDITION_TRUE, reason, inuse.in_use_message(inuse.users_of(view), deferred)


@dataclass(frozen=True, slots=True)
class UsagePlan:
    condition: dict[str, Any] | None
    previous: dict[str, Any] | None
    needed: bool
    finalizer: Finalizer | None

    @property
    def deferred(self) -> bool:
        """Just deferred: the Event-worthy moment."""
        reason = self.condition.get("reason") if self.condition else None
        return reason == inuse.REASON_DEFERRED and (
            self.previous is None or self.previous.get("reason") != inuse.REASON_DEFERRED
        )


def plan_usage(store: dict[str, Any], view: View, now: datetime) -> UsagePlan:
    previous = current_in_use(store)
    if view is None:  # not synced: keep what is there, change nothing
        return UsagePlan(previous, previous, False, None)
    if view is NOT_SERVED and previous is None:
        return UsagePlan(None, None, False, _finalizer(store, ()))
    condition = make_condition(inuse.CONDITION_TYPE, in_use_fields(store, view), previous, now)
    needed = condition_changed(previous, condition, _COMPARED)
    holders = () if view is NOT_SERVED else view
    return UsagePlan(condition, previous, needed, _finalizer(store, holders))


def _finalizer(store: dict[str, Any], holders: tuple[str, ...]) -> Finalizer | None:
    held = has_finalizer(store, inuse.FINALIZER)
    in_use = bool(holders)
    if in_use and not held and not deletion_in_progress(store):
        return Finalizer.ADD
    if not in_use and held:
        return Finalizer.REMOVE
    return None


def users_among(agents: Iterable[object], store: Key) -> tuple[str, ...]:
    """The sorted names of the listed agents that name `store`, as `View` holds them."""
    return tuple(
        sorted(
            str(metadata_of(agent).get("name"))
            for agent in agents
            if store_reference(agent) == store
        )
    )


def finalizer_removal_patch(store: dict[str, Any]) -> list[dict[str, Any]] | None:
    """A JSON patch taking our finalizer off `store` as it was read, and nothing else: the
    `test` ops make it fail (422) if the object was recreated or its finalizers changed since,
    as an index is only ours under the list it was read from. None when ours is not there.

    For when server-side apply cannot: it drops only our ownership of the entry, so one another
    manager also lists (a `kubectl apply` of a manifest naming it) stays.
    """
    metadata = metadata_of(store)
    finalizers = metadata.get("finalizers")
    if not isinstance(finalizers, list) or inuse.FINALIZER not in finalizers:
        return None
    guard = [{"op": "test", "path": "/metadata/finalizers", "value": finalizers}]
    if isinstance(metadata.get("uid"), str):
        guard.insert(0, {"op": "test", "path": "/metadata/uid", "value": metadata["uid"]})
    remove = {"op": "remove", "path": f"/metadata/finalizers/{finalizers.index(inuse.FINALIZER)}"}
    return [*guard, remove]


def finalizer_configuration(store: dict[str, Any], hold: bool) -> dict[str, Any]:
    """The apply body for the main resource: `[ours]` claims only that entry of the set-type list,
    none gives it up; `uid` leaves a store recreated meanwhile untouched (409).
    """
    metadata = store["metadata"]
    body_metadata: dict[str, Any] = {"name": metadata["name"], "namespace": metadata["namespace"]}
    if isinstance(metadata.get("uid"), str):
        body_metadata["uid"] = metadata["uid"]
    if hold:
        body_metadata["finalizers"] = [inuse.FINALIZER]
    return {"apiVersion": api.API_VERSION, "kind": api.KIND, "metadata": body_metadata}
