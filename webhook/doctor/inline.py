"""AgentDeployments whose inline declaration (`spec.feedback`) is invalid: created before
the webhook, or while its registration (`failurePolicy: Ignore`) let them through. The platform
owns an agent's status, so there is no condition to read: the doctor judges each declaration
with the same rules, and names the invalid ones with their first problem."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from webhook.doctor.result import CheckResult, ok, refused, warn
from webhook.doctor.snapshot import FetchedList, Unreadable
from webhook.kube.objects import metadata_of
from webhook.rules import Verdict, inuse
from webhook.status.inline import inline_verdict
from webhook.text import counted, named, plural

NAME: Final = "inline-declarations"
SHOWN: Final = 5


def check_inline(agents: FetchedList, scope: str) -> CheckResult:
    if isinstance(agents, Unreadable):
        doing = f"list {plural(inuse.AGENT_KIND, 2)}"
        return refused(NAME, doing, agents, f"list on {inuse.AGENT_PLURAL}")
    if agents is None:  # a cluster without the platform's agents: nothing can be declared
        return ok(NAME, f"{inuse.NOT_SERVED_MESSAGE}: nothing declared inline")
    judged = [(agent, verdict) for agent in agents if (verdict := inline_verdict(agent))]
    invalid = [(agent, verdict) for agent, verdict in judged if not verdict.valid]
    total = f"{counted(len(judged), inuse.AGENT_KIND)} with spec.feedback {scope}"
    if not invalid:
        return ok(NAME, f"{total}, every declaration valid")
    return warn(
        NAME,
        f"{total}; {len(invalid)} invalid: {_few(invalid)}",
        "fix spec.feedback in each (they got in before the webhook, or past it); every problem: "
        f"kubectl describe {inuse.AGENT_PLURAL} NAME -n NS (the status writer's Event), or "
        "feedbackstore-webhook validate on the manifest",
    )


def _few(invalid: Sequence[tuple[dict[str, Any], Verdict]]) -> str:
    labels = []
    for agent, verdict in invalid[:SHOWN]:
        metadata = metadata_of(agent)
        first = verdict.problems[0] if verdict.problems else None
        labels.append(f"{metadata.get('namespace')}/{metadata.get('name')} ({first})")
    return named(labels, len(invalid))
