"""The webhook really answers: a server-side dry-run of a valid store in `mode: Monitor`, which only
the webhook answers with a warning (SPEC §1), relayed only if kube-apiserver called it through the
registration, reached its pod and trusted its certificate. Dry-run stores nothing."""

from __future__ import annotations

from typing import Any, Final

from webhook.admission.warnings import bounded
from webhook.doctor.result import CheckResult, fail, ok, skip
from webhook.doctor.snapshot import ProbeOutcome
from webhook.rules import api, validate_spec

NAME: Final = "webhook-answers"
PROBE_NAME: Final = "feedbackstore-doctor-probe"
PROBE_SPEC: Final = {"mode": api.MONITOR_MODE, "human": {"scores": [{"name": "doctor-probe"}]}}
_CALL_FAILED: Final = "failed calling webhook"


def probe_store(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": api.API_VERSION,
        "kind": api.KIND,
        "metadata": {"name": PROBE_NAME, "namespace": namespace},
        "spec": PROBE_SPEC,
    }


def expected_warnings() -> tuple[str, ...]:
    return bounded(str(w) for w in validate_spec(PROBE_SPEC).warnings)


def check_probe(outcome: ProbeOutcome | None, namespace: str, selected: bool | None) -> CheckResult:
    """`selected`: the registration's namespaceSelector matches `namespace` (None: unknown)."""
    if outcome is None:
        return skip(NAME, "no FeedbackStore API to probe")
    where = f"dry-run create in namespace {namespace}"
    if outcome.status is None:
        return fail(NAME, f"{where}: no answer from kube-apiserver: {outcome.message}", _LOGS)
    if outcome.status in (200, 201):
        if any(text in got for text in expected_warnings() for got in outcome.warnings):
            return ok(NAME, f"{where}: kube-apiserver called the webhook, which warned as expected")
        return fail(NAME, f"{where} was admitted without the webhook's warning: it was not called",
                    _not_called_fix(namespace, selected))  # fmt: skip
    if _CALL_FAILED in outcome.message:
        return fail(NAME, f"{where}: {outcome.message}", _CALL_FIX)
    if outcome.status == 404 and "namespaces" in outcome.message:
        return fail(NAME, f"{where}: {outcome.message}", _NAMESPACE_FIX)
    return fail(NAME, f"{where}: HTTP {outcome.status}: {outcome.message}", _LOGS)


def _not_called_fix(namespace: str, selected: bool | None) -> str:
    if selected is None:
        return "kube-apiserver has no registration of ours to call: see webhook-configuration"
    if selected is False:
        return f"the namespaceSelector does not match namespace {namespace}: " + _NAMESPACE_FIX
    return (
        "with failurePolicy Ignore a failed call is silent: look for 'failed calling webhook' in "
        "kube-apiserver's log; check the rules match CREATE of feedbackstores"
    )


_CALL_FIX = (
    "kube-apiserver's own words: an x509 error points at the certificate checks above, "
    "'connection refused', 'no endpoints' or a timeout at the webhook pods and the network "
    "from the control plane to them (TCP 8443)"
)
_NAMESPACE_FIX = "pass --probe-namespace NS, an existing namespace the webhook matches"
_LOGS = "check kube-apiserver's health and logs, and that you may create feedbackstores there"
