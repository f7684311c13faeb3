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

from typing import Any

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
