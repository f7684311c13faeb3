"""`Stalled`, ours alone, and `Validated`, yielded to any other field manager that writes it.

Pure: objects with their `managedFields` in, a plan out. The managedFields here are the shapes a
real kube-apiserver v1.37.2 records (tests/kube/test_platform_neighbour_real.py shows them live):
our server-side apply owns each field it applied; the platform's status UPDATE takes the fields
whose value it changed (its first problem as the message of an invalid store's `Validated`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tests.support.stores import VALID, VALID_MESSAGE
from webhook.kube.managed_fields import Owner, condition_owners, condition_ownership
from webhook.rules import api
from webhook.status.validated import apply_configuration, plan_status, validated_writers

NOW = datetime(2026, 12, 4, 6, 0, 0, tzinfo=UTC)
NOW_TEXT = "2026-12-04T06:00:00Z"
EARLIER = "2026-12-04T05:00:00Z"
WRITER, PLATFORM = "feedbackstore-status-writer", "ctxmesh-operator"
DUPLICATE_SPEC: dict[str, Any] = {"human": {"scores": [{"name": "thumbs"}, {"name": "thumbs"}]}}
OURS = (
    'spec.human.scores[1].name: Duplicate value: "thumbs": human score names must be unique '
    "(first declared at spec.human.scores[0].name)"
)
THEIRS = (
    'score name "thumbs" is declared by both human and human — names must be unique across the '
    "whole store (they are the source-attribution key)"
)
ALL_FIELDS = ("lastTransitionTime", "message", "observedGeneration", "reason", "status", "type")


def condition(kind: str, status: str, reason: str, message: str) -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": 1,
        "lastTransitionTime": EARLIER,
    }


INVALID_VALIDATED = condition("Validated", "False", "InvalidSpec", OURS)
INVALID_STALLED = condition("Stalled", "True", "InvalidSpec", OURS)
THEIR_VALIDATED = {**INVALID_VALIDATED, "message": THEIRS}


def owning(manager: str, operation: str, kind: str, *fields: str) -> dict[str, Any]:
    """A managedFields entry owning `fields` of the `kind` condition (and `.` when listed)."""
    item = {("." if f == "." else f"f:{f}"): {} for f in fields}
    conditions = {f'k:{{"type":"{kind}"}}': item}
    return {
        "manager": manager,
        "operation": operation,
        "apiVersion": api.API_VERSION,
        "fieldsType": "FieldsV1",
        "subresource": "status",
        "fieldsV1": {"f:status": {"f:conditions": conditions}},
    }


def store(spec: dict[str, Any], conditions: list[dict[str, Any]], *managed: dict[str, Any]) -> dict:
    metadata = {
        "name": "support",
        "namespace": "agents",
        "generation": 1,
        "resourceVersion": "42",
        "managedFields": list(managed),
    }
    return {
        "apiVersion": api.API_VERSION,
        "kind": api.KIND,
        "metadata": metadata,
        "spec": spec,
        "status": {"conditions": conditions},
    }


OUR_STALLED = owning(WRITER, "Apply", "Stalled", ".", *ALL_FIELDS)


def test_a_missing_stalled_beside_an_up_to_date_validated_is_written() -> None:
    plan = plan_status(store(DUPLICATE_SPEC, [INVALID_VALIDATED]), NOW)
    assert plan.needed
    assert plan.stalled == {**INVALID_STALLED, "lastTransitionTime": NOW_TEXT}


def test_a_valid_store_is_not_stalled_and_says_so_with_the_platforms_words() -> None:
    plan = plan_status(store(VALID, []), NOW)
    assert plan.stalled == {
        "type": api.STALLED_CONDITION_TYPE,
        "status": "False",
        "reason": "SpecCoherent",
        "message": VALID_MESSAGE,
        "observedGeneration": 1,
        "lastTransitionTime": NOW_TEXT,
    }


# (id, object, managers yielded to, conditions our apply carries, its precondition, needed)
YIELD_CASES: list[tuple[str, dict[str, Any], tuple[str, ...], list[dict], str | None, bool]] = [
    (
        "only our apply owns Validated: we write it, every problem in it",
        store(
            DUPLICATE_SPEC,
            [THEIR_VALIDATED, INVALID_STALLED],
            owning(WRITER, "Apply", "Validated", ".", *ALL_FIELDS),
            OUR_STALLED,
        ),
        (),
        [INVALID_VALIDATED, INVALID_STALLED],
        None,
        True,
    ),
    (
        "the platform's UPDATE took the message: we keep what we own, as it stands, and no write",
        store(
            DUPLICATE_SPEC,
            [THEIR_VALIDATED, INVALID_STALLED],
            owning(
                WRITER,
                "Apply",
                "Validated",
                ".",
                "lastTransitionTime",
                "observedGeneration",
                "reason",
                "status",
                "type",
            ),
            owning(PLATFORM, "Update", "Validated", "message"),
            OUR_STALLED,
        ),
        (PLATFORM,),
        [{k: v for k, v in THEIR_VALIDATED.items() if k != "message"}, INVALID_STALLED],
        "42",
        False,
    ),
    (
        "the platform wrote Validated first: we carry none of it",
        store(
            DUPLICATE_SPEC,
            [THEIR_VALIDATED, INVALID_STALLED],
            owning(PLATFORM, "Update", "Validated", ".", *ALL_FIELDS),
            OUR_STALLED,
        ),
        (PLATFORM,),
        [INVALID_STALLED],
        None,
        False,
    ),
    (
        "we own only the item and its key: the key alone keeps the item, with no precondition",
        store(
            DUPLICATE_SPEC,
            [THEIR_VALIDATED, INVALID_STALLED],
            owning(WRITER, "Apply", "Validated", ".", "type"),
            owning(
                PLATFORM,
                "Update",
                "Validated",
                "lastTransitionTime",
                "message",
                "observedGeneration",
                "reason",
                "status",
            ),
            OUR_STALLED,
        ),
        (PLATFORM,),
        [{"type": "Validated"}, INVALID_STALLED],
        None,
        False,
    ),
    (
        "an unknown applier of Validated is yielded to as well",
        store(VALID, [THEIR_VALIDATED], owning("kubectl", "Apply", "Validated", ".", *ALL_FIELDS)),
        ("kubectl",),
        [
            condition("Stalled", "False", "SpecCoherent", VALID_MESSAGE)
            | {"lastTransitionTime": NOW_TEXT}
        ],
        None,
        True,
    ),
    (
        "another manager of other conditions only is no reason to yield",
        store(
            DUPLICATE_SPEC,
            [INVALID_VALIDATED, INVALID_STALLED],
            owning(WRITER, "Apply", "Validated", ".", *ALL_FIELDS),
            OUR_STALLED,
            owning(PLATFORM, "Update", "Ready", ".", *ALL_FIELDS),
        ),
        (),
        [INVALID_VALIDATED, INVALID_STALLED],
        None,
        False,
    ),
]


@pytest.mark.parametrize(
    ("obj", "yielded_to", "conditions", "precondition", "needed"),
    [case[1:] for case in YIELD_CASES],
    ids=[case[0] for case in YIELD_CASES],
)
def test_validated_is_yielded_to_any_other_manager_of_it(
    obj: dict[str, Any],
    yielded_to: tuple[str, ...],
    conditions: list[dict[str, Any]],
    precondition: str | None,
    needed: bool,
) -> None:
    plan = plan_status(obj, NOW)
    assert plan.yielded_to == yielded_to == validated_writers(obj)
    assert plan.conditions == conditions
    assert plan.resource_version == precondition
    assert plan.needed is needed


def test_a_spec_change_while_yielded_writes_stalled_and_leaves_validated_as_it_stands() -> None:
    obj = store(
        VALID,
        [THEIR_VALIDATED, INVALID_STALLED],
        owning(WRITER, "Apply", "Validated", ".", "reason", "status", "type"),
        owning(PLATFORM, "Update", "Validated", "lastTransitionTime", "message"),
        OUR_STALLED,
    )
    plan = plan_status(obj, NOW)
    assert plan.needed
    assert plan.conditions == [
        {"type": "Validated", "status": "False", "reason": "InvalidSpec"},
        {
            **condition("Stalled", "False", "SpecCoherent", VALID_MESSAGE),
            "lastTransitionTime": NOW_TEXT,
        },
    ]
    body = apply_configuration(obj, *plan.conditions, resource_version=plan.resource_version)
    assert body["metadata"] == {"name": "support", "namespace": "agents", "resourceVersion": "42"}


@pytest.mark.parametrize(
    ("conditions", "managed", "previous"),
    [
        ([INVALID_VALIDATED, INVALID_STALLED], [], "False"),
        ([{**INVALID_VALIDATED, "status": "True"}], [], "True"),
        ([THEIR_VALIDATED], [owning(PLATFORM, "Update", "Validated", ".", *ALL_FIELDS)], None),
        (
            [THEIR_VALIDATED, {**INVALID_STALLED, "status": "False"}],
            [owning(PLATFORM, "Update", "Validated", ".", *ALL_FIELDS)],
            "True",
        ),
        ([], [], None),
    ],
    ids=[
        "Stalled True is a last verdict of invalid",
        "without Stalled, a Validated of ours says it",
        "another manager's Validated is not our verdict",
        "Stalled says it whoever writes Validated",
        "nothing written yet: no last verdict",
    ],
)
def test_the_last_verdict_for_events_is_ours(
    conditions: list[dict[str, Any]], managed: list[dict[str, Any]], previous: str | None
) -> None:
    assert plan_status(store(DUPLICATE_SPEC, conditions, *managed), NOW).previous_status == previous


# -- reading managedFields ----------------------------------------------------------


HOSTILE: list[tuple[str, object]] = [
    ("managedFields is a string", "x"),
    ("an entry is not an object", [None, 3, "Apply"]),
    ("fieldsV1 is a list", [{"manager": "m", "fieldsV1": []}]),
    ("conditions is a string", [{"manager": "m", "fieldsV1": {"f:status": {"f:conditions": "x"}}}]),
    (
        "a key is not JSON",
        [
            {
                "manager": "m",
                "fieldsV1": {"f:status": {"f:conditions": {"k:{type": {"f:status": {}}}}},
            }
        ],
    ),
    ("another condition's key", [owning("m", "Update", "Ready", "status")]),
    ("an empty item owns nothing", [owning("m", "Update", "Validated")]),
]


@pytest.mark.parametrize("managed", [c[1] for c in HOSTILE], ids=[c[0] for c in HOSTILE])
def test_managed_fields_of_any_other_shape_name_no_owner(managed: object) -> None:
    assert condition_owners({"metadata": {"managedFields": managed}}, "Validated") == {}


def test_owners_are_told_apart_by_manager_and_operation() -> None:
    obj = store(
        VALID,
        [],
        owning(WRITER, "Apply", "Validated", ".", "status"),
        owning(PLATFORM, "Update", "Validated", "message"),
        owning(PLATFORM, "Apply", "Validated", "reason"),
    )
    assert condition_owners(obj, "Validated") == {
        Owner(WRITER, "Apply"): frozenset({".", "status"}),
        Owner(PLATFORM, "Update"): frozenset({"message"}),
        Owner(PLATFORM, "Apply"): frozenset({"reason"}),
    }


def test_the_ownership_of_one_condition_is_cut_out_of_managed_fields_in_their_shape() -> None:
    spec_entry = {
        "manager": "kubectl",
        "operation": "Apply",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:human": {}}},
    }
    mixed = owning(PLATFORM, "Update", "Validated", "message")
    mixed["fieldsV1"]["f:status"]["f:conditions"]['k:{"type":"Ready"}'] = {"f:status": {}}
    obj = store(VALID, [], spec_entry, mixed)
    cut = condition_ownership(obj, "Validated")
    assert cut == [
        {
            "manager": PLATFORM,
            "operation": "Update",
            "subresource": "status",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:status": {"f:conditions": {'k:{"type":"Validated"}': {"f:message": {}}}}
            },
        },
    ]
    assert condition_owners({"metadata": {"managedFields": cut}}, "Validated") == condition_owners(
        obj, "Validated"
    )
    assert condition_ownership(store(VALID, [], spec_entry), "Validated") == []
