"""`cleanup`'s plan: a store with its `managedFields` in, the writes that take back what is ours
alone out, as literal bodies.

The managedFields are the shapes a real kube-apiserver v1.37.2 records
(tests/kube/test_cleanup_real.py runs the same on it): the writer's status apply owns each
field of `Validated`, `Stalled` and `InUse`; its apply to the object owns the finalizer's item
of the set `metadata.finalizers`; the platform's status UPDATE owns the fields it changed.
"""

from __future__ import annotations

from typing import Any

import pytest

from webhook.status.cleanup import (
    FinalizerCleanup,
    Shared,
    StatusCleanup,
    Tally,
    describe,
    plan_cleanup,
)

WRITER, PLATFORM = "feedbackstore-status-writer", "ctxmesh-operator"
FINALIZER = "agents.ctxmesh.ai/in-use-protection"
FIELDS = ("lastTransitionTime", "message", "observedGeneration", "reason", "status", "type")
UID = "0b7c3a9e-0000-4000-8000-000000000001"


def condition(kind: str, status: str, reason: str, message: str) -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": 1,
        "lastTransitionTime": "2026-12-04T05:00:00Z",
    }


VALIDATED = condition("Validated", "True", "SpecCoherent", "feedback store spec is coherent")
STALLED = condition("Stalled", "False", "SpecCoherent", "feedback store spec is coherent")
IN_USE = {
    "type": "InUse",
    "status": "True",
    "reason": "Referenced",
    "message": "in use by 1 AgentDeployment: support-agent",
    "lastTransitionTime": "2026-12-04T05:00:00Z",
}
READY = {"type": "Ready", "status": "True", "reason": "Up", "message": "serving",
         "lastTransitionTime": "2026-12-04T05:00:00Z"}  # fmt: skip


def owning(manager: str, operation: str, conditions: dict[str, tuple[str, ...]]) -> dict[str, Any]:
    """A status entry owning, of each condition type, the named fields (`.`: the item)."""
    items = {
        f'k:{{"type":"{kind}"}}': {("." if f == "." else f"f:{f}"): {} for f in fields}
        for kind, fields in conditions.items()
    }
    return {
        "manager": manager,
        "operation": operation,
        "apiVersion": "agents.ctxmesh.ai/v1beta1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:status": {"f:conditions": items}},
        "subresource": "status",
    }


def holding(manager: str, operation: str = "Apply") -> dict[str, Any]:
    """An entry of the object owning the finalizer's item."""
    return {
        "manager": manager,
        "operation": operation,
        "apiVersion": "agents.ctxmesh.ai/v1beta1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": {"f:finalizers": {f'v:"{FINALIZER}"': {}}}},
    }


WHOLE = (".", *FIELDS)
OURS_ALL = owning(WRITER, "Apply", {"Validated": WHOLE, "Stalled": WHOLE, "InUse": WHOLE})


def store(*entries: dict[str, Any], conditions: tuple[dict[str, Any], ...] = (),
          finalizers: tuple[str, ...] = ()) -> dict[str, Any]:  # fmt: skip
    metadata: dict[str, Any] = {
        "name": "support",
        "namespace": "agents",
        "uid": UID,
        "resourceVersion": "417",
        "generation": 1,
        "managedFields": list(entries),
    }
    if finalizers:
        metadata["finalizers"] = list(finalizers)
    obj = {"apiVersion": "agents.ctxmesh.ai/v1beta1", "kind": "FeedbackStore",
           "metadata": metadata, "spec": {"human": {"scores": [{"name": "thumbs"}]}}}  # fmt: skip
    if conditions:
        obj["status"] = {"conditions": list(conditions)}
    return obj


def body(metadata: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "agents.ctxmesh.ai/v1beta1",
        "kind": "FeedbackStore",
        "metadata": {"name": "support", "namespace": "agents", **metadata},
        **fields,
    }


PRECONDITIONS = {"uid": UID, "resourceVersion": "417"}
NO_FINALIZER_WRITE = FinalizerCleanup(False, None, None)


@pytest.mark.parametrize(
    ("obj", "status", "finalizer"),
    [
        pytest.param(
            store(
                OURS_ALL,
                holding(WRITER),
                conditions=(VALIDATED, STALLED, IN_USE),
                finalizers=(FINALIZER,),
            ),
            StatusCleanup(("Validated", "Stalled", "InUse"), (), body(PRECONDITIONS)),
            FinalizerCleanup(True, None, body({"uid": UID})),
            id="a store only the writer wrote loses its three conditions and its finalizer",
        ),
        pytest.param(
            store(
                owning(
                    WRITER,
                    "Apply",
                    {
                        "Validated": (
                            ".",
                            "lastTransitionTime",
                            "observedGeneration",
                            "reason",
                            "status",
                            "type",
                        ),
                        "Stalled": WHOLE,
                        "InUse": WHOLE,
                    },
                ),
                owning(PLATFORM, "Update", {"Validated": ("message",)}),
                conditions=(VALIDATED, STALLED, IN_USE),
            ),
            StatusCleanup(
                ("Stalled", "InUse"),
                (Shared("Validated", (PLATFORM,)),),
                body(
                    PRECONDITIONS,
                    status={
                        "conditions": [
                            {
                                "lastTransitionTime": "2026-12-04T05:00:00Z",
                                "observedGeneration": 1,
                                "reason": "SpecCoherent",
                                "status": "True",
                                "type": "Validated",
                            }
                        ]
                    },
                ),
            ),
            NO_FINALIZER_WRITE,
            id="Validated the platform changed a field of keeps our fields at their values",
        ),
        pytest.param(
            store(
                owning(WRITER, "Apply", {"Validated": ("type",), "Stalled": WHOLE}),
                owning(PLATFORM, "Update", {"Validated": tuple(f for f in WHOLE if f != "type")}),
                conditions=(VALIDATED, STALLED),
            ),
            StatusCleanup(
                ("Stalled",),
                (Shared("Validated", (PLATFORM,)),),
                body(PRECONDITIONS, status={"conditions": [{"type": "Validated"}]}),
            ),
            NO_FINALIZER_WRITE,
            id="Validated of which we own only the type keeps just that",
        ),
        pytest.param(
            store(
                owning(WRITER, "Apply", {"Stalled": WHOLE, "InUse": WHOLE}),
                owning(PLATFORM, "Update", {"Validated": WHOLE, "Ready": WHOLE}),
                conditions=(VALIDATED, READY, STALLED, IN_USE),
            ),
            StatusCleanup(("Stalled", "InUse"), (), body(PRECONDITIONS)),
            NO_FINALIZER_WRITE,
            id="the platform's own Validated and Ready are not ours: not in the apply, left",
        ),
        pytest.param(
            store(
                owning(WRITER, "Apply", {"Stalled": WHOLE}),
                owning("kubectl-edit", "Update", {"Stalled": ("message",)}),
                conditions=(STALLED,),
            ),
            StatusCleanup((), (Shared("Stalled", ("kubectl-edit",)),), None),
            NO_FINALIZER_WRITE,
            id="a Stalled someone edited is shared: nothing of ours alone, no write",
        ),
        pytest.param(
            store(
                owning(WRITER, "Apply", {"Stalled": WHOLE}),
                owning(WRITER, "Update", {"Stalled": ("message",)}),
                conditions=(STALLED,),
            ),
            StatusCleanup((), (Shared("Stalled", (f"{WRITER} (Update)",)),), None),
            NO_FINALIZER_WRITE,
            id="our name under another operation is another owner: its part is not our apply's",
        ),
        pytest.param(
            store(holding(WRITER), holding("kubectl-patch", "Update"), finalizers=(FINALIZER,)),
            StatusCleanup((), (), None),
            FinalizerCleanup(False, Shared(FINALIZER, ("kubectl-patch",)), body({"uid": UID})),
            id="a finalizer another manager also holds stays; our claim on it goes",
        ),
        pytest.param(
            store(holding("kubectl-patch", "Update"), finalizers=(FINALIZER,)),
            StatusCleanup((), (), None),
            NO_FINALIZER_WRITE,
            id="our finalizer put there by someone else is theirs: left",
        ),
        pytest.param(
            store(conditions=(VALIDATED, STALLED, IN_USE), finalizers=(FINALIZER,)),
            StatusCleanup((), (), None),
            NO_FINALIZER_WRITE,
            id="without managedFields nothing is proven ours: nothing written",
        ),
        pytest.param(
            store(owning(PLATFORM, "Update", {"Validated": WHOLE}), conditions=(VALIDATED,)),
            StatusCleanup((), (), None),
            NO_FINALIZER_WRITE,
            id="after a first run, nothing of ours is left: a second run writes nothing",
        ),
    ],
)
def test_the_plan_removes_what_is_ours_alone_and_nothing_else(
    obj: dict[str, Any], status: StatusCleanup, finalizer: FinalizerCleanup
) -> None:
    plan = plan_cleanup(obj)
    assert (plan.namespace, plan.name) == ("agents", "support")
    assert plan.status == status
    assert plan.finalizer == finalizer
    assert plan.writes == (status.body is not None or finalizer.body is not None)


@pytest.mark.parametrize(
    "managed_fields",
    [
        pytest.param("not a list", id="managedFields not a list"),
        pytest.param([None, 3, "x"], id="entries not mappings"),
        pytest.param(
            [{"manager": WRITER, "operation": "Apply", "fieldsV1": []}], id="odd fieldsV1"
        ),
        pytest.param(
            [
                {
                    "manager": WRITER,
                    "operation": "Apply",
                    "fieldsV1": {"f:status": {"f:conditions": {"k:{not json": {"f:type": {}}}}},
                }
            ],
            id="an unreadable key",
        ),
    ],
)
def test_hostile_shapes_read_as_nothing_of_ours(managed_fields: object) -> None:
    obj = store(conditions=(STALLED,), finalizers=(FINALIZER,))
    obj["metadata"]["managedFields"] = managed_fields
    assert not plan_cleanup(obj).writes


def test_each_changed_store_is_one_line_and_the_run_one_summary() -> None:
    shared = store(
        owning(WRITER, "Apply", {"Validated": ("type",), "Stalled": WHOLE, "InUse": WHOLE}),
        owning(PLATFORM, "Update", {"Validated": tuple(f for f in WHOLE if f != "type")}),
        holding(WRITER),
        conditions=(VALIDATED, STALLED, IN_USE),
        finalizers=(FINALIZER,),
    )
    alone = store(OURS_ALL, conditions=(VALIDATED, STALLED, IN_USE))
    plans = [plan_cleanup(shared), plan_cleanup(alone), plan_cleanup(store())]
    assert describe(plans[0], dry_run=False) == (
        "agents/support: removed finalizer agents.ctxmesh.ai/in-use-protection; removed "
        "conditions Stalled, InUse; left Validated (also owned by ctxmesh-operator)"
    )
    assert describe(plans[1], dry_run=True) == (
        "agents/support: would remove conditions Validated, Stalled, InUse"
    )
    tally = Tally(stores=3)
    for plan in plans:
        tally.add(plan)
    assert tally.summary(dry_run=False) == (
        "2 of 3 FeedbackStores changed: 1 finalizers and 5 conditions removed; "
        "1 left to other field managers"
    )
    assert tally.summary(dry_run=True) == (
        "dry run, nothing written: 2 of 3 FeedbackStores would change: 1 finalizers and 5 "
        "conditions to remove; 1 left to other field managers"
    )
