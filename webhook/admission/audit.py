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


def audit_annotations(request: AdmissionRequest, decision: Decision) -> dict[str, str]:
    """The annotations kube-apiserver records (prefixed with the webhook's name) for this answer."""
    annotations = {VERDICT: ALLOWED if decision.allowed else DENIED, WHY: decision.why.value}
    if decision.verdict is not None:
        annotations[PROBLEMS] = str(decision.verdict.problem_count)
    elif decision.why is Why.NOT_JUDGED_OPERATION and request.operation == DELETE:
        # A DELETE is always allowed; what was decided is whether the store was in use.
        annotations[DELETE_DECISION] = decision.delete or ""
    return annotations
