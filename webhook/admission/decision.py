"""The operation rules: which requests are judged by the verdict, and which pass anyway.

Only a CREATE, or an UPDATE that changes `spec` of a live object, can be
refused. Everything else is allowed on purpose: an object admitted before the
webhook existed must still be relabelled, have its finalizers removed and be
deleted (stuck finalizers are the classic outage of validating webhooks), and a
webhook configuration that matches too much must not break other resources.
"""

from __future__ import annotations

import enum
from typing import Final, NamedTuple

from webhook import replies
from webhook.admission.change_warnings import change_warnings
from webhook.admission.decode import BadReviewError, BadReviewReason
from webhook.admission.deletion import delete_notice
from webhook.admission.envelope import AdmissionRequest, GroupVersionResource
from webhook.admission.warnings import bounded, shorten
from webhook.kube.objects import deletion_in_progress
from webhook.rules import Verdict, api, validate_feedbackstore
from webhook.rules.field_errors import quote
from webhook.rules.messages import more_problems

CREATE: Final = "CREATE"
UPDATE: Final = "UPDATE"
DELETE: Final = "DELETE"
CONNECT: Final = "CONNECT"

# Problems repeated as warnings when an invalid spec is let through.
_PROBLEMS_IN_WARNINGS: Final = 3
_SHOWN_IDENTIFIER: Final = 48


class Why(enum.StrEnum):
    """The rule that decided; logged, and the reason an allowed request was not judged."""

    VALID = "valid"
    INVALID = "invalid"
    UNCHANGED_SPEC = "unchanged_spec"
    TERMINATING = "terminating"
    NOT_JUDGED_OPERATION = "not_judged_operation"
    UNKNOWN_OPERATION = "unknown_operation"
    SUBRESOURCE = "subresource"
    FOREIGN_RESOURCE = "foreign_resource"


class Decision(NamedTuple):
    """Allowed or not, why, the verdict when one was computed, and the warnings to send.

    `delete` is the in-use decision on a DELETE (`deletion`), for the audit.

    A named tuple: immutable, and cheap to build once per request.
    """

    allowed: bool
    why: Why
    verdict: Verdict | None = None
    warnings: tuple[str, ...] = ()
    delete: str | None = None


def decide(request: AdmissionRequest) -> Decision:
    """Apply SPEC §3's operation rules to one admission request."""
    resource = request.resource
    if resource.get("group") != api.GROUP or resource.get("resource") != api.PLURAL:
        return Decision(True, Why.FOREIGN_RESOURCE, warnings=(_foreign_warning(resource),))
    if request.sub_resource:
        return Decision(True, Why.SUBRESOURCE)
    operation = request.operation
    if operation == DELETE:
        notice = delete_notice(request.name, request.old_object)
        return Decision(True, Why.NOT_JUDGED_OPERATION, None, notice.warnings, notice.audit)
    if operation == CONNECT:
        return Decision(True, Why.NOT_JUDGED_OPERATION)
    if operation not in (CREATE, UPDATE):
        warning = replies.warn_unchecked_operation(quote(shorten(operation, _SHOWN_IDENTIFIER)))
        return Decision(True, Why.UNKNOWN_OPERATION, warnings=(warning,))
    obj = request.object
    if obj is None:
        raise BadReviewError(BadReviewReason.NO_OBJECT, replies.object_required(operation))
    verdict = validate_feedbackstore(obj)
    if operation == UPDATE:
        exemption = _update_exemption(obj, request.old_object)
        if exemption is not None:
            return Decision(True, exemption, verdict, _exemption_warnings(verdict, exemption))
    # An UPDATE judged here changes the spec of a live object: say what it does to ingestion.
    changed = change_warnings(request.name, obj, request.old_object) if operation == UPDATE else []
    field_warnings = (
        bounded([*changed, *map(str, verdict.warnings)]) if changed or verdict.warnings else ()
    )
    if verdict.valid:
        return Decision(True, Why.VALID, verdict, field_warnings)
    return Decision(False, Why.INVALID, verdict, field_warnings)


def _update_exemption(new: object, old: object) -> Why | None:
    """Why an UPDATE passes whatever its spec says, or None when it must be judged."""
    if deletion_in_progress(new) or deletion_in_progress(old):
        return Why.TERMINATING
    if type(new) is dict and type(old) is dict:
        try:
            if new.get("spec") == old.get("spec"):
                return Why.UNCHANGED_SPEC
        except RecursionError:
            # Two specs nested ~1000 levels deep cannot be compared; judge the new one.
            return None
    return None


_EXEMPTION_REASONS: Final = {
    Why.UNCHANGED_SPEC: replies.EXEMPT_UNCHANGED_SPEC,
    Why.TERMINATING: replies.EXEMPT_TERMINATING,
}


def _exemption_warnings(verdict: Verdict, why: Why) -> tuple[str, ...]:
    """Nothing for a valid spec; for an invalid one, say so and show its first problems."""
    if verdict.valid:
        return ()
    count = verdict.problem_count
    headline = replies.warn_invalid_but_allowed(_EXEMPTION_REASONS[why], count)
    shown = [str(p) for p in verdict.problems[:_PROBLEMS_IN_WARNINGS]]
    if count > len(shown):
        shown.append(more_problems(count - len(shown)))
    return bounded([headline, *shown])


def _foreign_warning(resource: GroupVersionResource) -> str:
    target = f"{resource.get('group', '')}/{resource.get('resource', '')}"
    return shorten(replies.warn_foreign_resource(quote(shorten(target, _SHOWN_IDENTIFIER))))
