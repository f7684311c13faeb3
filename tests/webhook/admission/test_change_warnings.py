"""Change-impact warnings on UPDATE (what the change does to the agents and dashboards that read the
store) over the admission handler: decoded, decided and answered as kube-apiserver sees it. Warn,
never deny; nothing when spec is unchanged or the object is terminating."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import orjson

from tests.support.admission_apiserver import accepted_answer
from tests.support.reviews import create, feedbackstore, review, update, valid_spec
from webhook.admission import Why, decide, decode_review, review_answer
from webhook.status.usage import plan_usage

REMOVED_THUMBS = 'score "thumbs" removed from human: the gateway rejects "thumbs" (422) from now on'
TO_MONITOR = (
    "mode Enforce -> Monitor: the gateway relays undeclared score names, read as unattributed"
)


MONITOR_FIELD_WARNING = (
    "spec.mode: Monitor relays undeclared score names instead of rejecting them (422); "
    "use only to migrate"
)


def answer(sent: dict[str, Any]) -> tuple[dict[str, Any], Why]:
    review_ = decode_review(orjson.dumps(sent))
    decision = decide(review_.request)
    body = orjson.dumps(review_answer(review_, decision))
    return accepted_answer(sent, 200, body), decision.why


def without_thumbs() -> dict[str, Any]:
    spec = valid_spec()
    spec["human"]["scores"] = spec["human"]["scores"][1:]
    return spec


def in_use_by(store: dict[str, Any], agents: tuple[str, ...]) -> dict[str, Any]:
    """`store` carrying the InUse condition the status writer plans for these agents."""
    condition = plan_usage(store, agents, datetime(2026, 1, 6, tzinfo=UTC)).condition
    assert condition is not None
    store["status"] = {"conditions": [condition]}
    return store


def stored_update(new_spec: Any, old: dict[str, Any]) -> dict[str, Any]:
    new = copy.deepcopy(old)
    new["spec"] = new_spec
    return review("UPDATE", new, old)


def test_a_valid_update_that_removes_a_score_is_allowed_and_warned() -> None:
    response, why = answer(update(without_thumbs(), valid_spec()))
    assert (response["allowed"], why) == (True, Why.VALID)
    assert response["warnings"] == [REMOVED_THUMBS]


def test_several_changes_are_each_said_in_order() -> None:
    spec = without_thumbs()
    spec["mode"] = "Monitor"
    response, _ = answer(update(spec, valid_spec()))
    assert response["warnings"] == [
        TO_MONITOR,
        'score "thumbs" removed from human: "thumbs" is relayed, read as unattributed, from now on',
        MONITOR_FIELD_WARNING,
    ]


def test_an_invalid_update_is_still_refused_and_told_what_it_changes() -> None:
    spec = without_thumbs()
    spec["external"].append({"name": "csat-webhook", "score": {"name": "tone"}})
    response, why = answer(update(spec, valid_spec()))
    assert (response["allowed"], why) == (False, Why.INVALID)
    assert response["status"]["reason"] == "Invalid"
    assert response["warnings"][0] == REMOVED_THUMBS


def test_an_update_leaving_spec_unchanged_gets_no_change_warning() -> None:
    response, why = answer(update(valid_spec(), valid_spec()))
    assert (why, response.get("warnings")) == (Why.UNCHANGED_SPEC, None)


def test_reordering_is_not_a_change() -> None:
    spec = valid_spec()
    spec["human"]["scores"].reverse()
    response, why = answer(update(spec, valid_spec()))
    assert (response["allowed"], why, response.get("warnings")) == (True, Why.VALID, None)


def test_a_terminating_object_gets_no_change_warning() -> None:
    response, why = answer(update(without_thumbs(), valid_spec(), deleting=True))
    assert (why, response.get("warnings")) == (Why.TERMINATING, None)


def test_a_create_gets_no_change_warning() -> None:
    response, _ = answer(create(without_thumbs()))
    assert response.get("warnings") is None


def test_a_store_in_use_names_its_agents_in_each_warning() -> None:
    old = in_use_by(feedbackstore(valid_spec()), ("support-agent", "billing-agent"))
    spec = without_thumbs()
    spec["mode"] = "Monitor"
    response, _ = answer(stored_update(spec, old))
    assert response["warnings"] == [
        'FeedbackStore "support-feedback" is in use by 2 AgentDeployments: '
        "support-agent, billing-agent",
        TO_MONITOR + "; used by 2 AgentDeployments",
        'score "thumbs" removed from human: "thumbs" is relayed, read as '
        "unattributed, from now on"
        "; used by 2 AgentDeployments",
        MONITOR_FIELD_WARNING,
    ]
    assert all(len(w) <= 120 for w in response["warnings"])


def test_many_agents_are_counted_past_the_first_named() -> None:
    agents = tuple(f"agent-{i:02}" for i in range(14))
    old = in_use_by(feedbackstore(valid_spec()), agents)
    response, _ = answer(stored_update(without_thumbs(), old))
    headline, warning = response["warnings"]
    assert headline == (
        'FeedbackStore "support-feedback" is in use by 14 AgentDeployments: agent-00, agent-01, '
        "agent-02, agent-03 and 10 more"
    )
    assert warning == REMOVED_THUMBS + "; used by 14 AgentDeployments"


def test_a_store_not_in_use_names_nobody() -> None:
    old = in_use_by(feedbackstore(valid_spec()), ())
    response, _ = answer(stored_update(without_thumbs(), old))
    assert response["warnings"] == [REMOVED_THUMBS]


def test_many_changes_are_bounded_with_a_count_of_the_rest() -> None:
    old_spec = {"human": {"scores": [{"name": f"score-{i:02}"} for i in range(64)]}}
    response, why = answer(update({"human": {"scores": [{"name": "kept"}]}}, old_spec))
    warnings = response["warnings"]
    assert why == Why.VALID
    assert sum(map(len, warnings)) <= 2048
    assert (
        warnings[0]
        == 'score "score-00" renamed to "kept" in human: the gateway rejects "score-00" (422) '
        "from now on"
    )
    kept = len(warnings) - 1
    assert warnings[-1] == f"and {64 - kept} more warnings"
