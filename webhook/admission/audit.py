"""The audit trail of every answered review: `response.auditAnnotations`.

kube-apiserver records each annotation in the request's audit event as
`<webhook name>/<key>` and drops (with a line in its own log) a key that does
not make a qualified name that way, or one already set with another value; so
each key here is a fixed, short qualified-name part, and each value a few
words an auditor can grep for.
"""

from __future__ import annotations

from typing import Final

from webhook.admission.decision import Decision, Why
from webhook.admission.envelope import DELETE, AdmissionRequest

VERDICT: Final = "verdict"
WHY: Final = "why"
PROBLEMS: Final = "problems"
DELETE_DECISION: Final = "delete"
KEYS: Final = (VERDICT, WHY, PROBLEMS, DELETE_DECISION)

ALLOWED: Final = "allowed"
DENIED: Final = "denied"


def audit_annotations(request: AdmissionRequest, decision: Decision) -> dict[str, str]:
    """The annotations kube-apiserver records (prefixed with the webhook's name) for this answer."""
    annotations = {VERDICT: ALLOWED if decision.allowed else DENIED, WHY: decision.why}
    if decision.verdict is not None:
        annotations[PROBLEMS] = str(decision.verdict.problem_count)
    elif decision.why is Why.NOT_JUDGED_OPERATION and request.operation == DELETE:
        # A DELETE is always allowed; what was decided is whether the store was in use.
        annotations[DELETE_DECISION] = decision.delete or ""
    return annotations
