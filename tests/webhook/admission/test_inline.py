"""The webhook on the inline form (a FeedbackStore's spec declared in place): an AgentDeployment's
`spec.feedback` is judged as a FeedbackStore's spec is, in both served versions; an agent without
it, or a change that leaves it alone, is not the webhook's business. Every answer is checked as
kube-apiserver checks it, and denials read as kubectl prints them."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.admission_apiserver import accepted_answer, kubectl_denial_text
from tests.support.reviews import (
    AGENT_VERSIONS,
    V1BETA1,
    agent_review,
    agent_update,
    agentdeployment,
    duplicate_spec,
    valid_spec,
)
from tests.webhook.admission.test_decision import answer, monitor_spec
from webhook.admission import Why


def renamed_spec() -> dict[str, Any]:
    """`valid_spec` with its human score `thumbs` renamed to `thumbs-up`."""
    spec = valid_spec()
    spec["human"]["scores"][0]["name"] = "thumbs-up"
    return spec


# One case per two lines, the table of operation rules it is (the formatter would spread
# each over six).
RULES = [
    pytest.param(agent_review("CREATE", agentdeployment(valid_spec())), True, Why.VALID,
                 id="CREATE of an agent with a valid spec.feedback is allowed"),
    pytest.param(agent_review("CREATE", agentdeployment(duplicate_spec())), False, Why.INVALID,
                 id="CREATE of an agent with a duplicate score name in spec.feedback is denied"),
    pytest.param(agent_review("CREATE", agentdeployment({})), False, Why.INVALID,
                 id="CREATE of an agent with an empty spec.feedback is denied: no source"),
    pytest.param(agent_review("CREATE", agentdeployment(None)), True, Why.NO_DECLARATION,
                 id="CREATE of an agent without spec.feedback is allowed unjudged"),
    pytest.param(agent_update(duplicate_spec(), valid_spec()), False, Why.INVALID,
                 id="UPDATE that makes spec.feedback invalid is denied"),
    pytest.param(agent_update(valid_spec(), None), True, Why.VALID,
                 id="UPDATE that adds a valid spec.feedback is allowed"),
    pytest.param(agent_update(duplicate_spec(), None), False, Why.INVALID,
                 id="UPDATE that adds an invalid spec.feedback is denied"),
    pytest.param(agent_update(None, duplicate_spec()), True, Why.NO_DECLARATION,
                 id="UPDATE that removes an invalid spec.feedback is allowed"),
    pytest.param(agent_update(duplicate_spec(), duplicate_spec()), True, Why.UNCHANGED_SPEC,
                 id="UPDATE of other fields leaving an invalid spec.feedback unchanged is allowed"),
    pytest.param(agent_update(duplicate_spec(), renamed_spec(), deleting=True), True,
                 Why.TERMINATING, id="UPDATE of an agent being deleted is allowed"),
    pytest.param(agent_review("DELETE", None, agentdeployment(duplicate_spec())), True,
                 Why.NOT_JUDGED_OPERATION, id="DELETE of an agent is allowed"),
    pytest.param(agent_review("UPDATE", agentdeployment(duplicate_spec()),
                              agentdeployment(valid_spec()), sub_resource="status"),
                 True, Why.SUBRESOURCE, id="an UPDATE of the agent's status is allowed"),
]  # fmt: skip


@pytest.mark.parametrize(("sent", "allowed", "why"), RULES)
def test_operation_rules_on_agents(sent: dict[str, Any], allowed: bool, why: Why) -> None:
    response, decided_by = answer(sent)
    assert (response["allowed"], decided_by) == (allowed, why)
    assert ("status" in response) is (not allowed)


def test_an_agent_without_feedback_passes_silently() -> None:
    """Not a foreign resource any more: no warning that the webhook's rules are wrong."""
    response, _ = answer(agent_review("CREATE", agentdeployment(None)))
    assert "warnings" not in response


@pytest.mark.parametrize("version", AGENT_VERSIONS)
def test_a_denial_names_the_agent_and_every_problem_under_spec_feedback(version: str) -> None:
    spec = duplicate_spec()
    spec["external"].append({"name": "csat-webhook", "score": {"name": "thumbs"}})
    response, _ = answer(agent_review("CREATE", agentdeployment(spec), version=version))
    assert kubectl_denial_text(response) == (
        'The AgentDeployment "support-agent" is invalid: \n'
        '* spec.feedback.human.scores[2].name: Duplicate value: "thumbs": human score names '
        "must be unique (first declared at spec.feedback.human.scores[0].name)\n"
        '* spec.feedback.external[1].name: Duplicate value: "csat-webhook": external channel '
        "names must be unique (first declared at spec.feedback.external[0].name)\n"
        '* spec.feedback.external[1].score.name: Duplicate value: "thumbs": a score name is '
        "declared by both human and an external channel; score names must be unique across all "
        "sources (first declared at spec.feedback.human.scores[0].name)\n"
    )
    status = response["status"]
    assert (status["code"], status["reason"]) == (422, "Invalid")
    assert status["message"].startswith(
        'AgentDeployment.agents.ctxmesh.ai "support-agent" is invalid: ['
    )
    assert status["details"]["kind"] == "AgentDeployment"


def test_the_rules_warnings_are_said_under_spec_feedback() -> None:
    response, why = answer(agent_review("CREATE", agentdeployment(monitor_spec())))
    assert why is Why.VALID
    assert response["warnings"] == [
        "spec.feedback.mode: Monitor relays undeclared score names instead of rejecting them "
        "(422); use only to migrate"
    ]


def test_an_update_of_spec_feedback_is_told_what_it_does_to_ingestion() -> None:
    response, why = answer(agent_update(renamed_spec(), valid_spec()))
    assert why is Why.VALID
    assert response["warnings"] == [
        'score "thumbs" renamed to "thumbs-up" in human: the gateway rejects "thumbs" (422) '
        "from now on"
    ]


def test_an_unchanged_invalid_feedback_let_through_is_warned_about_at_its_path() -> None:
    response, _ = answer(agent_update(duplicate_spec(), duplicate_spec(), api_version=V1BETA1))
    assert response["warnings"][0] == (
        "allowed because spec.feedback is unchanged, but spec.feedback is invalid "
        "(1 problem); fix it before changing it"
    )
    assert response["warnings"][1].startswith("spec.feedback.human.scores[2].name: Duplicate")


def test_the_audit_says_what_was_judged() -> None:
    sent = agent_review("CREATE", agentdeployment(duplicate_spec()))
    response, _ = answer(sent)
    assert response["auditAnnotations"] == {"verdict": "denied", "why": "invalid", "problems": "1"}
    assert accepted_answer  # the answer() helper already checked it as kube-apiserver does
