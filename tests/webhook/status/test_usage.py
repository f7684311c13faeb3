"""In-use protection's pure core: who uses which store, its `InUse` condition, the finalizer."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from webhook.rules import inuse
from webhook.status.usage import (
    NOT_SERVED,
    Finalizer,
    ReferenceIndex,
    View,
    finalizer_configuration,
    finalizer_removal_patch,
    plan_usage,
    store_reference,
    users_among,
)

NOW = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)
EARLIER = "2025-04-01T00:00:00Z"
NS = "team"


def agent(name: str, ref: object, namespace: object = NS) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {"feedbackStoreRef": ref}}


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(agent("a", "store"), (NS, "store"), id="a name in the same namespace"),
        pytest.param(agent("a", ""), None, id="an empty name references nothing"),
        pytest.param(agent("a", None), None, id="no reference"),
        pytest.param(agent("a", {"name": "store"}), None, id="an object is not a name"),
        pytest.param(agent("a", "store", namespace=None), None, id="no namespace"),
        pytest.param({"metadata": {"name": "a", "namespace": NS}}, None, id="no spec"),
        pytest.param("junk", None, id="not an object"),
    ],
)
def test_store_reference(obj: object, expected: tuple[str, str] | None) -> None:
    assert store_reference(obj) == expected


def test_the_index_says_which_stores_each_change_touched() -> None:
    index = ReferenceIndex()
    assert index.link((NS, "a1"), (NS, "s1")) == {(NS, "s1")}
    assert index.link((NS, "a2"), (NS, "s1")) == {(NS, "s1")}
    assert index.link((NS, "a2"), (NS, "s1")) == set()  # unchanged: nothing to plan
    assert index.holders((NS, "s1")) == ("a1", "a2")
    assert index.link((NS, "a1"), (NS, "s2")) == {(NS, "s1"), (NS, "s2")}  # moved
    assert index.holders((NS, "s1")) == ("a2",)
    assert index.remove((NS, "a2")) == {(NS, "s1")}
    assert index.holders((NS, "s1")) == ()
    assert index.remove((NS, "a2")) == set()


def test_same_names_in_other_namespaces_are_other_objects() -> None:
    index = ReferenceIndex()
    index.link(("x", "a"), ("x", "s"))
    index.link(("y", "a"), ("y", "s"))
    assert index.remove(("x", "a")) == {("x", "s")}
    assert index.holders(("y", "s")) == ("a",)


@pytest.mark.parametrize(
    ("holders", "expected"),
    [
        pytest.param(("a",), "1 AgentDeployment: a", id="one, singular"),
        pytest.param(("a", "b"), "2 AgentDeployments: a, b", id="two"),
        pytest.param(
            tuple(f"a{i:02}" for i in range(13)),
            "13 AgentDeployments: " + ", ".join(f"a{i:02}" for i in range(10)) + " and 3 more",
            id="past the limit the rest are counted",
        ),
    ],
)
def test_the_users_clause_names_ten_and_counts_the_rest(
    holders: tuple[str, ...], expected: str
) -> None:
    assert inuse.in_use_clause(inuse.users_of(holders)) == f"in use by {expected}"


def store(
    *, finalizer: bool = False, deleting: bool = False, in_use: dict[str, Any] | None = None
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "s", "namespace": NS, "uid": "u-1"}
    if finalizer:
        metadata["finalizers"] = ["other.example/keep", inuse.FINALIZER]
    if deleting:
        metadata["deletionTimestamp"] = EARLIER
    obj: dict[str, Any] = {"metadata": metadata, "spec": {}}
    if in_use is not None:
        obj["status"] = {"conditions": [{"type": "Validated", "status": "True"}, in_use]}
    return obj


def cond(status: str, reason: str, message: str) -> dict[str, Any]:
    return {
        "type": inuse.CONDITION_TYPE,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": EARLIER,
    }


USED = cond("True", "Referenced", "in use by 1 AgentDeployment: a")
FREE = cond("False", "NotReferenced", "no AgentDeployment references it")
DEFERRED = cond(
    "True",
    "DeletionDeferred",
    "deletion deferred until no AgentDeployment references it; in use by 1 AgentDeployment: a",
)

# (id, store, view, condition status/reason or None, write needed, finalizer change)
PLANS: list[tuple[str, dict[str, Any], View, tuple[str, str] | None, bool, Finalizer | None]] = [
    (
        "unsynced view: nothing decided, nothing written",
        store(finalizer=True, in_use=USED),
        None,
        ("True", "Referenced"),
        False,
        None,
    ),
    ("unsynced view, nothing there: nothing at all", store(), None, None, False, None),
    (
        "referenced, new: condition and finalizer added",
        store(),
        ("a",),
        ("True", "Referenced"),
        True,
        Finalizer.ADD,
    ),
    (
        "referenced, up to date: no request",
        store(finalizer=True, in_use=USED),
        ("a",),
        ("True", "Referenced"),
        False,
        None,
    ),
    (
        "never referenced: condition written, no finalizer",
        store(),
        (),
        ("False", "NotReferenced"),
        True,
        None,
    ),
    (
        "no longer referenced: finalizer removed",
        store(finalizer=True, in_use=USED),
        (),
        ("False", "NotReferenced"),
        True,
        Finalizer.REMOVE,
    ),
    (
        "deleted while referenced: deferred, finalizer kept",
        store(finalizer=True, deleting=True, in_use=USED),
        ("a",),
        ("True", "DeletionDeferred"),
        True,
        None,
    ),
    (
        "deleted while referenced but not yet held: the finalizer cannot be added any more",
        store(deleting=True),
        ("a",),
        ("True", "DeletionDeferred"),
        True,
        None,
    ),
    (
        "deferred, last agent gone: released",
        store(finalizer=True, deleting=True, in_use=DEFERRED),
        (),
        ("False", "NotReferenced"),
        True,
        Finalizer.REMOVE,
    ),
    ("CRD not served, no condition: nothing written", store(), NOT_SERVED, None, False, None),
    (
        "CRD not served, stale condition and finalizer: corrected and released",
        store(finalizer=True, in_use=USED),
        NOT_SERVED,
        ("False", "AgentDeploymentsNotServed"),
        True,
        Finalizer.REMOVE,
    ),
]


@pytest.mark.parametrize(
    ("obj", "view", "expected", "needed", "finalizer"),
    [pytest.param(*case[1:], id=case[0]) for case in PLANS],
)
def test_plan_usage(
    obj: dict[str, Any],
    view: View,
    expected: tuple[str, str] | None,
    needed: bool,
    finalizer: Finalizer | None,
) -> None:
    plan = plan_usage(obj, view, NOW)
    got = None if plan.condition is None else (plan.condition["status"], plan.condition["reason"])
    assert (got, plan.needed, plan.finalizer) == (expected, needed, finalizer)


def test_last_transition_time_moves_only_when_status_flips() -> None:
    deferred = plan_usage(store(finalizer=True, deleting=True, in_use=USED), ("a",), NOW)
    assert deferred.condition is not None
    assert deferred.condition["lastTransitionTime"] == EARLIER  # True -> True
    assert deferred.deferred
    assert "deletion deferred" in deferred.condition["message"]
    freed = plan_usage(store(finalizer=True, in_use=USED), (), NOW)
    assert freed.condition is not None
    assert freed.condition["lastTransitionTime"] == "2025-05-01T12:00:00Z"
    assert not freed.deferred
    again = plan_usage(store(finalizer=True, deleting=True, in_use=DEFERRED), ("a",), NOW)
    assert not again.deferred  # said once, not on every resync
    assert not again.needed


def test_the_message_names_the_agents_and_counts_the_rest() -> None:
    holders = tuple(f"agent-{i:02}" for i in range(12))
    plan = plan_usage(store(), holders, NOW)
    assert plan.condition is not None
    assert plan.condition["message"] == (
        "in use by 12 AgentDeployments: " + ", ".join(holders[:10]) + " and 2 more"
    )


def test_finalizer_configuration_claims_our_entry_or_nothing() -> None:
    obj = store(finalizer=True)
    identity = {"name": "s", "namespace": NS, "uid": "u-1"}
    head = {"apiVersion": "agents.ctxmesh.ai/v1beta1", "kind": "FeedbackStore"}
    assert finalizer_configuration(obj, True) == {
        **head,
        "metadata": {**identity, "finalizers": [inuse.FINALIZER]},
    }
    assert finalizer_configuration(obj, False) == {**head, "metadata": identity}


def test_the_guarded_removal_tests_the_uid_and_the_list_it_removes_from() -> None:
    store = {
        "metadata": {
            "uid": "u-1",
            "finalizers": ["example.com/backup", inuse.FINALIZER, "example.com/other"],
        }
    }
    assert finalizer_removal_patch(store) == [
        {"op": "test", "path": "/metadata/uid", "value": "u-1"},
        {
            "op": "test",
            "path": "/metadata/finalizers",
            "value": ["example.com/backup", inuse.FINALIZER, "example.com/other"],
        },
        {"op": "remove", "path": "/metadata/finalizers/1"},
    ]
    assert finalizer_removal_patch({"metadata": {"finalizers": ["example.com/backup"]}}) is None


def test_the_servers_list_names_the_agents_of_that_store_only() -> None:
    def agent(name: str, namespace: str, ref: str | None) -> dict[str, object]:
        spec = {"feedbackStoreRef": ref} if ref else {}
        return {"metadata": {"name": name, "namespace": namespace}, "spec": spec}

    listed = [
        agent("b", "ns", "store"),
        agent("a", "ns", "store"),
        agent("c", "ns", "other"),
        agent("d", "elsewhere", "store"),
        agent("e", "ns", None),
    ]
    assert users_among(listed, ("ns", "store")) == ("a", "b")
    assert users_among([], ("ns", "store")) == ()
