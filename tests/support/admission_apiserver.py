"""What kube-apiserver checks in a webhook's answer, and what kubectl then prints.

kube-apiserver (admission webhook dispatcher, VerifyAdmissionResponse) rejects
an answer that is not HTTP 200, whose apiVersion/kind differ from what it sent,
whose `response.uid` differs from `request.uid`, or that carries
`patch`/`patchType` from a validating webhook. A denial becomes a StatusError
built from `response.status`; kubectl prints an `Invalid` one with causes as
`The <kind> "<name>" is invalid: ` and one `field: message` per cause
(kubectl's cmdutil checkErr / MultilineError / statusCausesToAggrError).
"""

from __future__ import annotations

import re
from typing import Any, Final

import orjson


def accepted_answer(sent: dict[str, Any], status: int, body: bytes) -> dict[str, Any]:
    """The `response` of an answer kube-apiserver accepts; AssertionError naming what it rejects."""
    assert status == 200, f"kube-apiserver fails the call on HTTP {status}: {body[:300]!r}"
    answer = orjson.loads(body)
    assert isinstance(answer, dict), "the answer must be a JSON object"
    assert answer.get("apiVersion") == sent["apiVersion"], (
        f"expected webhook response of {sent['apiVersion']}, got {answer.get('apiVersion')}"
    )
    assert answer.get("kind") == "AdmissionReview", f"kind {answer.get('kind')!r}"
    response = answer.get("response")
    assert isinstance(response, dict), "webhook response was absent"
    assert response.get("uid") == sent["request"]["uid"], "response.uid does not match request.uid"
    assert isinstance(response.get("allowed"), bool), "response.allowed must be a boolean"
    assert "patch" not in response, "validating webhook may not return response.patch"
    assert "patchType" not in response, "validating webhook may not return response.patchType"
    annotations = response.get("auditAnnotations", {})
    assert isinstance(annotations, dict), "auditAnnotations must be an object"
    assert all(isinstance(v, str) for v in annotations.values()), "audit annotation values: strings"
    warnings = response.get("warnings", [])
    assert isinstance(warnings, list)
    assert all(isinstance(w, str) for w in warnings)
    if not response["allowed"]:
        status_obj = response.get("status")
        assert isinstance(status_obj, dict), "a denial without status reads 'without explanation'"
        assert 400 <= status_obj.get("code", 0) < 600
    return response


def kubectl_denial_text(response: dict[str, Any]) -> str:
    """What `kubectl apply` prints for this denial (an Invalid StatusError with causes)."""
    status = response["status"]
    assert status["reason"] == "Invalid"
    details = status["details"]
    prefix = f'The {details["kind"]} "{details["name"]}" is invalid: '
    lines: list[str] = []
    for cause in details.get("causes", []):
        line = f"{cause.get('field', '')}: {cause.get('message', '')}"
        if line not in lines:
            lines.append(line)
    if len(lines) == 1:
        return prefix + lines[0] + "\n"
    return prefix + "\n" + "".join(f"* {line}\n" for line in lines)


# apimachinery's content.IsLabelKey (admission's checkKeyFormat) and IsDNS1123Subdomain.
_NAME_PART: Final = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_SUBDOMAIN: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def recorded_audit_annotations(webhook_name: str, response: dict[str, Any]) -> dict[str, str]:
    """What kube-apiserver writes in the audit event for these `auditAnnotations`.

    The validating dispatcher prefixes each key with `<webhook name>/` and adds it
    with `AddAnnotation`, which drops (logging a warning) a key that is not a
    qualified name: one `/`, a DNS subdomain prefix of at most 253 characters,
    a name part of at most 63 alphanumerics, `-`, `_`, `.`, alphanumeric at both ends.
    """
    recorded: dict[str, str] = {}
    for key, value in response.get("auditAnnotations", {}).items():
        full = f"{webhook_name}/{key}"
        prefix, _, name = full.partition("/")
        if (
            full.count("/") == 1
            and len(prefix) <= 253
            and _SUBDOMAIN.fullmatch(prefix)
            and len(name) <= 63
            and _NAME_PART.fullmatch(name)
        ):
            recorded[full] = value
    return recorded
