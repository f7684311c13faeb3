"""The denial a kubectl user reads: kube-apiserver's NewInvalid shape, exact texts, and bounded
answers and warnings for huge objects."""

from __future__ import annotations

import re
from typing import Any

import orjson
import pytest

from tests.support.admission_apiserver import accepted_answer, kubectl_denial_text
from tests.support.reviews import create, duplicate_spec, feedbackstore, review
from webhook.admission import decide, decode_review, errored_answer, review_answer
from webhook.admission.denial import MESSAGE_BUDGET
from webhook.admission.warnings import bounded
from webhook.rules import validate_feedbackstore
from webhook.text import MAX_WARNING_LENGTH

DUP = (
    'Duplicate value: "thumbs": human score names must be unique '
    "(first declared at spec.human.scores[0].name)"
)


def respond(sent: dict[str, Any]) -> dict[str, Any]:
    review_ = decode_review(orjson.dumps(sent))
    return accepted_answer(sent, 200, orjson.dumps(review_answer(review_, decide(review_.request))))


def test_one_problem_reads_like_kube_apiservers_own_validation_error() -> None:
    response = respond(create(duplicate_spec()))
    assert response["status"] == {
        "status": "Failure",
        "message": 'FeedbackStore.agents.ctxmesh.ai "support-feedback" is invalid: '
        f"spec.human.scores[2].name: {DUP}",
        "reason": "Invalid",
        "details": {
            "name": "support-feedback",
            "group": "agents.ctxmesh.ai",
            "kind": "FeedbackStore",
            "causes": [
                {
                    "reason": "FieldValueDuplicate",
                    "message": DUP,
                    "field": "spec.human.scores[2].name",
                }
            ],
        },
        "code": 422,
    }
    assert kubectl_denial_text(response) == (
        f'The FeedbackStore "support-feedback" is invalid: spec.human.scores[2].name: {DUP}\n'
    )


def test_several_problems_are_bracketed_in_the_message_and_one_line_each_for_kubectl() -> None:
    spec = {
        "mode": "enforce",
        "human": {"scores": [{"name": "thumbs"}, {"name": "thumbs", "dataType": "STRING"}]},
        "humans": {},
    }
    response = respond(create(spec))
    verdict = validate_feedbackstore({"spec": spec})
    lines = [str(p) for p in verdict.problems]
    assert len(lines) == 4
    assert response["status"]["message"] == (
        f'FeedbackStore.agents.ctxmesh.ai "support-feedback" is invalid: [{", ".join(lines)}]'
    )
    causes = response["status"]["details"]["causes"]
    assert [(c["field"], c["reason"], c["message"]) for c in causes] == [
        (p.field, p.type.value, p.message) for p in verdict.problems
    ]
    assert kubectl_denial_text(response) == (
        'The FeedbackStore "support-feedback" is invalid: \n'
        + "".join(f"* {line}\n" for line in lines)
    )


@pytest.mark.parametrize(
    ("request_name", "metadata", "shown"),
    [
        pytest.param("support-feedback", {}, "support-feedback", id="the request's name is used"),
        pytest.param(
            "",
            {"name": "from-object"},
            "from-object",
            id="without a request name the object's name is used",
        ),
        pytest.param(
            "",
            {"name": None, "generateName": "support-"},
            "",
            id="a generateName-only CREATE is named empty, as kube-apiserver does",
        ),
        pytest.param("", {"name": 42}, "", id="a name of the wrong type is not shown"),
        pytest.param('we"ird\\name', {}, 'we"ird\\name', id="an odd name is quoted like Go's %q"),
    ],
)
def test_the_denied_objects_name(request_name: str, metadata: dict[str, Any], shown: str) -> None:
    obj = feedbackstore(duplicate_spec(), **metadata)
    response = respond(review("CREATE", obj, name=request_name))
    status = response["status"]
    assert status["details"]["name"] == shown
    escaped = shown.replace("\\", "\\\\").replace('"', '\\"')
    assert status["message"].startswith(f'FeedbackStore.agents.ctxmesh.ai "{escaped}" is invalid: ')


def huge_invalid_spec(scores: int) -> dict[str, Any]:
    """`scores` human scores, every one with an unsupported dataType and a duplicate name."""
    return {"human": {"scores": [{"name": "same", "dataType": "TEXT"}] * scores}}


@pytest.mark.parametrize("scores", [200, 5_000], ids=["hundreds of problems", "thousands"])
def test_a_huge_invalid_object_gets_a_bounded_answer(scores: int) -> None:
    response = respond(create(huge_invalid_spec(scores)))
    status = response["status"]
    verdict = validate_feedbackstore({"spec": huge_invalid_spec(scores)})
    causes = status["details"]["causes"]
    shown = len(causes) - 1
    assert len(status["message"]) <= MESSAGE_BUDGET + 100
    assert len(orjson.dumps(response)) < 3 * MESSAGE_BUDGET
    assert status["message"].endswith(f", and {verdict.problem_count - shown} more problems]")
    assert causes[-1] == {
        "message": f"and {verdict.problem_count - shown} more problems",
        "field": "spec",
    }
    assert [c["field"] for c in causes[:-1]] == [p.field for p in verdict.problems[:shown]]
    assert kubectl_denial_text(response).endswith(
        f"* spec: and {verdict.problem_count - shown} more problems\n"
    )


def test_warnings_of_a_maximal_store_stay_under_kube_apiservers_limits() -> None:
    scores = [{"name": f" score-{i} ", "dataType": "CATEGORICAL"} for i in range(64)]
    channels = [
        {
            "name": f"channel-{i}",
            "score": {"name": f"ext-{i}", "dataType": "BOOLEAN", "categories": ["a"]},
        }
        for i in range(32)
    ]
    response = respond(
        create({"mode": "Monitor", "human": {"scores": scores}, "external": channels})
    )
    warnings = response["warnings"]
    assert response["allowed"] is True
    assert all(len(w) <= MAX_WARNING_LENGTH for w in warnings)
    assert sum(map(len, warnings)) <= 4096
    assert re.fullmatch(r"and \d+ more warnings", warnings[-1])
    assert not any(w.lower().startswith("warning") for w in warnings)


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        pytest.param(["short"], ("short",), id="a short warning is kept as is"),
        pytest.param(["x" * 121], ("x" * 117 + "...",), id="a long warning is cut to 120"),
        pytest.param(
            ["y" * 100] * 30,
            (*["y" * 100] * 20, "and 10 more warnings"),
            id="too many warnings end with a count of the rest",
        ),
        pytest.param([], (), id="no warnings stay none"),
    ],
)
def test_warnings_are_bounded(texts: list[str], expected: tuple[str, ...]) -> None:
    assert bounded(texts) == expected


def test_a_review_the_webhook_failed_to_judge_is_refused_in_the_protocol_with_a_500() -> None:
    sent = create(duplicate_spec())
    body = orjson.dumps(errored_answer(decode_review(orjson.dumps(sent)), "boom"))
    response = accepted_answer(sent, 200, body)
    assert response["allowed"] is False
    assert response["status"] == {"code": 500, "reason": "InternalError", "message": "boom"}
