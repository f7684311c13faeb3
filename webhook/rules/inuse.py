"""The vocabulary of in-use protection (SPEC §7), stated once for every adapter.

Identity, not behaviour, like `api`: the status writer writes the `InUse`
condition and holds the finalizer; the webhook, the CRD's printer columns and
the doctor read them; both sides of the condition's message share one phrase.
"""

import re
from collections.abc import Sequence
from typing import Final

# The platform's agents, which name their store in `spec.feedbackStoreRef`.
AGENT_GROUP: Final = "agents.ctxmesh.ai"
AGENT_VERSION: Final = "v1beta1"  # storage version; v1alpha1 is served too, deprecated
AGENT_KIND: Final = "AgentDeployment"
AGENT_PLURAL: Final = "agentdeployments"
AGENT_KINDS: Final = "AgentDeployments"  # as written in messages

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


def users_phrase(holders: Sequence[str], limit: int = MAX_NAMED_AGENTS) -> str:
    """`2 AgentDeployments: a, b`, naming at most `limit` and counting the rest.

    The status writer writes it into `InUse`; the webhook, which has no API
    access, reads it back (`read_users`) to say who a change affects.
    """
    rest = f" and {len(holders) - limit} more" if len(holders) > limit else ""
    return f"{agents(len(holders))}: {', '.join(holders[:limit])}{rest}"


def agents(count: int) -> str:
    """`1 AgentDeployment`, `2 AgentDeployments`: how every message counts agents."""
    return f"{count} {AGENT_KIND if count == 1 else AGENT_KINDS}"


_USERS: Final = re.compile(
    rf"in use by (\d+) (?:{AGENT_KIND}|{AGENT_KINDS}): (.*?)(?: and \d+ more)?$"
)


def read_users(message: str) -> tuple[int, tuple[str, ...]] | None:
    """(how many, those named) from a message ending in `in use by <users_phrase>`."""
    found = _USERS.search(message)
    if found is None:
        return None
    # No more names than `users_phrase` writes, whatever a review's object says.
    named = found.group(2).split(", ", MAX_NAMED_AGENTS)[:MAX_NAMED_AGENTS]
    return int(found.group(1)), tuple(named)
