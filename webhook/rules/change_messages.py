"""What each change of spec (`changes.py`) means for the gateway, as one short sentence: only
what the platform's gateway does (`messages.py`): 422 or relayed, and how scores read.

Said the same by the webhook (UPDATE warnings) and the CLI. A sentence names
at most `_SHOWN_NAME` characters of a name (cut with an ellipsis), so it keeps within
a warning's `MAX_WARNING_LENGTH` for the names stores carry; `with_users` then adds
who uses the store, naming as many agents as still fit.
"""

from __future__ import annotations

from typing import Final

from webhook.rules import api, inuse, messages
from webhook.rules.changes import HUMAN, Change, ChangeKind
from webhook.rules.field_errors import quote
from webhook.text import MAX_WARNING_LENGTH, cut, named

_SHOWN_NAME: Final = 32


def _name(name: str) -> str:
    return quote(cut(name, _SHOWN_NAME))


def _source(source: str) -> str:
    return "human" if source == HUMAN else f"channel {_name(source)}"


def _reads_as(source: str) -> str:
    """The attribution a score of `source` reads as: `human`, or a channel's quoted."""
    return messages.attribution(None) if source == HUMAN else _name(messages.attribution(source))


def _lost(change: Change, name: str) -> str:
    """What the gateway does from now on with scores still sent under `name`."""
    if change.enforce:
        return f"the gateway rejects {_name(name)} ({messages.REJECTED}) from now on"
    return f"{_name(name)} is relayed, read as {messages.UNATTRIBUTED}, from now on"


def change_sentence(change: Change) -> str:
    name, new_name, after = _name(change.name), _name(change.new_name), change.after
    match change.kind:
        case ChangeKind.MODE_ENFORCED:
            return (
                "mode Monitor -> Enforce: the gateway rejects undeclared score names "
                f"({messages.REJECTED}) from now on"
            )
        case ChangeKind.MODE_MONITORED:
            return (
                "mode Enforce -> Monitor: the gateway relays undeclared score names, "
                f"read as {messages.UNATTRIBUTED}"
            )
        case ChangeKind.SCORE_REMOVED:
            head = f"score {name} removed from {_source(change.source)}"
            return f"{head}: {_lost(change, change.name)}"
        case ChangeKind.SCORE_RENAMED:
            head = f"score {name} renamed to {new_name} in {_source(change.new_source)}"
            return f"{head}: {_lost(change, change.name)}"
        case ChangeKind.DATA_TYPE_CHANGED:
            head = f"score {name} dataType {change.before} -> {after}"
            return f"{head}: the gateway checks no dataType; it reads as {after} in Langfuse"
        case ChangeKind.SCORE_MOVED:
            head = (
                f"score {name} moved from {_source(change.source)} to {_source(change.new_source)}"
            )
            return f"{head}: its scores read as {_reads_as(change.new_source)} from now on"
        case ChangeKind.CHANNEL_REMOVED:
            return f"channel {name} removed with score {_name(after)}: {_lost(change, after)}"
        case ChangeKind.CHANNEL_RENAMED:
            head = f"channel {name} renamed to {new_name}"
            return f"{head}: score {_name(after)} reads as {_reads_as(change.new_name)} from now on"


def with_users(sentence: str, count: int, agents: tuple[str, ...]) -> str:
    """`sentence; used by 3 AgentDeployments: a, b and 1 more`, within MAX_WARNING_LENGTH.

    Names as many agents as fit; when not even the count fits, the sentence is
    cut (with an ellipsis) so that the count is still said.
    """
    tail = f"; used by {inuse.agents(count)}"
    fitted = _naming(sentence + tail, count, agents)
    if fitted is not None:
        return fitted
    return cut(sentence, MAX_WARNING_LENGTH - len(tail)) + tail


def in_use_headline(quoted_name: str, count: int, agents: tuple[str, ...]) -> str:
    """The first warning when agents use the store, naming as many as fit."""
    head = f"{api.KIND} {quoted_name} is in use by {inuse.agents(count)}"
    return _naming(head, count, agents) or head


def _naming(head: str, count: int, agents: tuple[str, ...]) -> str | None:
    """`head: a, b and 3 more` with as many names as fit in a warning; None if none fits."""
    for shown in range(min(len(agents), count), 0, -1):
        text = f"{head}: {named(agents[:shown], count)}"
        if len(text) <= MAX_WARNING_LENGTH:
            return text
    return None
