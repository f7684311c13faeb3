"""The audit trail: every answered review carries `auditAnnotations` that kube-apiserver records
under the webhook's name — verdict, rule, problem count, and for a DELETE what was decided."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import yaml

from tests.kube.cluster import SHIPPED_WEBHOOK
from tests.support.admission_apiserver import accepted_answer, recorded_audit_annotations
from tests.support.reviews import (
    V1BETA1,
    create,
    duplicate_spec,
    feedbackstore,
    review,
    update,
    valid_spec,
)
from webhook.admission import decide, decode_review, review_answer
from webhook.admission.audit import KEYS
from webhook.admission.deletion import UNKNOWN
from webhook.rules import validate_feedbackstore

SHIPPED_NAME: str = yaml.safe_load(SHIPPED_WEBHOOK.read_text())["webhooks"][0]["name"]
# A webhook name may be a DNS subdomain of up to 253 characters (kube-apiserver's registration
# validation); the keys must still be accepted behind the longest.
LONGEST_NAME = ".".join(["a" * 63, "b" * 63, "c" * 63, "d" * 61])


def annotations_of(sent: dict[str, Any]) -> dict[str, str]:
    review_ = decode_review(orjson.dumps(sent))
    body = orjson.dumps(review_answer(review_, decide(review_.request)))
    annotations: dict[str, str] = accepted_answer(sent, 200, body)["auditAnnotations"]
    return annotations


def many_problems_spec(count: int) -> dict[str, Any]:
    """`count` duplicates of one score name (at most 63: only the first 64 scores are judged)."""
    return {"mode": "Enforce", "human": {"scores": [{"name": "same"}] * (count + 1)}}


def huge_spec() -> dict[str, Any]:
    """4,095 problems within the limits: 64 scores of one name, each with one category 64 times,
    and as many again past the limits (counted once, as Too many)."""
    return {
        "mode": "Enforce",
        "human": {"scores": [{"name": "same", "categories": ["c"] * 64}] * 128},
    }


HUGE_COUNT = str(validate_feedbackstore({"spec": huge_spec()}).problem_count)


CASES = [
    pytest.param(
        create(valid_spec()),
        {"verdict": "allowed", "why": "valid", "problems": "0"},
        id="a valid CREATE is allowed with no problems",
    ),
    pytest.param(
        create(duplicate_spec()),
        {"verdict": "denied", "why": "invalid", "problems": "1"},
        id="a CREATE with a duplicate score name is denied with one problem",
    ),
    pytest.param(
        create(huge_spec()),
        {"verdict": "denied", "why": "invalid", "problems": HUGE_COUNT},
        id="a huge invalid CREATE records the full count, not the listed few",
    ),
    pytest.param(
        create(duplicate_spec(), api_version=V1BETA1),
        {"verdict": "denied", "why": "invalid", "problems": "1"},
        id="a v1beta1 review is annotated the same",
    ),
    pytest.param(
        update(valid_spec(), duplicate_spec()),
        {"verdict": "allowed", "why": "valid", "problems": "0"},
        id="an UPDATE fixing the spec is allowed",
    ),
    pytest.param(
        update(duplicate_spec(), duplicate_spec()),
        {"verdict": "allowed", "why": "unchanged_spec", "problems": "1"},
        id="an UPDATE leaving an invalid spec unchanged is allowed, its problems counted",
    ),
    pytest.param(
        update(many_problems_spec(2), valid_spec(), deleting=True),
        {"verdict": "allowed", "why": "terminating", "problems": "2"},
        id="an UPDATE of a terminating object is allowed, its problems counted",
    ),
    pytest.param(
        review("DELETE", None, feedbackstore(valid_spec())),
        {"verdict": "allowed", "why": "not_judged_operation", "delete": UNKNOWN},
        id="a DELETE is allowed and says what was decided about deleting",
    ),
    pytest.param(
        review("CONNECT", None, None, name="support-feedback"),
        {"verdict": "allowed", "why": "not_judged_operation"},
        id="a CONNECT is allowed unjudged, without a delete decision",
    ),
    pytest.param(
        review("DELETE", None, feedbackstore(valid_spec()), sub_resource="status"),
        {"verdict": "allowed", "why": "subresource"},
        id="a subresource request is allowed unjudged, even a DELETE",
    ),
    pytest.param(
        review(
            "UPDATE",
            feedbackstore(duplicate_spec()),
            feedbackstore(valid_spec()),
            sub_resource="status",
        ),
        {"verdict": "allowed", "why": "subresource"},
        id="a status UPDATE is allowed unjudged",
    ),
    pytest.param(
        review("CREATE", {"kind": "ConfigMap"}, group="", resource="configmaps", kind="ConfigMap"),
        {"verdict": "allowed", "why": "foreign_resource"},
        id="a foreign resource is allowed unjudged",
    ),
    pytest.param(
        review("PATCH", feedbackstore(valid_spec())),
        {"verdict": "allowed", "why": "unknown_operation"},
        id="an operation kube-apiserver does not send is allowed unjudged",
    ),
]


@pytest.mark.parametrize(("sent", "expected"), CASES)
def test_every_answer_is_annotated_with_the_verdict_and_why(
    sent: dict[str, Any], expected: dict[str, str]
) -> None:
    assert annotations_of(sent) == expected


@pytest.mark.parametrize("webhook_name", [SHIPPED_NAME, LONGEST_NAME], ids=["shipped", "longest"])
@pytest.mark.parametrize(("sent", "expected"), CASES)
def test_kube_apiserver_records_every_key_under_the_webhooks_name(
    webhook_name: str, sent: dict[str, Any], expected: dict[str, str]
) -> None:
    review_ = decode_review(orjson.dumps(sent))
    response = review_answer(review_, decide(review_.request))["response"]
    assert recorded_audit_annotations(webhook_name, response) == {
        f"{webhook_name}/{key}": value for key, value in expected.items()
    }


def test_the_emulated_key_check_drops_what_kube_apiserver_drops() -> None:
    """The emulation is not a pass-through: keys kube-apiserver refuses are dropped."""
    response = {
        "auditAnnotations": {
            "ok": "1",
            "a/b": "2",
            "-dash": "3",
            "x" * 64: "4",
            "": "5",
            "x" * 63: "6",
        }
    }
    assert recorded_audit_annotations(SHIPPED_NAME, response) == {
        f"{SHIPPED_NAME}/ok": "1",
        f"{SHIPPED_NAME}/{'x' * 63}": "6",
    }
    assert recorded_audit_annotations("Not_A_Subdomain", response) == {}


def test_a_huge_invalid_object_counts_problems_its_denial_does_not_list() -> None:
    sent = create(huge_spec())
    review_ = decode_review(orjson.dumps(sent))
    response = review_answer(review_, decide(review_.request))["response"]
    listed = [c for c in response["status"]["details"]["causes"] if c.get("reason")]
    assert int(HUGE_COUNT) >= 4000 > len(listed)
    assert response["auditAnnotations"]["problems"] == HUGE_COUNT


def test_keys_are_few_and_values_short() -> None:
    assert len(KEYS) == len(set(KEYS))
    for sent, expected in (case.values for case in CASES):
        annotations = annotations_of(sent)  # type: ignore[arg-type]
        assert set(annotations) <= set(KEYS)
        assert all(len(value) <= 32 for value in annotations.values()), annotations
        assert annotations == expected


def test_answers_do_not_share_their_annotations() -> None:
    """The constant parts are built once; an answer changed by its caller changes no other."""
    sent = create(valid_spec())
    review_ = decode_review(orjson.dumps(sent))
    first = review_answer(review_, decide(review_.request))
    first["response"]["auditAnnotations"]["verdict"] = "tampered"
    second = review_answer(review_, decide(review_.request))
    assert second["response"]["auditAnnotations"]["verdict"] == "allowed"
