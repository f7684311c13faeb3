"""The rule declarations: one per rule of the verdict, and each rendered by both CEL renderings.

The verdict is a hand-written walk; the CRD's CEL and the ValidatingAdmissionPolicies are
generated from webhook/rules/declarations.py. These tests fail when the three drift: a problem
the verdict finds that no declaration says in the verdict's own words, a declaration no corpus
case breaks, a declaration the CRD or the policy does not render. The corpus tests
(tests/webhook/manifests/test_cel_rules.py, test_policy.py, and tests/kube) then show the
renderings say what the verdict says.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.webhook.manifests.test_cel_rules import CROSS_FIELD_CASES
from tests.webhook.manifests.test_crd import PER_FIELD_CASES
from tests.webhook.manifests.test_policy import CASES as POLICY_CASES
from tests.webhook.manifests.test_policy import REGISTRATION_DOC
from tests.webhook.rules.test_verdict import CASES as VERDICT_CASES
from tests.webhook.rules.test_verdict import LONG_LISTS
from webhook.manifests import policy
from webhook.manifests.cel_rules import SPEC_RULES
from webhook.manifests.crd import spec_schema
from webhook.rules import declarations, messages
from webhook.rules.declarations import ITEM, NOT_CEL, RULES, Check, Rule, Steps
from webhook.rules.field_errors import Problem
from webhook.rules.field_path import Path
from webhook.rules.forms import INLINE, STORE, Form

CORPUS: list[tuple[str, Any]] = [
    *((name, spec) for name, spec, _ in VERDICT_CASES),
    *((name, spec) for name, spec, _ in LONG_LISTS),
    *POLICY_CASES,
    *((name, spec) for name, spec, _ in CROSS_FIELD_CASES),
    *((name, spec) for name, spec, _ in PER_FIELD_CASES),
]
HINT = re.compile(r'; did you mean "[^"]*"\?')
FIRST = re.compile(r"\(first declared at (\S+)\)$")
# A value of each JSON type a TYPE problem names.
SAMPLES: dict[str, object] = {
    "object": {}, "array": [], "string": "", "integer": 0, "number": 0.5, "boolean": True,
    "null": None,
}  # fmt: skip


def _pattern(path: Path, form: Form) -> Steps:
    """The steps of `path` below the form's declaration, an index as ITEM."""
    steps = path.steps[len(form.path.steps) :]
    return tuple(ITEM if isinstance(step, int) else str(step) for step in steps)


def _said_by(rule: Rule, problem: Problem, form: Form) -> bool:
    """`problem` is `rule`'s, at one of its places, in its very words."""
    pattern = _pattern(problem.path, form)
    if problem.type is not rule.error:
        return False
    if rule.check is Check.KNOWN_FIELDS:
        if pattern[:-1] not in rule.owner.at:
            return False
    elif rule.check is Check.UNIQUE:
        if pattern != (*rule.field, ITEM, *rule.key):
            return False
    elif pattern not in rule.paths:
        return False
    if rule.check is Check.TYPE:
        value = SAMPLES.get(str(problem.bad_value), problem.bad_value)
    else:
        value = getattr(problem, "bad_value", None)
    first = FIRST.search(problem.detail)
    said = rule.problem(problem.path, value, first.group(1) if first else "")
    return str(said) == HINT.sub("", str(problem))


def _problems() -> Iterator[tuple[str, Form, Problem]]:
    for name, spec in CORPUS:
        for form in (STORE, INLINE):
            obj: Any = spec
            for key in reversed(form.path.steps):
                obj = {key: obj}
            for problem in form.verdict(obj).problems:
                yield name, form, problem


PROBLEMS = list(_problems())


def test_every_problem_the_verdict_finds_is_one_declared_rules_in_its_words() -> None:
    assert "a `did you mean` after an unknown field" in NOT_CEL  # why HINT is cut off
    for name, form, problem in PROBLEMS:
        rules = [rule for rule in RULES if _said_by(rule, problem, form)]
        assert len(rules) == 1, f"{name}: {problem} is said by {rules}"


def test_every_declared_rule_is_broken_by_the_corpus() -> None:
    found = {rule for rule in RULES for _, form, p in PROBLEMS if _said_by(rule, p, form)}
    assert set(RULES) - found == set()


def test_a_rule_not_in_the_verdicts_words_is_found_out() -> None:
    """The check above can fail: a limit changed in a declaration alone is no longer said."""
    rule = declarations.declared(declarations.HUMAN, ("scores",), Check.MAX_ITEMS)
    assert isinstance(rule.limit, int)
    changed = Rule(rule.owner, rule.field, rule.check, rule.limit + 1)
    _, form, problem = next(p for p in PROBLEMS if _said_by(rule, p[2], p[1]))
    assert not _said_by(changed, problem, form)


# ---------------------------------------------------------------- the CRD


def _node(schema: dict[str, Any], steps: Steps) -> dict[str, Any]:
    for step in steps:
        schema = schema["items"] if step == ITEM else schema["properties"][step]
    return schema


def _says_in_schema(rule: Rule, schema: dict[str, Any], path: Steps) -> bool:
    node = _node(schema, path)
    if rule.check in (Check.REQUIRED,):
        parent = _node(schema, path[:-1])
        shortest = node.get("minLength", 1)
        return path[-1] in parent.get("required", ()) and shortest == (rule.limit or 1)
    keyword = {
        Check.TYPE: ("type", rule.limit),
        Check.MIN_ITEMS: ("minItems", rule.limit),
        Check.MAX_ITEMS: ("maxItems", rule.limit),
        Check.MAX_LENGTH: ("maxLength", rule.limit),
        Check.ENUM: ("enum", list(rule.limit) if isinstance(rule.limit, tuple) else None),
        Check.DISTINCT: ("x-kubernetes-list-type", "set"),
    }
    if rule.check is Check.KNOWN_FIELDS:
        return set(node["properties"]) == rule.limit
    if rule.check is Check.DISTINCT:
        node = _node(schema, path[:-1])
    name, value = keyword[rule.check]
    return bool(node.get(name) == value)


PER_FIELD = [rule for rule in RULES if not rule.cross_field]


@pytest.mark.parametrize("rule", PER_FIELD, ids=repr)
def test_the_crds_schema_says_each_per_field_rule_where_it_holds(rule: Rule) -> None:
    schema = spec_schema()
    for path in rule.paths:
        assert _says_in_schema(rule, schema, path), path


def test_the_crd_has_one_validation_per_cross_field_rule_at_its_node() -> None:
    schema = spec_schema()
    found = [
        (path, entry)
        for path in [(), ("human", "scores"), ("external",)]
        for entry in _node(schema, path).get("x-kubernetes-validations", ())
    ]
    rendered = [(tuple(filter(None, r.at.split("."))), r.validation()) for r in SPEC_RULES]
    assert sorted(map(repr, found)) == sorted(map(repr, rendered))
    assert [rule.message for rule in SPEC_RULES] == [r.words for r in RULES if r.cross_field]


# ---------------------------------------------------------------- the policies


def test_the_policy_renders_every_declared_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each problem a policy can say is built by its rule's `problem`: all of them are asked."""
    asked: set[Rule] = set()
    problem = Rule.problem

    def recording(rule: Rule, *args: Any, **kwargs: Any) -> Problem:
        asked.add(rule)
        return problem(rule, *args, **kwargs)

    monkeypatch.setattr(Rule, "problem", recording)
    policy.manifests(REGISTRATION_DOC)
    assert set(RULES) - asked == set()


def test_the_policy_names_a_rules_limit_from_its_declaration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A limit changed in a declaration changes the policy (and nothing else need change)."""
    rule = declarations.declared(declarations.SCORE, ("name",), Check.MAX_LENGTH)
    before = json.dumps(policy.manifests(REGISTRATION_DOC))
    changed = Rule(rule.owner, rule.field, rule.check, 7)
    monkeypatch.setattr(
        declarations, "RULES", tuple(changed if r == rule else r for r in declarations.RULES)
    )
    after = json.dumps(policy.manifests(REGISTRATION_DOC))
    assert "size(variables.declaration.human.scores[i].name) > 7" in after
    assert "size(variables.declaration.human.scores[i].name) > 7" not in before


def test_what_no_rendering_says_has_its_reason() -> None:
    assert all(reason for reason in NOT_CEL.values())


def test_the_verdicts_warnings_are_in_no_policy() -> None:
    """Listed in NOT_CEL: the corpus draws warnings from the verdict, and no policy says one."""
    assert "warnings on an allowed object (Monitor mode, categories, untrimmed names)" in NOT_CEL
    warnings = {
        warning.message for _, spec in CORPUS for warning in STORE.verdict({"spec": spec}).warnings
    }
    rendered = json.dumps(policy.manifests(REGISTRATION_DOC), ensure_ascii=False)
    assert messages.WARN_MONITOR in warnings
    assert warnings
    assert not [message for message in warnings if message in rendered]
