"""The vocabulary of in-use protection, stated once for every adapter.

A store in use is protected as Kubernetes protects a PersistentVolumeClaim in
use: the status writer writes the `InUse` condition and holds the finalizer;
the webhook, the CRD's printer columns and the doctor read them.

The condition's message is written and read here, and nowhere else. Who uses a
store (a count and up to `MAX_NAMED_AGENTS` names) has no other place on the
object: `reason` is one CamelCase word, and the platform's operator, whose typed
client keeps only metav1.Condition's fields, drops any other status field on
each of its UPDATEs. So the webhook, which has no API access and sees only the
review's object, reads the users back from the message that `kubectl describe`
shows; `in_use_message` and `read_users` are the two directions of one format.
"""

import re
from collections.abc import Sequence
from typing import Final, NamedTuple

from webhook.text import counted, named, plural

# The platform's agents, which name their store in `spec.feedbackStoreRef`.
AGENT_GROUP: Final = "agents.ctxmesh.ai"
AGENT_VERSION: Final = "v1beta1"  # storage version; v1alpha1 is served too, deprecated
AGENT_KIND: Final = "AgentDeployment"
AGENT_PLURAL: Final = "agentdeployments"

# Held by the status writer on a store in use, as `kubernetes.io/pvc-protection` on a PVC.
FINALIZER: Final = "agents.ctxmesh.ai/in-use-protection"

CONDITION_TYPE: Final = "InUse"
REASON_REFERENCED: Final = "Referenced"
REASON_DEFERRED: Final = "DeletionDeferred"
REASON_NOT_REFERENCED: Final = "NotReferenced"
REASON_NOT_SERVED: Final = "AgentDeploymentsNotServed"
# Event reason when the writer lets a deferred deletion go on.
REASON_RELEASED: Final = "DeletionReleased"

# Conditions the webhook searches for `InUse` on a review's object: what is stored holds a
# handful of types, while a hostile review may carry millions of entries.
CONDITIONS_SEARCHED: Final = 32

# Agents named in the condition's message; the rest are counted. The message is
# what `kubectl describe` and the webhook's DELETE warning show.
MAX_NAMED_AGENTS: Final = 10

NOT_SERVED_MESSAGE: Final = f"no {AGENT_KIND} resource is served"
NOT_REFERENCED_MESSAGE: Final = f"no {AGENT_KIND} references it"
_DEFERRED: Final = f"deletion deferred until no {AGENT_KIND} references it; "


class Users(NamedTuple):
    """Who uses a store, as its `InUse` message says: how many, and the first ones by name."""

    total: int
    named: tuple[str, ...]


def users_of(holders: Sequence[str]) -> Users:
    """The users a message says of `holders` (sorted names): all counted, the first named."""
    return Users(len(holders), tuple(holders[:MAX_NAMED_AGENTS]))


def in_use_message(users: Users, deferred: bool) -> str:
    """The message of `InUse=True`: `in use by 2 AgentDeployments: a, b`, after a word on the
    deferred deletion when the store is being deleted."""
    clause = in_use_clause(users)
    return _DEFERRED + clause if deferred else clause


def in_use_clause(users: Users) -> str:
    """`in use by 12 AgentDeployments: a, b, ... and 2 more`: the part naming the users."""
    return f"in use by {agents(users.total)}: {named(users.named, users.total)}"


def agents(count: int) -> str:
    """`1 AgentDeployment`, `2 AgentDeployments`: how every message counts agents."""
    return counted(count, AGENT_KIND)


_USERS: Final = re.compile(
    rf"in use by (\d+) (?:{AGENT_KIND}|{plural(AGENT_KIND, 2)}): (.*?)(?: and \d+ more)?$"
)


def read_users(message: str) -> Users | None:
    """The users `in_use_message` wrote into `message`; None when it says none (hand-edited, or
    not ours)."""
    found = _USERS.search(message)
    if found is None:
        return None
    # No more names than `in_use_message` writes, whatever a review's object says.
    names = found.group(2).split(", ", MAX_NAMED_AGENTS)[:MAX_NAMED_AGENTS]
    return Users(int(found.group(1)), tuple(names))
