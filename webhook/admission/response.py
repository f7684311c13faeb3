"""The AdmissionReview kube-apiserver accepts back from a validating webhook.

It checks the answer before using it: same apiVersion and kind as it sent,
`response.uid` equal to `request.uid`, and (for a validating webhook) no
`patch`/`patchType`. A plain dict ready for orjson: cheap on the hot path.
"""

from __future__ import annotations

from typing import Any, Final

from webhook.admission.audit import audit_annotations
from webhook.admission.decision import Decision
from webhook.admission.denial import invalid_status
from webhook.admission.envelope import REVIEW_KIND, AdmissionRequest, AdmissionReview
from webhook.kube.objects import metadata_of


def review_answer(review: AdmissionReview, decision: Decision) -> dict[str, Any]:
    request = review.request
    response: dict[str, Any] = {"uid": request.uid, "allowed": decision.allowed}
    if not decision.allowed and decision.verdict is not None:
        response["status"] = invalid_status(subject_name(request), decision.verdict, decision.form)
    if decision.warnings:
        response["warnings"] = list(decision.warnings)
    response["auditAnnotations"] = audit_annotations(request, decision)
    return _review(review, response)


# metav1.StatusReasonInternalError, with its code: the webhook's own fault.
INTERNAL_ERROR_CODE: Final = 500
INTERNAL_ERROR_REASON: Final = "InternalError"


def errored_answer(review: AdmissionReview, message: str) -> dict[str, Any]:
    """The answer to a review the webhook failed to judge, in the protocol (as controller-runtime's
    `admission.Errored`): refused with a 500 Status, so kube-apiserver applies the registration's
    failurePolicy to a fault of ours rather than reading it as the object's."""
    status = {"code": INTERNAL_ERROR_CODE, "reason": INTERNAL_ERROR_REASON, "message": message}
    return _review(review, {"uid": review.request.uid, "allowed": False, "status": status})


def _review(review: AdmissionReview, response: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": review.api_version, "kind": REVIEW_KIND, "response": response}


def subject_name(request: AdmissionRequest) -> str:
    """The object's name, as kube-apiserver would print it in its own validation error.

    kube-apiserver generates a `generateName` object's name before validating
    admission and sends it as `request.name` too (v1.37.2, see
    tests/kube/test_kubectl_platform_today.py); a request that still has no name
    gets the empty name kube-apiserver would print (`FeedbackStore... "" is invalid`).
    """
    if request.name:
        return request.name
    name = metadata_of(request.object).get("name")
    return name if type(name) is str else ""
