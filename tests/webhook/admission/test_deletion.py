"""A DELETE of a FeedbackStore is always allowed; the webhook says whether agents still use it.

The webhook reads the status writer's `InUse` condition and our finalizer on
`request.oldObject`, the only place it can learn that (it has no API access).
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from tests.support.reviews import feedbackstore, review, valid_spec
from webhook.admission import decide, decode_review, review_answer
from webhook.admission.deletion import DEFERRED, NOT_IN_USE, UNKNOWN, UNPROTECTED
from webhook.rules import inuse

USED = {
    "type": "InUse",
    "status": "True",
    "reason": "Referenced",
    "message": "in use by 2 AgentDeployments: support-agent, triage-agent",
    "lastTransitionTime": "2026-01-05T10:00:00Z",
}
DEFERRED_CONDITION = {
    **USED,
    "reason": "DeletionDeferred",
    "message": (
        "deletion deferred until no AgentDeployment references it; "
        "in use by 2 AgentDeployments: support-agent, triage-agent"
    ),
}
FREE = {
    **USED,
    "status": "False",
    "reason": "NotReferenced",
    "message": "no AgentDeployment references it",
}
HEADLINE = (
    'FeedbackStore "support-feedback" is in use by 2 AgentDeployments: support-agent, triage-agent'
)
STAYS = "it stays Terminating until no AgentDeployment references it, then it is deleted"
NOW = (
    "it is deleted now (the status writer has not protected it yet): its agents will go Ready=False"
)


def stored(condition: dict[str, Any] | None, *, held: bool) -> dict[str, Any]:
    obj = feedbackstore(valid_spec())
    if held:
        obj["metadata"]["finalizers"] = ["example.com/other", inuse.FINALIZER]
    if condition is not None:
        obj["status"] = {"conditions": [{"type": "Validated", "status": "True"}, condition]}
    return obj


CASES = [
    pytest.param(
        stored(USED, held=True),
        (HEADLINE, STAYS),
        DEFERRED,
        id="in use and held: the agents named, Terminating until released",
    ),
    pytest.param(
        stored(DEFERRED_CONDITION, held=True),
        (HEADLINE, STAYS),
        DEFERRED,
        id="deleted again while deferred: the same answer",
    ),
    pytest.param(
        stored(USED, held=False),
        (HEADLINE, NOW),
        UNPROTECTED,
        id="in use but the finalizer not yet added: deleted now, and said so",
    ),
    pytest.param(stored(FREE, held=False), (), NOT_IN_USE, id="not in use: no warning"),
    pytest.param(
        stored(None, held=False),
        (),
        UNKNOWN,
        id="no InUse condition (feature off or writer not run): no warning",
    ),
    pytest.param(
        {"metadata": "junk", "status": {"conditions": "junk"}},
        (),
        UNKNOWN,
        id="a hostile old object reads as no condition",
    ),
    pytest.param(
        {"status": {"conditions": [{}] * inuse.CONDITIONS_SEARCHED + [USED]}},
        (),
        UNKNOWN,
        id="an InUse past the conditions searched is not looked for",
    ),
]


@pytest.mark.parametrize(("old", "warnings", "audit"), CASES)
def test_a_delete_is_allowed_with_the_in_use_warning(
    old: dict[str, Any], warnings: tuple[str, ...], audit: str
) -> None:
    sent = review("DELETE", None, old, name="support-feedback")
    review_ = decode_review(orjson.dumps(sent))
    decision = decide(review_.request)
    assert (decision.allowed, decision.warnings, decision.delete) == (True, warnings, audit)
    answer = orjson.loads(orjson.dumps(review_answer(review_, decision)))["response"]
    assert answer["allowed"] is True
    assert answer.get("warnings", []) == list(warnings)
    assert answer["auditAnnotations"]["delete"] == audit


def test_every_warning_stays_within_the_length_kubernetes_advises() -> None:
    many = {
        **USED,
        "message": "in use by 30 AgentDeployments: "
        + ", ".join(f"agent-number-{i}" for i in range(10))
        + " and 20 more",
    }
    decision = decide(
        decode_review(orjson.dumps(review("DELETE", None, stored(many, held=True)))).request
    )
    assert decision.warnings[0].startswith('FeedbackStore "support-feedback" is in use by 30 ')
    assert all(len(w) <= 120 for w in decision.warnings)
