"""The FeedbackStore verdict, table-driven like Kubernetes' validation tests.

Each case is a spec and the exact (field, error type) pairs it must produce:
every problem at once, nothing more.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.rules_builders import channel, channels, human, score, scores
from webhook.rules import ErrorType, api, messages, validate_feedbackstore, validate_spec

REQ = ErrorType.REQUIRED
DUP = ErrorType.DUPLICATE
UNSUP = ErrorType.NOT_SUPPORTED
LONG = ErrorType.TOO_LONG
MANY = ErrorType.TOO_MANY
TYPE = ErrorType.TYPE_INVALID
UNKNOWN = ErrorType.FORBIDDEN
NO_SOURCE = ("spec", REQ)


def problems_of(spec: object) -> list[tuple[str, ErrorType]]:
    return [(p.field, p.type) for p in validate_spec(spec).problems]


CASES: list[tuple[str, object, list[tuple[str, ErrorType]]]] = [
    # sources
    ("one human score is a valid store", human(score()), []),
    ("one external channel is a valid store", {"external": [channel()]}, []),
    ("a missing spec declares no source", None, [NO_SOURCE]),
    ("an empty spec declares no source", {}, [NO_SOURCE]),
    ("human set to null is no human source", {"human": None}, [NO_SOURCE]),
    ("external set to null is no external source", {"external": None}, [NO_SOURCE]),
    ("an empty external list is no source", {"external": []}, [NO_SOURCE]),
    ("human without scores needs scores", {"human": {}}, [("spec.human.scores", REQ), NO_SOURCE]),
    (
        "human with scores null needs scores",
        {"human": {"scores": None}},
        [("spec.human.scores", REQ), NO_SOURCE],
    ),
    ("zero human scores is too few", human(), [("spec.human.scores", REQ), NO_SOURCE]),
    (
        "zero human scores with a channel is still too few",
        {**human(), "external": [channel()]},
        [("spec.human.scores", REQ)],
    ),
    # counts
    ("64 human scores are allowed", {"human": {"scores": scores(64)}}, []),
    (
        "65 human scores are too many",
        {"human": {"scores": scores(65)}},
        [("spec.human.scores", MANY)],
    ),
    ("32 external channels are allowed", {"external": channels(32)}, []),
    ("33 external channels are too many", {"external": channels(33)}, [("spec.external", MANY)]),
    (
        "64 categories are allowed",
        human(score("t", dataType="CATEGORICAL", categories=[f"c{i}" for i in range(64)])),
        [],
    ),
    (
        "65 categories are too many",
        human(score("t", dataType="CATEGORICAL", categories=[f"c{i}" for i in range(65)])),
        [("spec.human.scores[0].categories", MANY)],
    ),
    # lengths, in code points
    ("an empty score name is required", human(score("")), [("spec.human.scores[0].name", REQ)]),
    ("a one-character score name is allowed", human(score("x")), []),
    ("a 128-character score name is allowed", human(score("x" * 128)), []),
    (
        "a 129-character score name is too long",
        human(score("x" * 129)),
        [("spec.human.scores[0].name", LONG)],
    ),
    ("128 two-byte characters are 128 characters", human(score("é" * 128)), []),
    (
        "129 two-byte characters are too long",
        human(score("é" * 129)),
        [("spec.human.scores[0].name", LONG)],
    ),
    ("128 four-byte emoji are 128 characters", human(score("😀" * 128)), []),
    (
        "129 four-byte emoji are too long",
        human(score("😀" * 129)),
        [("spec.human.scores[0].name", LONG)],
    ),
    (
        "an empty channel name is required",
        {"external": [channel("")]},
        [("spec.external[0].name", REQ)],
    ),
    ("a 128-character channel name is allowed", {"external": [channel("c" * 128)]}, []),
    (
        "a 129-character channel name is too long",
        {"external": [channel("c" * 129)]},
        [("spec.external[0].name", LONG)],
    ),
    (
        "a 129-character external score name is too long",
        {"external": [channel("c", "s" * 129)]},
        [("spec.external[0].score.name", LONG)],
    ),
    # enums, case-sensitive
    ("mode Monitor is allowed", {**human(score()), "mode": "Monitor"}, []),
    (
        "mode in lower case is unsupported",
        {**human(score()), "mode": "enforce"},
        [("spec.mode", UNSUP)],
    ),
    ("an unknown mode is unsupported", {**human(score()), "mode": "Audit"}, [("spec.mode", UNSUP)]),
    (
        "dataType STRING is unsupported",
        human(score(dataType="STRING")),
        [("spec.human.scores[0].dataType", UNSUP)],
    ),
    (
        "dataType in lower case is unsupported",
        human(score(dataType="numeric")),
        [("spec.human.scores[0].dataType", UNSUP)],
    ),
    (
        "an external score's dataType is checked too",
        {"external": [channel(dataType="Boolean")]},
        [("spec.external[0].score.dataType", UNSUP)],
    ),
    ("mode null means the default", {**human(score()), "mode": None}, []),
    ("dataType null means the default", human(score(dataType=None)), []),
    # wrong JSON types at every level
    ("a string spec is the wrong type", "human", [("spec", TYPE)]),
    ("a list spec is the wrong type", [human(score())], [("spec", TYPE)]),
    ("a list human is the wrong type", {"human": [score()]}, [("spec.human", TYPE)]),
    ("a string human is the wrong type", {"human": "thumbs"}, [("spec.human", TYPE)]),
    (
        "a string for scores is the wrong type",
        {"human": {"scores": "thumbs"}},
        [("spec.human.scores", TYPE)],
    ),
    (
        "an object for scores is the wrong type",
        {"human": {"scores": {"name": "x"}}},
        [("spec.human.scores", TYPE)],
    ),
    ("a string score item is the wrong type", human("thumbs"), [("spec.human.scores[0]", TYPE)]),
    ("a null score item is the wrong type", human(None), [("spec.human.scores[0]", TYPE)]),
    (
        "a number for a name is the wrong type",
        human(score(7)),
        [("spec.human.scores[0].name", TYPE)],
    ),
    (
        "a boolean for a name is the wrong type",
        human(score(True)),
        [("spec.human.scores[0].name", TYPE)],
    ),
    (
        "a list for a name is the wrong type",
        human(score(["x"])),
        [("spec.human.scores[0].name", TYPE)],
    ),
    ("a null name is a missing name", human(score(None)), [("spec.human.scores[0].name", REQ)]),
    (
        "a score without a name needs one",
        human({"dataType": "NUMERIC"}),
        [("spec.human.scores[0].name", REQ)],
    ),
    (
        "a number for dataType is the wrong type",
        human(score(dataType=1)),
        [("spec.human.scores[0].dataType", TYPE)],
    ),
    ("a number for mode is the wrong type", {**human(score()), "mode": 1}, [("spec.mode", TYPE)]),
    (
        "a boolean for mode is the wrong type",
        {**human(score()), "mode": True},
        [("spec.mode", TYPE)],
    ),
    (
        "a string for categories is the wrong type",
        human(score(dataType="CATEGORICAL", categories="a,b")),
        [("spec.human.scores[0].categories", TYPE)],
    ),
    (
        "a number among categories is the wrong type",
        human(score(dataType="CATEGORICAL", categories=["a", 2])),
        [("spec.human.scores[0].categories[1]", TYPE)],
    ),
    (
        "an object for external is the wrong type",
        {"external": {"name": "c"}},
        [("spec.external", TYPE)],
    ),
    ("a string channel is the wrong type", {"external": ["csat"]}, [("spec.external[0]", TYPE)]),
    (
        "a string channel score is the wrong type",
        {"external": [{"name": "c", "score": "csat"}]},
        [("spec.external[0].score", TYPE)],
    ),
    (
        "a channel without a score needs one",
        {"external": [{"name": "c"}]},
        [("spec.external[0].score", REQ)],
    ),
    (
        "a channel without a name needs one",
        {"external": [{"score": score("csat")}]},
        [("spec.external[0].name", REQ)],
    ),
    (
        "a float for a channel name is the wrong type",
        {"external": [channel(1.5)]},
        [("spec.external[0].name", TYPE)],
    ),
    # unknown fields
    (
        "a typo under spec is an unknown field",
        {"humans": {"scores": [score()]}},
        [("spec.humans", UNKNOWN), NO_SOURCE],
    ),
    (
        "an unknown field under human is reported",
        {"human": {"scores": [score()], "score": []}},
        [("spec.human.score", UNKNOWN)],
    ),
    (
        "an unknown field in a score is reported",
        human(score(type="NUMERIC")),
        [("spec.human.scores[0].type", UNKNOWN)],
    ),
    (
        "an unknown field in a channel is reported",
        {"external": [{**channel(), "url": "x"}]},
        [("spec.external[0].url", UNKNOWN)],
    ),
    (
        "an unknown field in an external score is reported",
        {"external": [channel(weight=2)]},
        [("spec.external[0].score.weight", UNKNOWN)],
    ),
    # duplicates
    (
        "a repeated human score name is a duplicate",
        human(score("a"), score("b"), score("a")),
        [("spec.human.scores[2].name", DUP)],
    ),
    (
        "a human name reused by a channel is a duplicate",
        {**human(score("csat")), "external": [channel("c", "csat")]},
        [("spec.external[0].score.name", DUP)],
    ),
    (
        "two channels writing one score is a duplicate",
        {"external": [channel("a", "csat"), channel("b", "csat")]},
        [("spec.external[1].score.name", DUP)],
    ),
    (
        "two channels with one name is a duplicate",
        {"external": [channel("a", "x"), channel("a", "y")]},
        [("spec.external[1].name", DUP)],
    ),
    (
        "a repeated category is a duplicate",
        human(score(dataType="CATEGORICAL", categories=["a", "b", "a"])),
        [("spec.human.scores[0].categories[2]", DUP)],
    ),
    ("names differing only in case are distinct", human(score("Thumbs"), score("thumbs")), []),
    ("a channel may share its name with a score", {"external": [channel("csat", "csat")]}, []),
    (
        "every occurrence after the first is reported",
        human(score("a"), score("a"), score("a")),
        [("spec.human.scores[1].name", DUP), ("spec.human.scores[2].name", DUP)],
    ),
    # many at once
    (
        "many problems are all reported, each at its field",
        {
            "mode": "monitor",
            "humans": 1,
            "human": {"scores": [score("a", dataType="STRING"), score("a"), score("x" * 200)]},
            "external": [channel("c", "a"), channel("c", "z", categories="no"), "bad"],
        },
        [
            ("spec.humans", UNKNOWN),
            ("spec.mode", UNSUP),
            ("spec.human.scores[0].dataType", UNSUP),
            ("spec.human.scores[1].name", DUP),
            ("spec.human.scores[2].name", LONG),
            ("spec.external[0].score.name", DUP),
            ("spec.external[1].name", DUP),
            ("spec.external[1].score.categories", TYPE),
            ("spec.external[2]", TYPE),
        ],
    ),
]


@pytest.mark.parametrize(("spec", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_verdict_reports_exactly_these_problems(spec: object, expected: list[Any]) -> None:
    assert problems_of(spec) == expected


MESSAGES: list[tuple[str, object, str]] = [
    ("no source uses the platform's words", {}, "spec: Required value: " + messages.MSG_NO_SOURCE),
    (
        "an unsupported dataType lists the supported values",
        human(score(dataType="STRING")),
        'spec.human.scores[0].dataType: Unsupported value: "STRING": '
        'supported values: "NUMERIC", "BOOLEAN", "CATEGORICAL"',
    ),
    (
        "too many scores says how many and the limit",
        {"human": {"scores": scores(65)}},
        "spec.human.scores: Too many: 65: must have at most 64 items",
    ),
    (
        "too long a name states the limit in characters",
        human(score("x" * 129)),
        "spec.human.scores[0].name: Too long: may not be more than 128 characters",
    ),
    (
        "a human duplicate names the earlier occurrence",
        human(score("thumbs"), score("thumbs")),
        'spec.human.scores[1].name: Duplicate value: "thumbs": '
        + messages.MSG_DUP_HUMAN
        + " (first declared at spec.human.scores[0].name)",
    ),
    (
        "a cross-source duplicate uses the platform's words",
        {**human(score("csat")), "external": [channel("c", "csat")]},
        'spec.external[0].score.name: Duplicate value: "csat": '
        + messages.MSG_DUP_ACROSS
        + " (first declared at spec.human.scores[0].name)",
    ),
    (
        "an external duplicate uses the platform's words",
        {"external": [channel("a", "csat"), channel("b", "csat")]},
        'spec.external[1].score.name: Duplicate value: "csat": '
        + messages.MSG_DUP_EXTERNAL
        + " (first declared at spec.external[0].score.name)",
    ),
    (
        "a wrong type names the type found and the one expected",
        {"human": {"scores": "thumbs"}},
        'spec.human.scores: Invalid value: "string": must be of type array',
    ),
    (
        "an unknown field suggests the closest known one",
        {"humans": {}},
        'spec.humans: Forbidden: unknown field "spec.humans"; did you mean "spec.human"?',
    ),
    (
        "a huge bad value is cut in the message",
        {**human(score()), "mode": "M" * 10_000},
        'spec.mode: Unsupported value: "'
        + "M" * 64
        + '...": supported values: "Enforce", "Monitor"',
    ),
]


@pytest.mark.parametrize(("spec", "line"), [c[1:] for c in MESSAGES], ids=[c[0] for c in MESSAGES])
def test_problem_reads_like_kubectl(spec: object, line: str) -> None:
    assert line in [str(p) for p in validate_spec(spec).problems]


WARNINGS: list[tuple[str, object, list[str]]] = [
    (
        "a clean store has no warnings",
        human(score(), score("t", dataType="CATEGORICAL", categories=["a"])),
        [],
    ),
    ("Monitor mode is worth a warning", {**human(score()), "mode": "Monitor"}, ["spec.mode"]),
    (
        "categories on a NUMERIC score are ignored",
        human(score(categories=["a"])),
        ["spec.human.scores[0].categories"],
    ),
    (
        "categories on a BOOLEAN external score are ignored",
        {"external": [channel(dataType="BOOLEAN", categories=["a"])]},
        ["spec.external[0].score.categories"],
    ),
    ("an empty categories list on NUMERIC says nothing", human(score(categories=[])), []),
    (
        "a CATEGORICAL score without categories accepts anything",
        human(score(dataType="CATEGORICAL")),
        ["spec.human.scores[0]"],
    ),
    (
        "a CATEGORICAL score with empty categories accepts anything",
        human(score(dataType="CATEGORICAL", categories=[])),
        ["spec.human.scores[0]"],
    ),
    (
        "a score name with trailing space never matches",
        human(score("thumbs ")),
        ["spec.human.scores[0].name"],
    ),
    (
        "a channel name with leading space never matches",
        {"external": [channel(" csat-webhook")]},
        ["spec.external[0].name"],
    ),
]


@pytest.mark.parametrize(
    ("spec", "fields"), [c[1:] for c in WARNINGS], ids=[c[0] for c in WARNINGS]
)
def test_warnings_are_separate_from_problems(spec: object, fields: list[str]) -> None:
    verdict = validate_spec(spec)
    assert verdict.valid
    assert [w.field for w in verdict.warnings] == fields


def test_warnings_are_short_enough_for_kubectl() -> None:
    spec = {
        "mode": "Monitor",
        "human": {
            "scores": [score(" " + "n" * 127, categories=["a"]), score("c", dataType="CATEGORICAL")]
        },
        "external": [channel("x" * 127 + " ", "s", dataType="CATEGORICAL")],
    }
    warnings = validate_spec(spec).warnings
    assert len(warnings) == 6
    assert all(len(str(w)) <= 120 for w in warnings), [str(w) for w in warnings]


def test_whole_object_verdict_checks_its_spec() -> None:
    assert validate_feedbackstore({"spec": human(score())}).valid
    assert [p.field for p in validate_feedbackstore({"metadata": {}}).problems] == ["spec"]
    assert [p.field for p in validate_feedbackstore("nope").problems] == [""]


def test_a_hostile_object_costs_counting_not_memory() -> None:
    spec = {"human": {"scores": [{"categories": [1] * 2_000} for _ in range(50_000)]}}
    verdict = validate_spec(spec)
    assert len(verdict.problems) == api.MAX_RECORDED_PROBLEMS
    # TooMany scores, then per score judged: a missing name, TooMany categories and the
    # first 64 categories' wrong types
    assert verdict.problem_count == 1 + 64 * (1 + 1 + 64)


# Work bounded by the limits (a hostile spec costs no more than a maximal one): a list longer than
# its maximum is `Too many`, saying how long it is, and only its first maximum items are judged.
LONG_LISTS = [
    (
        "human scores past the 64th are counted, not judged",
        {"human": {"scores": [{}] * 100_000}},
        [("spec.human.scores", 100_000)] + [(f"spec.human.scores[{i}].name", 0) for i in range(64)],
    ),
    (
        "channels past the 32nd are counted, not judged",
        {"external": [{}] * 100_000},
        [("spec.external", 100_000)]
        + [(f"spec.external[{i}].{part}", 0) for i in range(32) for part in ("name", "score")],
    ),
    (
        "categories past the 64th are counted, not judged",
        human(score("t", dataType="CATEGORICAL", categories=[0] * 100_000)),
        [("spec.human.scores[0].categories", 100_000)]
        + [(f"spec.human.scores[0].categories[{i}]", 0) for i in range(64)],
    ),
    (
        "a duplicate past the maximum is not judged",
        {"human": {"scores": [*scores(64), score("s0")]}},
        [("spec.human.scores", 65)],
    ),
]


@pytest.mark.parametrize(
    ("spec", "expected"), [c[1:] for c in LONG_LISTS], ids=[c[0] for c in LONG_LISTS]
)
def test_a_list_is_judged_up_to_its_maximum(spec: object, expected: list[Any]) -> None:
    verdict = validate_spec(spec)
    assert verdict.omitted == 0
    assert [(p.field, p.bad_value if p.type is MANY else 0) for p in verdict.problems] == expected
    assert verdict.problems[0].message.startswith(f"Too many: {expected[0][1]}: ")


def test_unknown_fields_past_the_first_few_are_counted_not_named() -> None:
    unknown = {f"extra-{i}": 0 for i in range(100_000)}
    verdict = validate_spec({**human(score()), **unknown, "mode": "Enforce"})
    named = api.MAX_UNKNOWN_FIELDS_NAMED
    assert [p.field for p in verdict.problems] == [f"spec.extra-{i}" for i in range(named)]
    assert verdict.problem_count == 100_000


def test_a_huge_unknown_key_gets_no_did_you_mean_and_a_near_miss_does() -> None:
    problems = validate_spec({**human(score()), "humans" + "x" * 2_000_000: 1}).problems
    assert [p.type for p in problems] == [UNKNOWN]
    assert "did you mean" not in problems[0].message
    assert (
        validate_spec({**human(score()), "mod": 1})
        .problems[0]
        .message.endswith('did you mean "spec.mode"?')
    )


def test_a_hostile_object_full_of_warnings_warns_about_the_judged_items_only() -> None:
    names = [{"name": f" s{i}", "dataType": "CATEGORICAL"} for i in range(50_000)]
    verdict = validate_spec({"human": {"scores": names}})
    assert len(verdict.warnings) == 2 * api.MAX_HUMAN_SCORES
    assert verdict.warnings[0].field == "spec.human.scores[0].name"
    assert verdict.warnings[1].field == "spec.human.scores[0]"  # then: no categories
    assert verdict.problem_count == 1  # too many scores; the rest only warns
