"""A denial in the shape of kube-apiserver's own validation errors.

kube-apiserver builds those with `apierrors.NewInvalid`: code 422, reason
`Invalid`, the message `Kind.group "name" is invalid: <aggregate>` (one error
alone, several as `[a, b]`) and one `details.causes[]` entry per field. With
that shape kubectl prints `The FeedbackStore "name" is invalid:` followed by
one `field: message` line per cause, exactly as for the API server's own
errors; any other shape reads `admission webhook "..." denied the request`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from webhook.rules import Problem, Verdict, api, messages
from webhook.rules.field_errors import quote

INVALID_CODE: Final = 422
INVALID_REASON: Final = "Invalid"
QUALIFIED_KIND: Final = f"{api.KIND}.{api.GROUP}"

# Characters of problem text in one denial; the rest are counted, not listed,
# so a million-problem object still gets an answer of a few kilobytes.
MESSAGE_BUDGET: Final = 4096
_TAIL_RESERVE: Final = 40
_SEPARATOR_LENGTH: Final = len(", ")


def invalid_status(name: str, verdict: Verdict) -> dict[str, Any]:
    """metav1.Status for a refused object, bounded whatever the number of problems."""
    kept, causes = _listed(verdict.problems)
    dropped = verdict.problem_count - len(kept)
    if dropped:
        kept.append(messages.more_problems(dropped))
        causes.append({"message": messages.more_problems(dropped), "field": "spec"})
    aggregate = kept[0] if len(kept) == 1 else f"[{', '.join(kept)}]"
    return {
        "status": "Failure",
        "message": f"{QUALIFIED_KIND} {quote(name)} is invalid: {aggregate}",
        "reason": INVALID_REASON,
        "details": {"name": name, "group": api.GROUP, "kind": api.KIND, "causes": causes},
        "code": INVALID_CODE,
    }


def _listed(problems: Sequence[Problem]) -> tuple[list[str], list[dict[str, str]]]:
    """`field: message` lines and causes of the leading problems that fit MESSAGE_BUDGET.

    The rule of `webhook.rules.summary.fit_lines` (the lines joined by ", " fit;
    at least one, cut if need be), in one pass that stops at the budget: each
    message is made once, and none for the thousands of problems past it.
    """
    budget = MESSAGE_BUDGET - _TAIL_RESERVE
    lines: list[str] = []
    causes: list[dict[str, str]] = []
    used = 0
    for problem in problems:
        message = problem.message
        line = f"{problem.field}: {message}"
        used += len(line) + (_SEPARATOR_LENGTH if lines else 0)
        if used > budget:
            if lines:
                break
            line = line[: max(budget - 3, 0)] + "..."
        lines.append(line)
        causes.append({"reason": problem.type, "message": message, "field": problem.field})
        if used > budget:
            break
    return lines, causes
