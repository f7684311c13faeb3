"""What a DELETE of a FeedbackStore is told: whether agents still use it, and what happens next.

The webhook keeps no API access, so it reads the `InUse` condition the status
writer keeps on the object it is sent (`request.oldObject` on DELETE), and our
finalizer there, which is what actually holds the object. The answer
is always "allowed": the registration entry that sends DELETE has
`failurePolicy: Ignore`, and a warning must never block a delete.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from webhook import replies
from webhook.admission.warnings import bounded
from webhook.kube.objects import CONDITION_TRUE, find_condition, has_finalizer
from webhook.rules import inuse
from webhook.rules.field_errors import quote

# The `delete` audit annotation (the DELETE itself is always allowed): the in-use
# decision, a few words to grep for, as short as the other audit values.
DEFERRED: Final = "in use: deletion deferred"
UNPROTECTED: Final = "in use: not yet protected"
NOT_IN_USE: Final = "not in use"
UNKNOWN: Final = "use unknown: no InUse"


class DeleteNotice(NamedTuple):
    audit: str
    warnings: tuple[str, ...] = ()


def delete_notice(name: str, old_object: object) -> DeleteNotice:
    """The audit value and the warnings for deleting `old_object` (what the store was)."""
    condition = find_condition(old_object, inuse.CONDITION_TYPE, within=inuse.CONDITIONS_SEARCHED)
    if condition is None:
        return DeleteNotice(UNKNOWN)
    if condition.get("status") != CONDITION_TRUE:
        return DeleteNotice(NOT_IN_USE)
    message = condition.get("message")
    users = inuse.read_users(message) if isinstance(message, str) else None
    shown = inuse.in_use_clause(users) if users is not None else replies.IN_USE
    headline = replies.delete_in_use(quote(name), shown)
    if has_finalizer(old_object, inuse.FINALIZER):
        return DeleteNotice(DEFERRED, bounded([headline, replies.DELETE_DEFERRED]))
    return DeleteNotice(UNPROTECTED, bounded([headline, replies.DELETE_UNPROTECTED]))
