"""What a change of spec does to score ingestion: old spec, new spec → changes.

In `Enforce` mode the gateway rejects an undeclared score name (422) and, on
read, attributes each declared one to its source, so the change that loses data
is a valid one: a name removed or renamed while producers still send it; a name
retyped or moved reads otherwise from then on.

The specs are read as sent, valid or not (an invalid UPDATE is still told what
it would have changed): a malformed entry is skipped, a duplicated name counts
at its first place. Order inside a list is not a change; additions lose
nothing and are not reported. Items past a list's maximum are not read: such a
spec is refused as `Too many`, and reading them would cost what the object
holds rather than what the limits allow.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any, NamedTuple

from webhook.rules import api
from webhook.rules.field_path import Path

HUMAN = ""  # the source of a human score; any other source is a channel's name


class ChangeKind(enum.StrEnum):
    MODE_ENFORCED = "mode_enforced"  # Monitor → Enforce
    MODE_MONITORED = "mode_monitored"  # Enforce → Monitor
    SCORE_REMOVED = "score_removed"
    SCORE_RENAMED = "score_renamed"
    DATA_TYPE_CHANGED = "data_type_changed"
    SCORE_MOVED = "score_moved"
    CHANNEL_REMOVED = "channel_removed"
    CHANNEL_RENAMED = "channel_renamed"


class Change(NamedTuple):
    """One change and what it is about.

    `name`/`new_name` are score names, except for a channel's own change, where
    they are the channel's; `source`/`new_source` are `HUMAN` or a channel name;
    `before`/`after` are dataTypes or modes; `enforce` is whether the new spec
    is in `Enforce` mode (what the gateway then does with the names lost).
    """

    kind: ChangeKind
    enforce: bool
    name: str = ""
    new_name: str = ""
    source: str = HUMAN
    new_source: str = HUMAN
    before: str = ""
    after: str = ""


class _Score(NamedTuple):
    name: str
    data_type: str
    source: str
    path: Path  # where it is declared: <spec>.human.scores[i] or <spec>.external[j].score


class _View(NamedTuple):
    mode: str
    human: tuple[_Score, ...]
    channels: dict[str, _Score]  # channel name → its score, in order
    scores: dict[str, _Score]  # score name → first declaration


def spec_changes(old_spec: object, new_spec: object) -> tuple[Change, ...]:
    """The changes from `old_spec` to `new_spec` that affect what the gateway accepts, in order."""
    old, new = _view(old_spec), _view(new_spec)
    enforce = new.mode == api.DEFAULT_MODE
    changes: list[Change] = []
    if old.mode != new.mode:
        kind = ChangeKind.MODE_ENFORCED if enforce else ChangeKind.MODE_MONITORED
        changes.append(Change(kind, enforce, before=old.mode, after=new.mode))
    said: set[str] = set()  # old score names whose loss is already said with their channel
    followed: set[str] = set()  # ... whose new source is said by their channel's rename
    changes += _channel_changes(old, new, enforce, said, followed)
    renames = _renames(old, new)
    for score in old.scores.values():
        if score.name in said:
            continue
        moved = (
            score._replace(source=new.scores[score.name].source)
            if score.name in followed
            else score
        )
        changes += _score_changes(moved, new, renames.get(score.name), enforce)
    return tuple(changes)


def changed_fields(
    changes: Sequence[Change], new_spec: object, path: Path = api.SPEC
) -> list[Path]:
    """The field path of `new_spec`, standing at `path`, where each of `changes` shows, for a
    position (the CLI's). What is gone is shown at the list that no longer holds it.
    """
    new = _view(new_spec, path)
    return [_field(change, new, path) for change in changes]


def _field(change: Change, new: _View, path: Path) -> Path:
    now = new.scores.get(change.new_name or change.name)
    kind = change.kind
    if kind in (ChangeKind.MODE_ENFORCED, ChangeKind.MODE_MONITORED):
        return path.child("mode")
    if kind is ChangeKind.CHANNEL_RENAMED:
        return new.channels[change.new_name].path.parent.child("name")
    if kind is ChangeKind.SCORE_RENAMED and now is not None:
        return now.path.child("name")
    if kind is ChangeKind.DATA_TYPE_CHANGED and now is not None:
        return now.path.child("dataType")
    if kind is ChangeKind.SCORE_MOVED and now is not None:
        return now.path
    if change.source == HUMAN and kind is not ChangeKind.CHANNEL_REMOVED:
        return path.child("human").child("scores")
    return path.child("external")


def _channel_changes(
    old: _View, new: _View, enforce: bool, said: set[str], followed: set[str]
) -> list[Change]:
    """Channels gone: renamed (a new channel writes the same score) or removed with their score."""
    added = {score.name: channel for channel, score in new.channels.items()}
    changes: list[Change] = []
    for channel, score in old.channels.items():
        if channel in new.channels or old.scores.get(score.name) != score:
            continue
        renamed = added.get(score.name)
        if renamed is not None and renamed not in old.channels:
            followed.add(score.name)
            kind = ChangeKind.CHANNEL_RENAMED
            changes.append(Change(kind, enforce, channel, renamed, after=score.name))
        elif score.name not in new.scores:
            said.add(score.name)
            kind = ChangeKind.CHANNEL_REMOVED
            changes.append(Change(kind, enforce, channel, after=score.name))
    return changes


def _renames(old: _View, new: _View) -> dict[str, str]:
    """Old name → new name where one name left and another came in the same place.

    The same place: the same index of `human.scores`, or the same channel.
    """
    pairs = [(a.name, b.name) for a, b in zip(old.human, new.human, strict=False)]
    pairs += [(s.name, new.channels[c].name) for c, s in old.channels.items() if c in new.channels]
    return {
        gone: came
        for gone, came in pairs
        if gone not in new.scores and came not in old.scores and gone != came
    }


def _score_changes(score: _Score, new: _View, renamed: str | None, enforce: bool) -> list[Change]:
    if renamed is not None:
        kind = ChangeKind.SCORE_RENAMED
        return [
            Change(kind, enforce, score.name, renamed, score.source, new.scores[renamed].source)
        ]
    now = new.scores.get(score.name)
    if now is None:
        return [Change(ChangeKind.SCORE_REMOVED, enforce, score.name, source=score.source)]
    changes = []
    if now.source != score.source:
        kind = ChangeKind.SCORE_MOVED
        changes.append(
            Change(kind, enforce, score.name, source=score.source, new_source=now.source)
        )
    if now.data_type != score.data_type:
        kind = ChangeKind.DATA_TYPE_CHANGED
        was, now_type = score.data_type, now.data_type
        changes.append(
            Change(kind, enforce, score.name, source=now.source, before=was, after=now_type)
        )
    return changes


def _view(spec: object, path: Path = api.SPEC) -> _View:
    spec = spec if isinstance(spec, dict) else {}
    mode = spec.get("mode")
    human = spec.get("human")
    entries = human.get("scores") if isinstance(human, dict) else None
    scores_path = path.child("human").child("scores")
    declared = tuple(
        s
        for s in (
            _score(e, HUMAN, scores_path.index(i))
            for i, e in enumerate(_items(entries, api.MAX_HUMAN_SCORES))
        )
        if s is not None
    )
    external = path.child("external")
    channels: dict[str, _Score] = {}
    for index, channel in enumerate(_items(spec.get("external"), api.MAX_EXTERNAL_CHANNELS)):
        name = channel.get("name") if isinstance(channel, dict) else None
        if not isinstance(name, str) or not name or name in channels:
            continue
        score = _score(channel.get("score"), name, external.index(index).child("score"))
        if score is not None:
            channels[name] = score
    scores: dict[str, _Score] = {}
    for score in (*declared, *channels.values()):
        scores.setdefault(score.name, score)
    return _View(mode if isinstance(mode, str) else api.DEFAULT_MODE, declared, channels, scores)


def _items(value: object, limit: int) -> list[Any]:
    """The first `limit` items of a list (none of anything else)."""
    return value[:limit] if isinstance(value, list) else []


def _score(entry: object, source: str, path: Path) -> _Score | None:
    name = entry.get("name") if isinstance(entry, dict) else None
    if not isinstance(name, str) or not name or not isinstance(entry, dict):
        return None
    data_type = entry.get("dataType")
    known = data_type if isinstance(data_type, str) else api.DEFAULT_DATA_TYPE
    return _Score(name, known, source, path)
