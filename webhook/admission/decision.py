"""The operation rules: which requests are judged by the verdict, and which pass anyway.

Two forms carry a declaration (`forms`): a FeedbackStore's `spec`, and an
AgentDeployment's `spec.feedback` (the platform's inline form); the same rules judge both. Only a
CREATE, or an UPDATE that changes the declaration of a live object, can be
refused; an agent without `spec.feedback` declares nothing and passes.
Everything else is allowed on purpose: an object admitted before the webhook
existed must still be relabelled, have its finalizers removed and be deleted
(stuck finalizers are the classic outage of validating webhooks), and a
webhook configuration that matches too much must not break other resources.
"""

from __future__ import annotations

import enum
from typing import Final, NamedTuple

from webhook import replies
from webhook.admission.change_warnings import change_warnings
from webhook.admission.decode import BadReviewError, BadReviewReason
from webhook.admission.deletion import delete_notice
from webhook.admission.envelope import (
    CONNECT,
    CREATE,
    DELETE,
    UPDATE,
    AdmissionRequest,
    GroupVersionResource,
)
from webhook.admission.warnings import bounded
from webhook.kube.objects import deletion_in_progress
from webhook.rules import Verdict
from webhook.rules.field_errors import quote
from webhook.rules.forms import INLINE, STORE, Form
from webhook.rules.messages import more_problems
from webhook.text import MAX_WARNING_LENGTH, cut

# Problems repeated as warnings when an invalid spec is let through.
_PROBLEMS_IN_WARNINGS: Final = 3
_SHOWN_IDENTIFIER: Final = 48


class Why(enum.StrEnum):
    """The rule that decided; logged, and the reason an allowed request was not judged."""

    VALID = "valid"
    INVALID = "invalid"
    UNCHANGED_SPEC = "unchanged_spec"
    NO_DECLARATION = "no_declaration"  # an AgentDeployment without spec.feedback
    TERMINATING = "terminating"
    NOT_JUDGED_OPERATION = "not_judged_operation"
    UNKNOWN_OPERATION = "unknown_operation"
    SUBRESOURCE = "subresource"
    FOREIGN_RESOURCE = "foreign_resource"


# The rules that let an UPDATE through whatever its declaration says (`_update_exemption`): an
# invalid declaration passes with a warning, and is worth a log line.
EXEMPTIONS: Final = frozenset({Why.UNCHANGED_SPEC, Why.TERMINATING})


class Decision(NamedTuple):
    """Allowed or not, why, the verdict when one was computed, and the warnings to send.

    `delete` is the in-use decision on a DELETE (`deletion`), for the audit; `form` is
    where the judged declaration stands (the denial names its kind).

    A named tuple: immutable, and cheap to build once per request.
    """

    allowed: bool
    why: Why
    verdict: Verdict | None = None
    warnings: tuple[str, ...] = ()
    delete: str | None = None
    form: Form = STORE


# The forms judged, by (group, plural) of the request's resource.
_FORMS: Final = {(STORE.group, STORE.plural): STORE, (INLINE.group, INLINE.plural): INLINE}
_JUDGED: Final = f"a {' or '.join(form.kind for form in _FORMS.values())}"


def decide(request: AdmissionRequest) -> Decision:
    """Apply the operation rules above to one admission request."""
    resource = request.resource
    form = _FORMS.get((resource.get("group", ""), resource.get("resource", "")))
    if form is None:
        return Decision(True, Why.FOREIGN_RESOURCE, warnings=(_foreign_warning(resource),))
    if request.sub_resource:
        return Decision(True, Why.SUBRESOURCE, form=form)
    operation = request.operation
    if operation == DELETE and form is INLINE:
        return Decision(True, Why.NOT_JUDGED_OPERATION, form=form)
    if operation == DELETE:
        notice = delete_notice(request.name, request.old_object)
        return Decision(True, Why.NOT_JUDGED_OPERATION, None, notice.warnings, notice.audit)
    if operation == CONNECT:
        return Decision(True, Why.NOT_JUDGED_OPERATION, form=form)
    if operation not in (CREATE, UPDATE):
        warning = replies.warn_unchecked_operation(quote(cut(operation, _SHOWN_IDENTIFIER)))
        return Decision(True, Why.UNKNOWN_OPERATION, warnings=(warning,), form=form)
    obj = request.object
    if obj is None:
        raise BadReviewError(BadReviewReason.NO_OBJECT, replies.object_required(operation))
    if form is INLINE and form.declaration(obj) is None:
        return Decision(True, Why.NO_DECLARATION, form=form)
    verdict = form.verdict(obj)
    if operation == UPDATE:
        exemption = _update_exemption(form, obj, request.old_object)
        if exemption is not None:
            warned = _exemption_warnings(verdict, exemption, form)
            return Decision(True, exemption, verdict, warned, form=form)
    # An UPDATE judged here changes the declaration of a live object: say what it does to
    # ingestion.
    changed = (
        change_warnings(request.name, obj, request.old_object, form) if operation == UPDATE else []
    )
    field_warnings = (
        bounded([*changed, *map(str, verdict.warnings)]) if changed or verdict.warnings else ()
    )
    if verdict.valid:
        return Decision(True, Why.VALID, verdict, field_warnings, form=form)
    return Decision(False, Why.INVALID, verdict, field_warnings, form=form)


def _update_exemption(form: Form, new: object, old: object) -> Why | None:
    """Why an UPDATE passes whatever its declaration says, or None when it must be judged."""
    if deletion_in_progress(new) or deletion_in_progress(old):
        return Why.TERMINATING
    if type(new) is dict and type(old) is dict:
        try:
            if form.declaration(new) == form.declaration(old):
                return Why.UNCHANGED_SPEC
        except RecursionError:
            # Two specs nested ~1000 levels deep cannot be compared; judge the new one.
            return None
    return None


def _exemption_warnings(verdict: Verdict, why: Why, form: Form) -> tuple[str, ...]:
    """Nothing for a valid declaration; for an invalid one, say so and show its first problems."""
    if verdict.valid:
        return ()
    count = verdict.problem_count
    reason = (
        replies.exempt_unchanged(str(form.path))
        if why is Why.UNCHANGED_SPEC
        else (replies.EXEMPT_TERMINATING)
    )
    headline = replies.warn_invalid_but_allowed(reason, count, str(form.path))
    shown = [str(p) for p in verdict.problems[:_PROBLEMS_IN_WARNINGS]]
    if count > len(shown):
        shown.append(more_problems(count - len(shown)))
    return bounded([headline, *shown])


def _foreign_warning(resource: GroupVersionResource) -> str:
    target = f"{resource.get('group', '')}/{resource.get('resource', '')}"
    quoted = quote(cut(target, _SHOWN_IDENTIFIER))
    return cut(replies.warn_foreign_resource(quoted, _JUDGED), MAX_WARNING_LENGTH)
