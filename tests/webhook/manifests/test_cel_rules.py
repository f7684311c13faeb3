"""The CRD's CEL rules: the cross-field invariants, in agreement with the verdict.

Objects here pass the OpenAPI schema, so kube-apiserver runs every CEL rule;
the set of platform messages the rules produce must be exactly the set the
verdict reports (the verdict names each later occurrence, CEL each rule once).
The rules are evaluated by a real CEL engine (cel-python) after the same
null-dropping and defaulting kube-apiserver does (`tests/support/crd_apiserver.py`).
"""

from __future__ import annotations

import math
import re
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.crd_apiserver import CrdServer, Outcome
from webhook.manifests.cel_rules import MIN_KUBERNETES, SPEC_RULES, CelRule
from webhook.manifests.crd import crd_manifest
from webhook.rules import api, messages, validate_feedbackstore
from webhook.rules.field_errors import quote

SERVER = CrdServer.from_crd(crd_manifest())
NO_SOURCE = messages.MSG_NO_SOURCE
DUP_HUMAN = messages.MSG_DUP_HUMAN
DUP_ACROSS = messages.MSG_DUP_ACROSS
DUP_EXTERNAL = messages.MSG_DUP_EXTERNAL
DUP_CHANNEL = messages.MSG_DUP_CHANNEL
PLATFORM_MESSAGES = (NO_SOURCE, DUP_HUMAN, DUP_ACROSS, DUP_EXTERNAL, DUP_CHANNEL)
# Where kube-apiserver reports each rule: the node it is attached to, plus its fieldPath.
RULE_PATHS = {
    NO_SOURCE: "spec",
    DUP_HUMAN: "spec.human.scores",
    DUP_ACROSS: "spec.external",
    DUP_EXTERNAL: "spec.external",
    DUP_CHANNEL: "spec.external",
}
# celconfig.PerCallLimit: kube-apiserver refuses a CRD whose rule may cost more.
PER_CALL_LIMIT = 1_000_000


def store(spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": api.API_VERSION,
        "kind": api.KIND,
        "metadata": {"name": "support-feedback", "namespace": "agents"},
        "spec": spec,
    }


def human(*names: str) -> dict[str, Any]:
    return {"scores": [{"name": name} for name in names]}


def channels(*pairs: tuple[str, str]) -> list[dict[str, Any]]:
    return [{"name": name, "score": {"name": score}} for name, score in pairs]


def verdict_messages(obj: dict[str, Any]) -> set[str]:
    """The platform messages among the verdict's problems (cross-field ones only)."""
    found = set()
    for problem in validate_feedbackstore(obj).problems:
        found |= {message for message in PLATFORM_MESSAGES if problem.detail.startswith(message)}
    return found


def admitted(spec: Any) -> Outcome:
    outcome = SERVER.admit(store(spec))
    assert outcome.cel_ran, f"schema errors kept CEL from running: {outcome.schema_errors}"
    return outcome


CROSS_FIELD_CASES = [
    ("an empty spec declares no source", {}, {NO_SOURCE}),
    ("mode alone declares no source", {"mode": "Monitor"}, {NO_SOURCE}),
    ("an empty external list declares no source", {"external": []}, {NO_SOURCE}),
    ("null human and external declare no source", {"human": None, "external": None}, {NO_SOURCE}),
    ("one human score is a source", {"human": human("thumbs")}, set()),
    ("one external channel is a source", {"external": channels(("csat", "csat"))}, set()),
    ("a repeated human score name", {"human": human("thumbs", "thumbs")}, {DUP_HUMAN}),
    (
        "two repeated human score names",
        {"human": human("a", "b", "a", "b", "a")},
        {DUP_HUMAN},
    ),
    (
        "a human score name reused by an external channel",
        {"human": human("thumbs"), "external": channels(("csat-webhook", "thumbs"))},
        {DUP_ACROSS},
    ),
    (
        "two external channels writing the same score",
        {"external": channels(("a", "csat"), ("b", "csat"))},
        {DUP_EXTERNAL},
    ),
    (
        "two external channels writing a human score report only the cross-source duplicate",
        {"human": human("csat"), "external": channels(("a", "csat"), ("b", "csat"))},
        {DUP_ACROSS},
    ),
    (
        "two channels with one name",
        {"external": channels(("csat-webhook", "csat"), ("csat-webhook", "nps"))},
        {DUP_CHANNEL},
    ),
    (
        "a channel named like its score is fine",
        {"external": channels(("csat", "csat"))},
        set(),
    ),
    (
        "a channel named like a human score is fine",
        {"human": human("thumbs"), "external": channels(("thumbs", "csat"))},
        set(),
    ),
    (
        "names differing only in case are distinct",
        {"human": human("Thumbs", "thumbs")},
        set(),
    ),
    (
        "names differing only in spaces are distinct (the gateway trims; that is a warning)",
        {"human": human("thumbs", " thumbs")},
        set(),
    ),
    (
        "every kind of duplicate at once",
        {
            "human": human("thumbs", "thumbs", "accuracy"),
            "external": channels(("a", "accuracy"), ("a", "csat"), ("b", "csat")),
        },
        {DUP_HUMAN, DUP_ACROSS, DUP_EXTERNAL, DUP_CHANNEL},
    ),
    (
        "32 channels and no human source (the guards must not evaluate the absent side)",
        {"external": channels(*[(f"c{i}", f"e{i}") for i in range(32)])},
        set(),
    ),
    (
        "64 human scores and no external channel",
        {"human": human(*[f"s{i}" for i in range(64)])},
        set(),
    ),
    (
        "multi-byte names compare by value",
        {"human": human("😀", "é"), "external": channels(("x", "😀"))},
        {DUP_ACROSS},
    ),
]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [pytest.param(spec, expected, id=name) for name, spec, expected in CROSS_FIELD_CASES],
)
def test_the_cel_rules_report_what_the_verdict_reports(spec: Any, expected: set[str]) -> None:
    outcome = admitted(spec)
    assert verdict_messages(store(spec)) == expected
    assert outcome.cel_messages == expected, outcome.cel_failures
    assert outcome.accepted is (not expected)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [pytest.param(spec, expected, id=name) for name, spec, expected in CROSS_FIELD_CASES],
)
def test_each_cel_failure_sits_on_a_path_above_the_verdicts_field(
    spec: Any, expected: set[str]
) -> None:
    outcome = admitted(spec)
    for path, message in outcome.cel_failures:
        assert path == RULE_PATHS[message]
        fields = [
            p.field
            for p in validate_feedbackstore(store(spec)).problems
            if p.detail.startswith(message)
        ]
        assert fields, message
        assert all(field == path or field.startswith((f"{path}.", f"{path}[")) for field in fields)


_DECLARED = re.compile(r': "((?:[^"\\]|\\.)*)" is declared at (\S+) and again at (\S+)$')
_FIRST_AT = re.compile(r"\(first declared at (\S+)\)$")


def assert_messages_name_what_the_verdict_names(spec: Any) -> None:
    """Each CEL message holds its platform text, a quoted value and two fields, and the
    verdict reports that value under that text at (or first declared at) both fields."""
    outcome = SERVER.admit(store(spec), messages=True)
    problems = validate_feedbackstore(store(spec)).problems
    for field, reason, message in outcome.cel_causes:
        (platform,) = [text for text in PLATFORM_MESSAGES if f" {text}" in message]
        if platform == NO_SOURCE:
            assert (field, reason, message) == (
                "spec",
                "FieldValueRequired",
                f"Required value: {NO_SOURCE}",
            )
            continue
        assert (field, reason) == (RULE_PATHS[platform], "FieldValueInvalid")
        assert message.startswith(f"Invalid value: {platform}: "), message
        found = _DECLARED.search(message)
        assert found, message
        value, first, again = found.groups()
        named: set[str] = set()
        for problem in problems:
            if problem.detail.startswith(platform) and quote(problem.bad_value) == f'"{value}"':
                first_at = _FIRST_AT.search(problem.detail)
                named |= {problem.field, first_at.group(1) if first_at else problem.field}
        assert {first, again} <= named, (message, [str(p) for p in problems])


@pytest.mark.parametrize(
    "spec",
    [pytest.param(spec, id=name) for name, spec, expected in CROSS_FIELD_CASES if expected],
)
def test_each_cel_message_names_the_value_and_fields_the_verdict_names(spec: Any) -> None:
    assert_messages_name_what_the_verdict_names(spec)


def test_a_cel_message_quotes_a_name_as_the_verdict_does() -> None:
    tricky = 'say "hi"\\there\n\t\r'
    outcome = SERVER.admit(store({"human": human(tricky, tricky)}), messages=True)
    ((_, _, message),) = outcome.cel_causes
    assert f": {quote(tricky)} is declared at spec.human.scores[0].name" in message
    assert_messages_name_what_the_verdict_names({"human": human(tricky, tricky)})


NAMES = st.sampled_from(["a", "b", "c", "é"])


@st.composite
def cross_field_specs(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if draw(st.booleans()):
        spec["human"] = {
            "scores": [{"name": n} for n in draw(st.lists(NAMES, min_size=1, max_size=5))]
        }
    if draw(st.booleans()):
        pairs = draw(st.lists(st.tuples(st.sampled_from(["x", "y", "a"]), NAMES), max_size=5))
        spec["external"] = channels(*pairs)
    return spec


@settings(max_examples=300)
@given(cross_field_specs())
def test_for_any_mix_of_sources_and_names_cel_and_the_verdict_agree(spec: dict[str, Any]) -> None:
    assert admitted(spec).cel_messages == verdict_messages(store(spec))


@settings(max_examples=40)
@given(cross_field_specs())
def test_for_any_mix_cel_messages_name_what_the_verdict_names(spec: dict[str, Any]) -> None:
    assert_messages_name_what_the_verdict_names(spec)


def test_the_largest_valid_store_passes_every_rule() -> None:
    width = api.MAX_NAME_LENGTH
    spec = {
        "human": {
            "scores": [
                {"name": f"{i:03d}".ljust(width, "h"), "categories": [f"c{j}" for j in range(64)]}
                for i in range(api.MAX_HUMAN_SCORES)
            ]
        },
        "external": [
            {"name": f"{i:03d}".ljust(width, "c"), "score": {"name": f"{i:03d}".ljust(width, "e")}}
            for i in range(api.MAX_EXTERNAL_CHANNELS)
        ],
    }
    outcome = admitted(spec)
    assert outcome.accepted, outcome.cel_failures
    assert validate_feedbackstore(store(spec)).valid


# ---------------------------------------------------------------- cost bounds

_COMPREHENSION = re.compile(r"([A-Za-z_][\w.]*)\.(all|exists_one|exists|map|filter)\((\w+),")
_CHAIN = re.compile(r"(?<![\w.])([A-Za-z_]\w*)((?:\.\w+)+)")
_MACROS = {"all", "exists", "exists_one", "map", "filter", "indexOf", "lastIndexOf", "replace"}


def _spec_schema() -> dict[str, Any]:
    root = crd_manifest()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema: dict[str, Any] = root["properties"]["spec"]
    return schema


def _node(path: str) -> dict[str, Any]:
    node = _spec_schema()
    for part in filter(None, path.replace("[]", ".[]").split(".")):
        node = node["items"] if part == "[]" else node["properties"][part]
    return node


def _join(base: str, members: str) -> str:
    names = [m for m in members.split(".") if m and m not in _MACROS]
    return ".".join(filter(None, [base, *names])).replace(".[]", "[]")


def _bindings(rule: CelRule, text: str | None = None) -> dict[str, str]:
    bindings = {"self": rule.at}
    for match in _COMPREHENSION.finditer(rule.rule if text is None else text):
        head, _, members = match.group(1).partition(".")
        bindings[match.group(3)] = _join(bindings[head], members) + "[]"
    return bindings


def _paths_read(rule: CelRule, text: str | None = None) -> set[str]:
    source = rule.rule if text is None else text
    bindings = _bindings(rule, source)
    paths = set()
    for match in _CHAIN.finditer(source):
        if match.group(1) in bindings:
            paths.add(_join(bindings[match.group(1)], match.group(2)))
    return paths


@pytest.mark.parametrize("rule", [pytest.param(r, id=r.message) for r in SPEC_RULES])
def test_every_list_and_string_a_rule_or_its_message_reads_is_bounded(rule: CelRule) -> None:
    for text in filter(None, (rule.rule, rule.message_expression)):
        paths = _paths_read(rule, text)
        assert paths, text
        for path in paths:
            node = _node(path)
            bound = {"array": "maxItems", "string": "maxLength"}.get(node["type"])
            assert bound is None or bound in node, f"{path} is unbounded: the estimator refuses it"


def _estimated_cost(rule: CelRule) -> int:
    """A worst-case cost in the spirit of cel-go's estimator (not a copy of it).

    Each comprehension runs maxItems times for every run of the comprehensions
    around it; each iteration compares strings of at most maxLength characters,
    which cel-go costs at one unit per ten characters, plus a few units of
    bookkeeping.
    """
    bindings = _bindings(rule)
    spans = []
    for match in _COMPREHENSION.finditer(rule.rule):
        head, _, members = match.group(1).partition(".")
        iterations = _node(_join(bindings[head], members))["maxItems"]
        spans.append((match.start(), _closing_paren(rule.rule, match.start(3) - 1), iterations))
    compare = 1 + math.ceil(api.MAX_NAME_LENGTH * 0.1) + 5
    total = 0
    for start, end, iterations in spans:
        runs = iterations
        for outer_start, outer_end, outer_iterations in spans:
            if outer_start < start and end <= outer_end:
                runs *= outer_iterations
        total += runs * compare
    return total


def _closing_paren(text: str, start: int) -> int:
    depth = 0
    for index in range(text.index("(", start), len(text)):
        depth += {"(": 1, ")": -1}.get(text[index], 0)
        if depth == 0:
            return index
    raise AssertionError(f"unbalanced rule: {text}")


@pytest.mark.parametrize("rule", [pytest.param(r, id=r.message) for r in SPEC_RULES])
def test_every_rule_costs_well_under_the_per_call_limit(rule: CelRule) -> None:
    assert _estimated_cost(rule) * 10 < PER_CALL_LIMIT


def test_the_cost_model_counts_nested_comprehensions() -> None:
    nested = CelRule("external", "self.all(c, self.exists_one(d, d.name == c.name))", "m")
    flat = CelRule("external", "self.all(c, c.name != '')", "m")
    assert _estimated_cost(nested) == _estimated_cost(flat) * (api.MAX_EXTERNAL_CHANNELS + 1)


def test_the_crd_carries_every_rule_at_its_node_with_its_platform_message() -> None:
    for rule in SPEC_RULES:
        assert rule.validation() in _node(rule.at)["x-kubernetes-validations"]
    assert {rule.message for rule in SPEC_RULES} == set(PLATFORM_MESSAGES)


def test_rules_use_only_fields_the_crd_api_has_since_min_kubernetes() -> None:
    assert MIN_KUBERNETES == (1, 28)  # reason and fieldPath; messageExpression is 1.27
    for rule in SPEC_RULES:
        assert set(rule.validation()) <= {
            "rule",
            "message",
            "messageExpression",
            "fieldPath",
            "reason",
        }


@pytest.mark.parametrize("rule", [pytest.param(r, id=r.message) for r in SPEC_RULES])
def test_every_rule_is_reported_where_the_harness_reports_it(rule: CelRule) -> None:
    assert rule.reported_at == RULE_PATHS[rule.message]


def test_building_the_cel_harness_leaves_the_recursion_limit_alone() -> None:
    before = sys.getrecursionlimit()
    CrdServer.from_crd(crd_manifest())
    assert sys.getrecursionlimit() == before
