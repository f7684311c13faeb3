"""The operation rules, table-driven: which requests the verdict decides, which pass anyway,
and what the user is told. Every answer is also checked the way kube-apiserver checks it."""

from __future__ import annotations

import copy
import sys
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from tests.support.admission_apiserver import accepted_answer
from tests.support.reviews import (
    V1,
    V1BETA1,
    create,
    duplicate_spec,
    feedbackstore,
    review,
    update,
    valid_spec,
)
from tests.webhook.admission.test_envelope import nested_spec_body, upstream_fixture
from webhook.admission import (
    BadReviewError,
    BadReviewReason,
    Why,
    decide,
    decode_review,
    review_answer,
)
from webhook.admission.decision import EXEMPTIONS
from webhook.rules import validate_feedbackstore


def answer(sent: dict[str, Any]) -> tuple[dict[str, Any], Why]:
    """Decode, decide and answer `sent`; the response kube-apiserver accepts, and the rule."""
    review_ = decode_review(orjson.dumps(sent))
    decision = decide(review_.request)
    body = orjson.dumps(review_answer(review_, decision))
    return accepted_answer(sent, 200, body), decision.why


def monitor_spec() -> dict[str, Any]:
    spec = valid_spec()
    spec["mode"] = "Monitor"
    return spec


def no_source_spec() -> dict[str, Any]:
    return {"mode": "Enforce"}


# One case per two lines, the table of operation rules it is (the formatter would spread
# each over six).
RULES = [
    pytest.param(create(valid_spec()), True, Why.VALID,
                 id="CREATE of a valid store is allowed"),
    pytest.param(create(duplicate_spec()), False, Why.INVALID,
                 id="CREATE of a store with a duplicate score name is denied"),
    pytest.param(create(None), False, Why.INVALID,
                 id="CREATE of a store without spec is denied"),
    pytest.param(update(duplicate_spec(), valid_spec()), False, Why.INVALID,
                 id="UPDATE that makes the spec invalid is denied"),
    pytest.param(update(valid_spec(), duplicate_spec()), True, Why.VALID,
                 id="UPDATE that repairs an invalid spec is allowed"),
    pytest.param(update(duplicate_spec(), duplicate_spec()), True, Why.UNCHANGED_SPEC,
                 id="UPDATE leaving an invalid spec unchanged is allowed"),
    pytest.param(update(None, None), True, Why.UNCHANGED_SPEC,
                 id="UPDATE of a store that never had a spec, leaving it so, is allowed"),
    pytest.param(update(valid_spec(), valid_spec()), True, Why.UNCHANGED_SPEC,
                 id="UPDATE leaving a valid spec unchanged is allowed"),
    pytest.param(update(duplicate_spec(), valid_spec(), deleting=True), True, Why.TERMINATING,
                 id="UPDATE of an object being deleted is allowed even with an invalid spec"),
    pytest.param(update(no_source_spec(), no_source_spec(), deleting=True), True,
                 Why.TERMINATING, id="removing the finalizers of an invalid store is allowed"),
    pytest.param(review("DELETE", None, feedbackstore(duplicate_spec())), True,
                 Why.NOT_JUDGED_OPERATION, id="DELETE is allowed"),
    pytest.param(review("CONNECT", None, None, name="support-feedback"), True,
                 Why.NOT_JUDGED_OPERATION, id="CONNECT is allowed"),
    pytest.param(review("UPDATE", feedbackstore(duplicate_spec()), feedbackstore(valid_spec()),
                        sub_resource="status"), True, Why.SUBRESOURCE,
                 id="an UPDATE of the status subresource is allowed"),
    pytest.param(review("CREATE", {"apiVersion": "v1", "kind": "ConfigMap", "data": {}},
                        group="", resource="configmaps", kind="ConfigMap"), True,
                 Why.FOREIGN_RESOURCE, id="a ConfigMap sent by a misconfigured webhook is allowed"),
    pytest.param(review("CREATE", feedbackstore(duplicate_spec()), group="agents.example.com"),
                 True, Why.FOREIGN_RESOURCE, id="a same-named resource of another group passes"),
    pytest.param(review("PATCHWORK", feedbackstore(duplicate_spec())), True,
                 Why.UNKNOWN_OPERATION, id="an operation kube-apiserver does not send is allowed"),
    pytest.param(create(duplicate_spec(), dry_run=True), False, Why.INVALID,
                 id="a dry-run CREATE gets the same denial"),
    pytest.param(create(valid_spec(), dry_run=True), True, Why.VALID,
                 id="a dry-run CREATE of a valid store is allowed"),
    pytest.param(create(duplicate_spec(), api_version=V1BETA1), False, Why.INVALID,
                 id="a v1beta1 review is judged the same"),
]  # fmt: skip


@pytest.mark.parametrize(("sent", "allowed", "why"), RULES)
def test_operation_rules(sent: dict[str, Any], allowed: bool, why: Why) -> None:
    response, decided_by = answer(sent)
    assert response["allowed"] is allowed
    assert decided_by is why
    assert ("status" in response) is (not allowed)


def test_an_invalid_declaration_passes_only_by_an_exemption() -> None:
    """What the endpoint logs as `allowed despite an invalid spec` is what `EXEMPTIONS` says."""
    passed = set()
    for case in RULES:
        decision = decide(decode_review(orjson.dumps(case.values[0])).request)
        if decision.allowed and decision.verdict is not None and not decision.verdict.valid:
            assert decision.why in EXEMPTIONS, case.id
            passed.add(decision.why)
    assert passed == EXEMPTIONS


def test_the_denial_is_the_same_whatever_the_review_version_or_dry_run() -> None:
    obj = feedbackstore(duplicate_spec())
    statuses = []
    for api_version in (V1, V1BETA1):
        for dry_run in (False, True):
            response, _ = answer(review("CREATE", obj, api_version=api_version, dry_run=dry_run))
            statuses.append(response["status"])
    assert all(status == statuses[0] for status in statuses)


@pytest.mark.parametrize(
    ("sent", "headline"),
    [
        pytest.param(
            update(duplicate_spec(), duplicate_spec()),
            "allowed because spec is unchanged, but spec is invalid "
            "(1 problem); fix it before changing it",
            id="an unchanged invalid spec is named in a warning",
        ),
        pytest.param(
            update(duplicate_spec(), valid_spec(), deleting=True),
            "allowed because the object is being deleted, but spec is invalid "
            "(1 problem); fix it before changing it",
            id="an object being deleted with an invalid spec is warned about",
        ),
    ],
)
def test_an_invalid_spec_let_through_is_warned_about_with_its_problems(
    sent: dict[str, Any], headline: str
) -> None:
    response, _ = answer(sent)
    problem = str(validate_feedbackstore(sent["request"]["object"]).problems[0])
    assert response["warnings"] == [headline, problem[:117] + "..."]


def test_an_unchanged_valid_spec_passes_silently() -> None:
    response, _ = answer(update(monitor_spec(), monitor_spec()))
    assert "warnings" not in response


def test_a_checked_spec_carries_the_rules_warnings() -> None:
    response, why = answer(create(monitor_spec()))
    assert why is Why.VALID
    assert response["warnings"] == [
        "spec.mode: Monitor relays undeclared score names instead of rejecting them (422); "
        "use only to migrate"
    ]


def test_a_denial_carries_the_rules_warnings_too() -> None:
    spec = duplicate_spec()
    spec["mode"] = "Monitor"
    response, _ = answer(create(spec))
    assert response["allowed"] is False
    assert response["warnings"][0].startswith("spec.mode: Monitor")


def test_a_foreign_resource_warning_names_it_and_the_fix() -> None:
    sent = review("CREATE", {"kind": "ConfigMap"}, group="", resource="configmaps")
    response, _ = answer(sent)
    assert response["warnings"] == [
        '"/configmaps" is not a FeedbackStore or AgentDeployment: allowed unchecked; '
        "fix the webhook's rules"
    ]


def test_a_review_without_resource_or_user_is_allowed_as_a_foreign_resource() -> None:
    sent = create(valid_spec())
    del sent["request"]["resource"], sent["request"]["userInfo"]
    response, why = answer(sent)
    assert (response["allowed"], why) == (True, Why.FOREIGN_RESOURCE)
    assert response["warnings"] == [
        '"/" is not a FeedbackStore or AgentDeployment: allowed unchecked; fix the webhook\'s rules'
    ]


def test_a_hostile_operation_name_is_cut_in_the_warning() -> None:
    response, _ = answer(review("X" * 10_000, feedbackstore(valid_spec())))
    assert len(response["warnings"]) == 1
    assert len(response["warnings"][0]) <= 120


@pytest.mark.parametrize("operation", ["CREATE", "UPDATE"])
def test_a_create_or_update_without_object_is_a_bad_review(operation: str) -> None:
    sent = review(operation, None, feedbackstore(valid_spec()), name="support-feedback")
    with pytest.raises(BadReviewError) as caught:
        decide(decode_review(orjson.dumps(sent)).request)
    assert caught.value.reason is BadReviewReason.NO_OBJECT
    assert caught.value.message == f"request.object is required for {operation}"


@pytest.mark.parametrize(
    "obj",
    [[1, 2], "a string", 42, {"spec": []}, {"spec": "text"}, {"metadata": [], "spec": {}}],
    ids=["a list", "a string", "a number", "a list spec", "a string spec", "a list metadata"],
)
def test_an_object_of_the_wrong_shape_is_denied_not_crashed_on(obj: Any) -> None:
    response, why = answer(review("CREATE", obj, name="odd"))
    assert response["allowed"] is False
    assert why is Why.INVALID
    assert response["status"]["code"] == 422


def test_update_with_an_old_object_of_the_wrong_shape_judges_the_new_one() -> None:
    sent = review("UPDATE", feedbackstore(duplicate_spec()), ["not", "an", "object"])
    response, why = answer(sent)
    assert (response["allowed"], why) == (False, Why.INVALID)


@pytest.fixture(name="default_recursion_limit")
def _default_recursion_limit() -> Iterator[None]:
    """CPython's default limit, as the server runs with (another test may have raised it)."""
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    yield
    sys.setrecursionlimit(previous)


@pytest.mark.usefixtures("default_recursion_limit")
def test_update_comparing_two_specs_too_deep_to_compare_judges_the_new_one() -> None:
    body = nested_spec_body(1000).replace(b'"operation":"CREATE"', b'"operation":"UPDATE"')
    text = body.replace(b'"oldObject":null', b'"oldObject":' + _object_text(body))
    review_ = decode_review(text)
    # The premise: Python cannot compare them.
    with pytest.raises(RecursionError, match="maximum recursion depth exceeded"):
        _ = review_.request.object["spec"] == review_.request.old_object["spec"]
    decision = decide(review_.request)
    assert (decision.allowed, decision.why) == (False, Why.INVALID)


def _object_text(body: bytes) -> bytes:
    """The `object` member of a review body, as text (too deep to re-serialise)."""
    start = body.index(b'"object":') + len(b'"object":')
    end = body.index(b',"oldObject"')
    return body[start:end]


@pytest.mark.parametrize("api_version", [V1, V1BETA1], ids=["v1", "v1beta1"])
def test_the_upstream_fixture_is_answered_in_its_own_version_as_a_foreign_resource(
    api_version: str,
) -> None:
    sent = orjson.loads(upstream_fixture(api_version))
    review_ = decode_review(upstream_fixture(api_version))
    decision = decide(review_.request)
    response = accepted_answer(sent, 200, orjson.dumps(review_answer(review_, decision)))
    assert response["allowed"] is True
    assert decision.why is Why.FOREIGN_RESOURCE
    assert response["uid"] == "uidValue"
    assert response["warnings"] == [
        '"groupValue/resourceValue" is not a FeedbackStore or AgentDeployment: allowed unchecked; '
        "fix the webhook's rules"
    ]


def test_deciding_never_changes_the_request() -> None:
    sent = update(duplicate_spec(), valid_spec())
    before = copy.deepcopy(sent)
    answer(sent)
    assert sent == before
