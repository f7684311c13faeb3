"""Properties of the emulator's server-side apply and patch engines (no HTTP, so many cases).

Kubernetes: "Server-Side Apply" (list maps merged by key; a manager's removal takes only what
nobody else owns), RFC 7386 (merge patch), RFC 6902 (JSON patch).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.emulator import fieldmanager, patching
from tests.support.emulator.errors import ApiError
from tests.support.emulator.fieldmanager import Ownership
from tests.support.emulator.resources import FEEDBACKSTORES
from tests.support.emulator.samples import condition

MANAGERS = ("writer", "ready-controller", "policy-engine")
TYPES = ("Validated", "Ready", "Synced", "Degraded", "Progressing")

# Each manager applies a sequence of condition sets drawn from its own condition types.
ownership_plan = st.permutations(TYPES).flatmap(
    lambda types: st.lists(
        st.tuples(
            st.sampled_from(range(len(MANAGERS))),
            st.dictionaries(st.sampled_from(types), st.sampled_from(["True", "False", "Unknown"])),
        ),
        min_size=1,
        max_size=12,
    ).map(lambda steps: (types, steps))
)


def _owned_types(types: tuple[str, ...], manager: int) -> set[str]:
    return {t for i, t in enumerate(types) if i % len(MANAGERS) == manager}


@settings(max_examples=150)
@given(ownership_plan)
def test_managers_with_disjoint_condition_types_never_conflict_or_clobber(
    plan: tuple[tuple[str, ...], list[tuple[int, dict[str, str]]]],
) -> None:
    types, steps = plan
    live: dict[str, Any] = {"metadata": {"name": "fs"}, "spec": {}}
    owners = Ownership()
    latest: dict[int, dict[str, str]] = {}
    for manager, wanted in steps:
        mine = {t: s for t, s in wanted.items() if t in _owned_types(types, manager)}
        config = {"status": {"conditions": [condition(t, s) for t, s in mine.items()]}}
        result = fieldmanager.apply(
            live, owners, config, FEEDBACKSTORES, MANAGERS[manager], "status", False, "t"
        )
        live, owners = result.obj, result.ownership
        latest[manager] = mine
    expected = {t: s for applied in latest.values() for t, s in applied.items()}
    present = {c["type"]: c["status"] for c in live.get("status", {}).get("conditions", [])}
    assert present == expected


@settings(max_examples=100)
@given(
    st.sampled_from(TYPES),
    st.sampled_from(["True", "False"]),
    st.sampled_from(["True", "False"]),
)
def test_a_contested_condition_conflicts_exactly_when_values_differ_and_force_takes_it(
    contested: str, first: str, second: str
) -> None:
    live: dict[str, Any] = {"metadata": {"name": "fs"}}
    owners = Ownership()
    applied = fieldmanager.apply(
        live,
        owners,
        {"status": {"conditions": [condition(contested, first)]}},
        FEEDBACKSTORES,
        "old",
        "status",
        False,
        "t",
    )
    config = {"status": {"conditions": [condition(contested, second)]}}
    if first == second:
        shared = fieldmanager.apply(
            applied.obj, applied.ownership, config, FEEDBACKSTORES, "new", "status", False, "t"
        )
        assert shared.obj["status"] == applied.obj["status"]
    else:
        with pytest.raises(ApiError) as raised:
            fieldmanager.apply(
                applied.obj, applied.ownership, config, FEEDBACKSTORES, "new", "status", False, "t"
            )
        assert raised.value.code == 409
    forced = fieldmanager.apply(
        applied.obj, applied.ownership, config, FEEDBACKSTORES, "new", "status", True, "t"
    )
    assert forced.obj["status"]["conditions"][0]["status"] == second


json_scalars = st.one_of(st.booleans(), st.integers(-1000, 1000), st.text(max_size=5))
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=10,
)
json_objects = st.dictionaries(st.text(max_size=3), json_values, max_size=4)


def _merge_diff(source: Any, target: Any) -> Any:
    """The RFC 7386 patch that turns ``source`` into ``target`` (neither contains null)."""
    if not isinstance(source, dict) or not isinstance(target, dict):
        return target
    patch: dict[str, Any] = {k: None for k in source if k not in target}
    for key, value in target.items():
        if key not in source:
            patch[key] = value
        elif source[key] != value:
            patch[key] = _merge_diff(source[key], value)
    return patch


@settings(max_examples=200)
@given(json_objects, json_objects)
def test_a_merge_patch_diff_turns_one_document_into_the_other(
    source: dict[str, Any], target: dict[str, Any]
) -> None:
    assert patching.merge_patch(source, _merge_diff(source, target)) == target


@settings(max_examples=200)
@given(json_objects, st.text(min_size=1, max_size=3), json_values)
def test_a_json_patch_add_then_test_then_remove_round_trips(
    document: dict[str, Any], key: str, value: Any
) -> None:
    pointer = "/" + key.replace("~", "~0").replace("/", "~1")
    before = copy.deepcopy(document)
    added = patching.json_patch(document, [{"op": "add", "path": pointer, "value": value}])
    assert added[key] == value
    patching.json_patch(added, [{"op": "test", "path": pointer, "value": value}])
    removed = patching.json_patch(added, [{"op": "remove", "path": pointer}])
    expected = {k: v for k, v in document.items() if k != key}
    assert removed == expected
    assert document == before  # the input is never modified in place
