"""The AdmissionReview kube-apiserver accepts back from a validating webhook.

It checks the answer before using it: same apiVersion and kind as it sent,
`response.uid` equal to `request.uid`, and (for a validating webhook) no
`patch`/`patchType`. A plain dict ready for orjson: cheap on the hot path.
"""

from __future__ import annotations

from typing import Any

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
