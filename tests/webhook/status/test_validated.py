"""The `Validated` condition the status writer wants on an object, and when it must write it.

Pure: objects in, a plan out. Table-driven, with the exact condition expected.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from tests.support.stores import VALID, VALID_MESSAGE
from webhook.rules import api
from webhook.status.validated import (
    MAX_CONDITION_MESSAGE,
    apply_configuration,
    current_condition,
    observed_generation,
    plan_status,
)

NOW = datetime(2025, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)
NOW_TEXT = "2025-03-04T05:06:07Z"
EARLIER = "2024-01-02T03:04:05Z"
DUPLICATE_SPEC: dict[str, Any] = {"human": {"scores": [{"name": "thumbs"}, {"name": "thumbs"}]}}
DUPLICATE_MESSAGE = (
    'spec.human.scores[1].name: Duplicate value: "thumbs": human score names must be unique '
    "(first declared at spec.human.scores[0].name)"
)
NO_SOURCE_MESSAGE = (
    "spec: Required value: feedback must declare at least one source: "
    "human.scores or an external channel"
)


def twin(condition: dict[str, Any]) -> dict[str, Any]:
    """The `Stalled` the writer keeps beside a `Validated` of ours: the same reason, message and
    times, the status turned round (True: invalid)."""
    flipped = {"True": "False", "False": "True"}.get(condition["status"], condition["status"])
    return {**condition, "type": "Stalled", "status": flipped}


def store(spec: object, generation: object = 3, conditions: object = None) -> dict[str, Any]:
    """A store whose status holds `conditions` and, as the writer leaves them, each `Validated`
    with its `Stalled` twin."""
    obj: dict[str, Any] = {
        "apiVersion": api.API_VERSION,
        "kind": api.KIND,
        "metadata": {"name": "support", "namespace": "agents", "generation": generation},
        "spec": spec,
    }
    if isinstance(conditions, list):
        twins = [twin(c) for c in conditions if c.get("type") == "Validated"]
        obj["status"] = {"conditions": [*conditions, *twins]}
    return obj


def validated(status: str, generation: int = 3, when: str = EARLIER, **fields: Any) -> dict:
    reason, message = (
        ("SpecCoherent", VALID_MESSAGE) if status == "True" else ("InvalidSpec", DUPLICATE_MESSAGE)
    )
    condition = {
        "type": "Validated",
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": when,
    }
    condition.update(fields)
    return condition


OTHER = {
    "type": "Ready",
    "status": "True",
    "reason": "Synced",
    "message": "x",
    "lastTransitionTime": EARLIER,
}

# (id, object, expected condition, write needed)
CASES: list[tuple[str, dict[str, Any], dict[str, Any], bool]] = [
    (
        "a valid object with no status gets True/SpecCoherent stamped now",
        store(VALID),
        validated("True", when=NOW_TEXT),
        True,
    ),
    (
        "an invalid object with no status gets False/InvalidSpec naming the problem",
        store(DUPLICATE_SPEC),
        validated("False", when=NOW_TEXT),
        True,
    ),
    (
        "an object without a spec is invalid for declaring no source",
        store(None),
        validated("False", when=NOW_TEXT, message=NO_SOURCE_MESSAGE),
        True,
    ),
    (
        "an up-to-date valid object needs no write",
        store(VALID, conditions=[validated("True")]),
        validated("True"),
        False,
    ),
    (
        "an up-to-date invalid object needs no write",
        store(DUPLICATE_SPEC, conditions=[validated("False")]),
        validated("False"),
        False,
    ),
    (
        "other conditions around ours do not matter",
        store(VALID, conditions=[OTHER, validated("True"), {**OTHER, "type": "Synced"}]),
        validated("True"),
        False,
    ),
    (
        "a fixed spec flips to True and moves lastTransitionTime",
        store(VALID, generation=4, conditions=[validated("False")]),
        validated("True", generation=4, when=NOW_TEXT),
        True,
    ),
    (
        "a broken spec flips to False and moves lastTransitionTime",
        store(DUPLICATE_SPEC, generation=4, conditions=[validated("True")]),
        validated("False", generation=4, when=NOW_TEXT),
        True,
    ),
    (
        "a new generation with the same verdict keeps lastTransitionTime",
        store(VALID, generation=9, conditions=[validated("True")]),
        validated("True", generation=9),
        True,
    ),
    (
        "a different problem with the same status keeps lastTransitionTime",
        store(None, conditions=[validated("False")]),
        validated("False", message=NO_SOURCE_MESSAGE),
        True,
    ),
    (
        "a stale reason is rewritten",
        store(VALID, conditions=[validated("True", reason="Old")]),
        validated("True"),
        True,
    ),
    (
        "an Unknown status left by someone else flips to our verdict",
        store(VALID, conditions=[{**validated("True"), "status": "Unknown"}]),
        validated("True", when=NOW_TEXT),
        True,
    ),
    (
        "a condition without lastTransitionTime is repaired with now",
        store(VALID, conditions=[validated("True", lastTransitionTime=None)]),
        validated("True", when=NOW_TEXT),
        True,
    ),
    (
        "an unparseable lastTransitionTime is repaired with now",
        store(VALID, conditions=[validated("True", lastTransitionTime="yesterday")]),
        validated("True", when=NOW_TEXT),
        True,
    ),
    (
        "an object without generation gets a condition without observedGeneration",
        store(VALID, generation=None),
        {k: v for k, v in validated("True", when=NOW_TEXT).items() if k != "observedGeneration"},
        True,
    ),
    (
        "a generation that is not an integer is left out",
        store(VALID, generation="7"),
        {k: v for k, v in validated("True", when=NOW_TEXT).items() if k != "observedGeneration"},
        True,
    ),
    (
        "a boolean generation is not an integer",
        store(VALID, generation=True),
        {k: v for k, v in validated("True", when=NOW_TEXT).items() if k != "observedGeneration"},
        True,
    ),
]


@pytest.mark.parametrize(
    ("obj", "condition", "needed"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_plan_status_gives_the_condition_and_whether_to_write(
    obj: dict[str, Any], condition: dict[str, Any], needed: bool
) -> None:
    plan = plan_status(obj, NOW)
    assert plan.condition == condition
    assert plan.stalled == twin(condition)
    assert plan.conditions == [condition, twin(condition)]
    assert plan.needed is needed


HOSTILE_STATUS: list[tuple[str, object]] = [
    ("status is a string", "broken"),
    ("status is a list", [1, 2]),
    ("conditions is a string", {"conditions": "Validated"}),
    ("conditions is a dict", {"conditions": {"type": "Validated"}}),
    ("conditions holds non-objects", {"conditions": [None, 3, "Validated", []]}),
    ("a condition has no type", {"conditions": [{"status": "True"}]}),
    ("status is null", None),
]


@pytest.mark.parametrize(
    "status", [c[1] for c in HOSTILE_STATUS], ids=[c[0] for c in HOSTILE_STATUS]
)
def test_a_malformed_status_reads_as_no_condition_and_gets_one(status: object) -> None:
    obj = store(VALID)
    obj["status"] = status
    assert current_condition(obj) is None
    plan = plan_status(obj, NOW)
    assert plan.needed
    assert plan.condition == validated("True", when=NOW_TEXT)


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ({"generation": 0}, 0),
        ({"generation": 2**63 - 1}, 2**63 - 1),
        ({"generation": 2**63}, None),
        ({"generation": -1}, None),
        ({"generation": 1.0}, None),
        ({}, None),
    ],
    ids=[
        "zero is a generation",
        "the int64 maximum is a generation",
        "beyond int64 is not",
        "a negative number is not",
        "a float is not",
        "a missing generation is none",
    ],
)
def test_observed_generation_is_a_usable_int64(metadata: dict, expected: int | None) -> None:
    assert observed_generation({"metadata": metadata}) == expected


def test_a_huge_invalid_object_gets_a_bounded_message_that_counts_the_rest() -> None:
    names = [{"name": "same", "categories": ["c"] * 64} for _ in range(5000)]
    plan = plan_status(store({"human": {"scores": names}}), NOW)
    message = plan.condition["message"]
    assert len(message) <= MAX_CONDITION_MESSAGE
    assert message.startswith("spec.human.scores: Too many: 5000: must have at most 64 items; ")
    assert message.endswith(" more problems")
    # Too many, then among the first 64 scores: 63 repeated names, 63 repeated categories each
    assert plan.verdict.problem_count == 1 + 63 + 64 * 63


def test_a_long_single_problem_is_cut_to_the_limit() -> None:
    spec = {"human": {"scores": [{"name": "x"}]}, "y" * 40000: 1}
    message = plan_status(store(spec), NOW).condition["message"]
    assert len(message) <= MAX_CONDITION_MESSAGE
    assert message.startswith("spec.yyyy")


def test_every_problem_is_named_in_the_message() -> None:
    spec = {"mode": "Audit", "human": {"scores": [{"name": "a", "dataType": "STRING"}]}}
    message = plan_status(store(spec), NOW).condition["message"]
    assert message == (
        'spec.mode: Unsupported value: "Audit": supported values: "Enforce", "Monitor"; '
        'spec.human.scores[0].dataType: Unsupported value: "STRING": supported values: '
        '"NUMERIC", "BOOLEAN", "CATEGORICAL"'
    )


def test_the_apply_body_carries_identity_and_only_our_condition() -> None:
    obj = store(VALID, conditions=[OTHER])
    obj["metadata"]["resourceVersion"] = "12"
    obj["metadata"]["labels"] = {"team": "a"}
    condition = plan_status(obj, NOW).condition
    assert apply_configuration(obj, condition) == {
        "apiVersion": "agents.ctxmesh.ai/v1beta1",
        "kind": "FeedbackStore",
        "metadata": {"name": "support", "namespace": "agents"},
        "status": {"conditions": [condition]},
    }
