"""What each change of spec (`changes.py`) means for the gateway, as one short sentence.

Said the same by the webhook (UPDATE warnings) and the CLI. A sentence names
at most `_SHOWN_NAME` characters of a name (cut with "..."), so it keeps within
SPEC §3's 120 characters for the names stores carry; `with_users` then adds
who uses the store, naming as many agents as still fit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from webhook.rules import api, inuse
from webhook.rules.changes import HUMAN, Change, ChangeKind
from webhook.rules.field_errors import quote

_SHOWN_NAME: Final = 32
_ROOM: Final = 120


def _name(name: str) -> str:
    return quote(name if len(name) <= _SHOWN_NAME else name[: _SHOWN_NAME - 3] + "...")


def _source(source: str) -> str:
    return "human" if source == HUMAN else f"channel {_name(source)}"


def _lost(change: Change, name: str) -> str:
    """What the gateway does from now on with scores still sent under `name`."""
    if change.enforce:
        return f"the gateway rejects {_name(name)} from now on"
    return f"{_name(name)} is counted as undeclared from now on"


def _mode_enforced(change: Change) -> str:
    return "mode Monitor -> Enforce: the gateway rejects undeclared score names from now on"


def _mode_monitored(change: Change) -> str:
    return "mode Enforce -> Monitor: the gateway accepts undeclared score names, only counting them"


def _removed(change: Change) -> str:
    head = f"score {_name(change.name)} removed from {_source(change.source)}"
    return f"{head}: {_lost(change, change.name)}"


def _renamed(change: Change) -> str:
    head = f"score {_name(change.name)} renamed to {_name(change.new_name)}"
    return f"{head} in {_source(change.new_source)}: {_lost(change, change.name)}"


def _data_type(change: Change) -> str:
    head = f"score {_name(change.name)} dataType {change.before} -> {change.after}"
    return f"{head}: {change.before} values sent for it no longer match"


def _moved(change: Change) -> str:
    head = f"score {_name(change.name)} moved from {_source(change.source)}"
    return f"{head} to {_source(change.new_source)}: its scores are attributed there from now on"


def _channel_removed(change: Change) -> str:
    head = f"channel {_name(change.name)} removed with score {_name(change.after)}"
    return f"{head}: {_lost(change, change.after)}"


def _channel_renamed(change: Change) -> str:
    head = f"channel {_name(change.name)} renamed to {_name(change.new_name)}"
    return f"{head}: score {_name(change.after)} is attributed to the new name from now on"


_SENTENCES: Final[dict[ChangeKind, Callable[[Change], str]]] = {
    ChangeKind.MODE_ENFORCED: _mode_enforced,
    ChangeKind.MODE_MONITORED: _mode_monitored,
    ChangeKind.SCORE_REMOVED: _removed,
    ChangeKind.SCORE_RENAMED: _renamed,
    ChangeKind.DATA_TYPE_CHANGED: _data_type,
    ChangeKind.SCORE_MOVED: _moved,
    ChangeKind.CHANNEL_REMOVED: _channel_removed,
    ChangeKind.CHANNEL_RENAMED: _channel_renamed,
}


def change_sentence(change: Change) -> str:
    return _SENTENCES[change.kind](change)


def with_users(sentence: str, count: int, agents: tuple[str, ...]) -> str:
    """`sentence; used by 3 AgentDeployments: a, b and 1 more`, within 120 characters.

    Names as many agents as fit; when not even the count fits, the sentence is
    cut (with "...") so that the count is still said.
    """
    tail = f"; used by {_agents(count)}"
    fitted = _naming(sentence + tail, count, agents)
    if fitted is not None:
        return fitted
    if len(sentence) + len(tail) <= _ROOM:
        return sentence + tail
    return sentence[: _ROOM - len(tail) - 3] + "..." + tail


def in_use_headline(quoted_name: str, count: int, agents: tuple[str, ...]) -> str:
    """The first warning when agents use the store, naming as many as fit."""
    head = f"{api.KIND} {quoted_name} is in use by {_agents(count)}"
    return _naming(head, count, agents) or head


def _agents(count: int) -> str:
    return f"{count} {inuse.AGENT_KIND if count == 1 else inuse.AGENT_KINDS}"


def _naming(head: str, count: int, agents: tuple[str, ...]) -> str | None:
    """`head: a, b and 3 more` with as many names as fit in 120; None if none fits."""
    for shown in range(min(len(agents), count), 0, -1):
        rest = count - shown
        text = f"{head}: {', '.join(agents[:shown])}" + (f" and {rest} more" if rest else "")
        if len(text) <= _ROOM:
            return text
    return None
