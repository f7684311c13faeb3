"""Properties of the verdict that must hold for every input, not just the table's.

- any spec with a source, unique names and every limit respected is valid
  (and the declarative pydantic model agrees);
- adding one duplicate score name yields exactly one new problem, at that field;
- per-field limits agree with the pydantic model on near-valid specs;
- no JSON-like input, however hostile, makes the verdict raise;
- each way a spec can be nearly clean draws a finding, and the clean ones draw none.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pydantic
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from webhook.rules import ErrorType, api, validate_spec
from webhook.rules.model import typed_spec

# Mostly short names (cheap to generate), sometimes right at the length limit.
names = st.one_of(
    st.text(min_size=1, max_size=6),
    st.text(min_size=api.MAX_NAME_LENGTH, max_size=api.MAX_NAME_LENGTH),
)
data_types = st.sampled_from(api.DATA_TYPES)
categories = st.one_of(
    st.lists(st.text(max_size=6), max_size=4, unique=True),
    st.lists(
        st.text(max_size=6), min_size=api.MAX_CATEGORIES, max_size=api.MAX_CATEGORIES, unique=True
    ),
)


@st.composite
def score_decls(draw: st.DrawFn, name: str) -> dict[str, Any]:
    decl: dict[str, Any] = {"name": name}
    if draw(st.booleans()):
        decl["dataType"] = draw(data_types)
    if draw(st.booleans()):
        decl["categories"] = draw(categories)
    return decl


@st.composite
def valid_specs(draw: st.DrawFn) -> dict[str, Any]:
    n_human = draw(st.sampled_from([0, 1, 2, 3, api.MAX_HUMAN_SCORES - 1, api.MAX_HUMAN_SCORES]))
    n_external = draw(
        st.sampled_from([1, 2, 3, api.MAX_EXTERNAL_CHANNELS - 1, api.MAX_EXTERNAL_CHANNELS])
        if not n_human
        else st.sampled_from([0, 1, 2, api.MAX_EXTERNAL_CHANNELS])
    )
    score_names = draw(
        st.lists(names, min_size=n_human + n_external, max_size=n_human + n_external, unique=True)
    )
    channel_names = draw(st.lists(names, min_size=n_external, max_size=n_external, unique=True))
    spec: dict[str, Any] = {}
    if draw(st.booleans()):
        spec["mode"] = draw(st.sampled_from(api.MODES))
    if n_human:
        spec["human"] = {"scores": [draw(score_decls(n)) for n in score_names[:n_human]]}
    if n_external:
        spec["external"] = [
            {"name": c, "score": draw(score_decls(n))}
            for c, n in zip(channel_names, score_names[n_human:], strict=True)
        ]
    return spec


def score_name_paths(spec: dict[str, Any]) -> list[tuple[str, str]]:
    """(path, name) of every score name in store order: human scores, then channels."""
    human = [
        (f"spec.human.scores[{i}].name", s["name"])
        for i, s in enumerate(spec.get("human", {}).get("scores", []))
    ]
    external = [
        (f"spec.external[{i}].score.name", c["score"]["name"])
        for i, c in enumerate(spec.get("external", []))
    ]
    return human + external


@settings(max_examples=60, suppress_health_check=list(HealthCheck))
@given(valid_specs())
def test_any_coherent_spec_within_limits_is_valid(spec: dict[str, Any]) -> None:
    verdict = validate_spec(spec)
    assert verdict.valid, [str(p) for p in verdict.problems]
    typed = typed_spec(spec)
    assert typed.mode == spec.get("mode", api.DEFAULT_MODE)
    if typed.human is not None:
        assert [s.data_type for s in typed.human.scores] == [
            s.get("dataType", api.DEFAULT_DATA_TYPE) for s in spec["human"]["scores"]
        ]


@settings(max_examples=60, suppress_health_check=list(HealthCheck))
@given(valid_specs(), st.data())
def test_one_more_duplicate_name_is_exactly_one_problem_at_the_later_one(
    spec: dict[str, Any], data: st.DataObject
) -> None:
    taken = [name for _, name in score_name_paths(spec)]
    reused = data.draw(st.sampled_from(taken))
    human_scores = spec.get("human", {}).get("scores", [])
    external = spec.get("external", [])
    can_add_human = bool(human_scores) and len(human_scores) < api.MAX_HUMAN_SCORES
    can_add_channel = len(external) < api.MAX_EXTERNAL_CHANNELS
    assume(can_add_human or can_add_channel)  # a full store cannot take one more
    if can_add_human and (not can_add_channel or data.draw(st.booleans())):
        human_scores.append({"name": reused})
    else:
        channel_names = {c["name"] for c in external}
        fresh = next(f"ch-{i}" for i in range(100) if f"ch-{i}" not in channel_names)
        external.append({"name": fresh, "score": {"name": reused}})
        spec["external"] = external
    # Reported at the later of the two occurrences in store order.
    where = [path for path, name in score_name_paths(spec) if name == reused][1]
    problems = validate_spec(spec).problems
    assert [(p.field, p.type, p.bad_value) for p in problems] == [
        (where, ErrorType.DUPLICATE, reused)
    ]


# Near-valid values: on either side of each limit, wrong case, wrong type.
near_names = st.one_of(
    st.text(max_size=3),
    st.text(min_size=127, max_size=130),
    st.sampled_from([None, 1, ["x"]]),
)
near_data_types = st.sampled_from([*api.DATA_TYPES, "numeric", "STRING", 3, None])
near_categories = st.one_of(
    st.none(),
    st.lists(st.text(max_size=3), min_size=62, max_size=66, unique=True),
    st.lists(st.one_of(st.text(max_size=3), st.integers()), max_size=3, unique=True),
    st.just("a,b"),
)
PER_FIELD = {
    ErrorType.REQUIRED,
    ErrorType.TYPE_INVALID,
    ErrorType.NOT_SUPPORTED,
    ErrorType.TOO_LONG,
    ErrorType.TOO_MANY,
    ErrorType.FORBIDDEN,
}


@st.composite
def near_valid_specs(draw: st.DrawFn) -> dict[str, Any]:
    def decl() -> dict[str, Any]:
        fields = {"name": draw(near_names), "dataType": draw(near_data_types)}
        fields["categories"] = draw(near_categories)
        if draw(st.integers(0, 20)) == 0:
            fields["weight"] = 1
        return fields

    n_human = draw(st.sampled_from([0, 1, 2, 63, 64, 65]))
    n_external = draw(st.sampled_from([1, 2, 31, 32, 33]))
    spec: dict[str, Any] = {
        "mode": draw(st.sampled_from([*api.MODES, "enforce", None, 0])),
        "human": {"scores": [decl() for _ in range(n_human)]},
        "external": [{"name": f"c{i}", "score": decl()} for i in range(n_external)],
    }
    # Make names unique so only per-field limits are in play.
    for i, item in enumerate([*spec["human"]["scores"], *(c["score"] for c in spec["external"])]):
        if isinstance(item["name"], str) and item["name"]:
            item["name"] = f"{i}-{item['name']}"[: len(item["name"]) + 1]
    return spec


@settings(max_examples=100, suppress_health_check=list(HealthCheck))
@given(near_valid_specs())
def test_per_field_limits_agree_with_the_declarative_model(spec: dict[str, Any]) -> None:
    verdict = validate_spec(spec)
    per_field = [p for p in verdict.problems if p.type in PER_FIELD and p.field != "spec"]
    try:
        typed_spec(spec)
        model_accepts = True
    except pydantic.ValidationError:
        model_accepts = False
    assert model_accepts == (not per_field), [str(p) for p in per_field]


json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=10)
)
vocabulary = st.sampled_from(
    ["mode", "human", "scores", "external", "name", "score", "dataType", "categories", "x"]
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(vocabulary, inner, max_size=5)
    ),
    max_leaves=40,
)


@settings(max_examples=300)
@given(json_values)
def test_no_input_makes_the_verdict_raise_or_change_it(spec: object) -> None:
    before = copy.deepcopy(spec)
    verdict = validate_spec(spec)
    assert spec == before, "the rules judge an object, they never change it"
    assert all(str(p) for p in verdict.problems)
    for problem in verdict.problems:
        parent(spec, problem.field)  # each problem is at a place the input has


def parent(spec: object, field: str) -> object:
    """What holds `field` (`spec.human.scores[1].name`) in `spec`: raises if the path leaves it."""
    assert field == "spec" or field.startswith(("spec.", "spec[")), field
    steps = re.findall(r"\.([^.\[]+)|\[(\d+)\]", field.removeprefix("spec"))
    node: Any = spec
    for key, index in steps[:-1]:
        node = node[int(index)] if index else node[key]
    return node


@pytest.mark.parametrize(
    "spec",
    [
        {"human": {"scores": [[[[[]]]]]}},
        {"external": [{"name": {"a": {"b": {}}}, "score": [1, [2, [3]]]}]},
        {"human": {"scores": [{"name": "x", "categories": [[], {}, None, 1.5, True]}]}},
        {"\x00": None, "human": {"scores": [{"name": "\u0000"}]}},
    ],
    ids=[
        "nested lists where scores belong",
        "objects and lists where strings belong",
        "every JSON type among categories",
        "control characters in keys and names",
    ],
)
def test_hostile_shapes_get_problems_not_exceptions(spec: object) -> None:
    verdict = validate_spec(spec)
    assert not verdict.valid


def _spec_with(**score: object) -> dict[str, Any]:
    return {"human": {"scores": [{"name": "tone", **score}]}}


@pytest.mark.parametrize(
    ("spec", "clean"),
    [
        (_spec_with(), True),
        (_spec_with(dataType=None, categories=[]), True),
        (_spec_with(dataType="CATEGORICAL", categories=["a", "b"]), True),
        ({"mode": None, **_spec_with(dataType="BOOLEAN")}, True),
        ({"human": {"scores": [{"name": "a"}]}, "external": []}, True),
        ({"external": [{"name": "c", "score": {"name": "s"}}]}, True),
        ({"mode": "Monitor", **_spec_with()}, False),
        (_spec_with(dataType="CATEGORICAL"), False),
        (_spec_with(dataType="CATEGORICAL", categories=[]), False),
        (_spec_with(dataType="NUMERIC", categories=["a"]), False),
        (_spec_with(categories=["a", "a"]), False),
        (_spec_with(dataType="CATEGORICAL", categories=["a", "a"]), False),
        (_spec_with(dataType="CATEGORICAL", categories=["a", 1]), False),
        (_spec_with(dataType=["CATEGORICAL"]), False),
        (_spec_with(categories={}), False),
        ({"human": {"scores": [{"name": " tone"}]}}, False),
        ({"human": {"scores": [{"name": "a"}, {"name": "a"}]}}, False),
        (
            {
                "human": {"scores": [{"name": "a"}]},
                "external": [{"name": "c", "score": {"name": "a"}}],
            },
            False,
        ),
        (
            {
                "external": [
                    {"name": "c", "score": {"name": "s"}},
                    {"name": "c", "score": {"name": "t"}},
                ]
            },
            False,
        ),
        (
            {
                "external": [
                    {"name": "c", "score": {"name": "s"}},
                    {"name": "d", "score": {"name": "s"}},
                ]
            },
            False,
        ),
        ({"external": [{"name": "c"}]}, False),
        ({"human": None, "external": None}, False),
        ({"human": {"scores": []}}, False),
        ({"human": {}}, False),
        ({"mode": {"Enforce": 1}, **_spec_with()}, False),
    ],
    ids=[
        "plain score",
        "null dataType, empty categories",
        "categorical with categories",
        "null mode",
        "empty external beside human",
        "external only",
        "monitor mode warns",
        "categorical without categories warns",
        "categorical with empty categories warns",
        "numeric with categories warns",
        "repeated category, default type",
        "repeated category",
        "a number among categories",
        "dataType of the wrong type",
        "categories of the wrong type",
        "untrimmed name warns",
        "human names repeat",
        "a name in human and external",
        "channel names repeat",
        "channel score names repeat",
        "channel without score",
        "no source",
        "empty scores",
        "human without scores",
        "mode of the wrong type",
    ],
)
def test_each_way_a_spec_can_be_nearly_clean_draws_a_finding(spec: object, clean: bool) -> None:
    verdict = validate_spec(spec)
    assert (not verdict.problems and not verdict.warnings) == clean
