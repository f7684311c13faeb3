"""The inline form: an AgentDeployment's `spec.feedback` is judged by the FeedbackStore's
rules, unchanged, at paths under `spec.feedback.`. Proven over every case of the store's own
tables, so no rule can be stated (or forgotten) for one form only."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.rules_builders import channel, human, score
from tests.webhook.rules.test_changes import FIELDS, base
from tests.webhook.rules.test_verdict import CASES
from webhook.rules import Problem, Verdict, validate_spec
from webhook.rules.changes import changed_fields, spec_changes
from webhook.rules.forms import INLINE, STORE


def agent(feedback: object, **spec: object) -> dict[str, Any]:
    """An AgentDeployment whose spec holds `feedback` beside the platform's own fields."""
    return {
        "apiVersion": "agents.ctxmesh.ai/v1beta1",
        "kind": "AgentDeployment",
        "metadata": {"name": "support-agent", "namespace": "agents"},
        "spec": {"model": "gpt-4o", "replicas": 2, "feedback": feedback, **spec},
    }


def rebased(text: str) -> str:
    """A store's path or message as the inline form says it: `spec` as `spec.feedback`."""
    return text.replace("spec", "spec.feedback")


def inline_of(verdict: Verdict) -> tuple[list[tuple[str, str]], list[tuple[str, str]], int]:
    problems = [(rebased(p.field), rebased(p.message)) for p in verdict.problems]
    warnings = [(rebased(w.field), w.message) for w in verdict.warnings]
    return problems, warnings, verdict.omitted


def said(verdict: Verdict) -> tuple[list[tuple[str, str]], list[tuple[str, str]], int]:
    problems = [(p.field, p.message) for p in verdict.problems]
    return problems, [(w.field, w.message) for w in verdict.warnings], verdict.omitted


@pytest.mark.parametrize(
    "spec", [c[1] for c in CASES if c[1] is not None], ids=[c[0] for c in CASES if c[1] is not None]
)
def test_an_agent_is_told_what_a_store_with_the_same_spec_is_told_under_spec_feedback(
    spec: object,
) -> None:
    assert said(INLINE.verdict(agent(spec))) == inline_of(STORE.verdict({"spec": spec}))


def test_every_path_stands_under_spec_feedback() -> None:
    spec = {**human(score("thumbs"), score("thumbs")), "external": [channel(score_name="thumbs")]}
    problems = INLINE.verdict(agent(spec)).problems
    assert [p.field for p in problems] == [
        "spec.feedback.human.scores[1].name",
        "spec.feedback.external[0].score.name",
    ]
    assert "(first declared at spec.feedback.human.scores[0].name)" in problems[0].message


def test_the_platforms_own_fields_beside_feedback_are_not_judged() -> None:
    """Only the declaration is ours: an agent's other fields are the platform's schema's."""
    obj = agent(human(score()), unknownToUs={"x": 1})
    assert INLINE.verdict(obj) == Verdict()


@pytest.mark.parametrize(
    ("obj", "declared"),
    [
        pytest.param(agent(None), None, id="spec.feedback null declares nothing"),
        pytest.param({"spec": {"model": "gpt-4o"}}, None, id="no spec.feedback declares nothing"),
        pytest.param({"metadata": {}}, None, id="no spec declares nothing"),
        pytest.param({"spec": "text"}, None, id="a spec that is not an object declares nothing"),
        pytest.param(agent({}), {}, id="an empty spec.feedback is a declaration, of no source"),
    ],
)
def test_the_declaration_is_what_stands_at_spec_feedback(obj: object, declared: object) -> None:
    assert INLINE.declaration(obj) == declared


@pytest.mark.parametrize(("new", "fields"), FIELDS)
def test_each_change_of_an_agents_feedback_shows_under_spec_feedback(
    new: dict[str, Any], fields: list[str]
) -> None:
    changes = spec_changes(base(), new)
    assert [str(f) for f in changed_fields(changes, new, INLINE.path)] == [
        rebased(f) for f in fields
    ]


names = st.text(alphabet="abcxyz-", min_size=1, max_size=6)


@given(st.lists(names, min_size=1, max_size=8), st.lists(names, max_size=4))
def test_any_spec_gets_the_same_findings_in_either_form(
    human_names: list[str], ext: list[str]
) -> None:
    spec = {
        **human(*(score(n) for n in human_names)),
        "external": [channel(f"c{i}", n) for i, n in enumerate(ext)],
    }
    store, inline = validate_spec(spec), validate_spec(spec, INLINE.path)
    assert [(p.type, rebased(p.field)) for p in store.problems] == [
        (p.type, p.field) for p in inline.problems
    ]
    assert all(isinstance(p, Problem) for p in inline.problems)
