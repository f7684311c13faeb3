"""A denial in the shape of kube-apiserver's own validation errors.

kube-apiserver builds those with `apierrors.NewInvalid`: code 422, reason
`Invalid`, the message `Kind.group "name" is invalid: <aggregate>` (one error
alone, several as `[a, b]`) and one `details.causes[]` entry per field. With
that shape kubectl prints `The FeedbackStore "name" is invalid:` followed by
one `field: message` line per cause, exactly as for the API server's own
errors; any other shape reads `admission webhook "..." denied the request`.
"""

from __future__ import annotations

from typing import Any, Final

from webhook.rules import Verdict, messages
from webhook.rules.field_errors import quote
from webhook.rules.forms import STORE, Form
from webhook.rules.summary import fit_lines

INVALID_CODE: Final = 422
INVALID_REASON: Final = "Invalid"
# Between problems in the aggregate, as apimachinery's `[a, b]`.
SEPARATOR: Final = ", "

# Characters of problem text in one denial; the rest are counted, not listed,
# so a million-problem object still gets an answer of a few kilobytes.
MESSAGE_BUDGET: Final = 4096
_TAIL_RESERVE: Final = 40
# What the problems themselves may take; the tail says how many more there are.
PROBLEMS_BUDGET: Final = MESSAGE_BUDGET - _TAIL_RESERVE


def invalid_status(name: str, verdict: Verdict, form: Form = STORE) -> dict[str, Any]:
    """metav1.Status for a refused object of `form`'s kind, bounded whatever the number of
    problems; the count of those left out stands at the declaration's path."""
    problems = verdict.problems
    kept, _ = fit_lines([str(p) for p in problems], PROBLEMS_BUDGET, SEPARATOR)
    causes = [
        {"reason": p.type, "message": p.message, "field": p.field} for p in problems[: len(kept)]
    ]
    dropped = verdict.problem_count - len(kept)
    if dropped:
        kept.append(messages.more_problems(dropped))
        causes.append({"message": messages.more_problems(dropped), "field": str(form.path)})
    aggregate = kept[0] if len(kept) == 1 else f"[{SEPARATOR.join(kept)}]"
    return {
        "status": "Failure",
        "message": f"{form.kind}.{form.group} {quote(name)} is invalid: {aggregate}",
        "reason": INVALID_REASON,
        "details": {"name": name, "group": form.group, "kind": form.kind, "causes": causes},
        "code": INVALID_CODE,
    }
