"""The change-impact warnings of an UPDATE: what the new spec does to ingestion.

Said for every UPDATE `decide` judges, valid or not, and never a denial, of a
store's `spec` or an agent's `spec.feedback` alike (`forms`). Who uses a store
is read from the `InUse` condition on `oldObject` (the webhook has no API
access; `status` is a subresource, so an UPDATE carries the same).
"""

from __future__ import annotations

from webhook.kube.objects import CONDITION_TRUE, find_condition
from webhook.rules import inuse
from webhook.rules.change_messages import change_sentence, in_use_headline, with_users
from webhook.rules.changes import spec_changes
from webhook.rules.field_errors import quote
from webhook.rules.forms import STORE, Form


def change_warnings(name: str, new: object, old: object, form: Form = STORE) -> list[str]:
    """One sentence per change from `old`'s declaration to `new`'s; when agents use the store,
    a headline naming them first, and each sentence saying how many (naming those that fit).
    An agent's own declaration has no other users."""
    changes = spec_changes(form.declaration(old), form.declaration(new))
    if not changes:
        return []
    sentences = [change_sentence(change) for change in changes]
    users = _users(old) if form is STORE else None
    if users is None:
        return sentences
    count, agents = users
    headline = in_use_headline(quote(name), count, agents)
    return [headline, *(with_users(sentence, count, agents) for sentence in sentences)]


def _users(obj: object) -> inuse.Users | None:
    """How many agents use the store and the first named, when its `InUse` says so."""
    condition = find_condition(obj, inuse.CONDITION_TYPE, within=inuse.CONDITIONS_SEARCHED)
    message = condition.get("message") if condition is not None else None
    if condition is None or condition.get("status") != CONDITION_TRUE:
        return None
    return inuse.read_users(message) if isinstance(message, str) else None
