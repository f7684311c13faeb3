"""The audit trail of every answered review: `response.auditAnnotations`.

kube-apiserver records each annotation in the request's audit event (audit
level Metadata or higher) as `<webhook name>/<key>`, so the webhook's name in
the ValidatingWebhookConfiguration is the prefix and only the plain keys are
written here. It refuses (drops, with a line in its own log) a key whose
`<webhook name>/<key>` is not a qualified name, and a key already set with
another value; so each key is a fixed, short qualified-name part
(alphanumerics and `-_.`, at most 63 characters), and each value a few words
an auditor can grep for.

| key | value |
|---|---|
| `verdict` | `allowed` or `denied` (the metrics' label values) |
| `why` | the rule that decided (`webhook.admission.Why`, also in the log line) |
| `problems` | how many problems the spec has, when it was validated |
| `delete` | on a DELETE: the in-use decision (`webhook.admission.deletion`) |

Every constant dict is built once; an answer copies one and adds the problem
count, the only part that varies. Measured with timeit on this shared 2-core
machine: ~0.2 µs for a valid CREATE, ~1 µs for a denial (most of it the
count's `str`), against ~100 µs of CPU per request on the webhook port; in
the pinned server under a stream of denials, 0.5 % of the event loop's samples
(py-spy, bench/README.md, "Issue 9, second pass").
"""

from __future__ import annotations

from typing import Final

from webhook.admission.decision import DELETE, Decision, Why
from webhook.admission.envelope import AdmissionRequest

VERDICT: Final = "verdict"
WHY: Final = "why"
PROBLEMS: Final = "problems"
DELETE_DECISION: Final = "delete"
KEYS: Final = (VERDICT, WHY, PROBLEMS, DELETE_DECISION)

ALLOWED: Final = "allowed"
DENIED: Final = "denied"


_BASE: Final = {
    (allowed, why): {VERDICT: ALLOWED if allowed else DENIED, WHY: why.value}
    for allowed in (True, False)
    for why in Why
}
_NOT_JUDGED: Final = _BASE[True, Why.NOT_JUDGED_OPERATION]
# The two answers of nearly every request, told apart by identity: an enum member is
# hashed by a Python-level __hash__, which as a dict key cost more than the rest.
_VALID: Final = Why.VALID
_INVALID: Final = Why.INVALID
# A valid spec has no problems, so none were omitted either.
_ALLOWED_VALID: Final = {**_BASE[True, Why.VALID], PROBLEMS: "0"}
_DENIED_INVALID: Final = _BASE[False, Why.INVALID]


def audit_annotations(request: AdmissionRequest, decision: Decision) -> dict[str, str]:
    """The annotations kube-apiserver records (prefixed with the webhook's name) for this answer."""
    why = decision.why
    if why is _VALID:
        return _ALLOWED_VALID.copy()
    verdict = decision.verdict
    if why is _INVALID and verdict is not None:
        annotations = _DENIED_INVALID.copy()
        annotations[PROBLEMS] = str(verdict.problem_count)
        return annotations
    return _rare(request, decision)


def _rare(request: AdmissionRequest, decision: Decision) -> dict[str, str]:
    """An update let through, or a request not judged: a few per thousand."""
    why = decision.why
    verdict = decision.verdict
    annotations = _BASE[decision.allowed, why].copy()
    if verdict is not None:
        annotations[PROBLEMS] = str(verdict.problem_count)
    elif why is Why.NOT_JUDGED_OPERATION and request.operation == DELETE:
        # A DELETE is always allowed; what was decided is whether the store was in use.
        annotations = {**_NOT_JUDGED, DELETE_DECISION: decision.delete or ""}
    return annotations
