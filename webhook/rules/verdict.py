"""The one FeedbackStore verdict: every problem at once, each at its field path.

This is plain code over decoded JSON rather than a pydantic model on purpose:
the admission hot path, the status writer and the CLI need Kubernetes field
paths, apimachinery error types, warnings and unknown-field errors for every
problem, and a hand-written walk does that at a fraction of a model's cost
(see bench/README.md). The pydantic model in `model.py` states the same limits
declaratively for the CRD schema and as a test oracle.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from webhook.rules import api, messages
from webhook.rules.field_errors import (
    FieldWarning,
    Problem,
    duplicate,
    not_supported,
    quote,
    required,
    too_long,
    too_many,
    type_invalid,
    unknown_field,
)

_MAX_NAME_IN_WARNING = 24


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome for one object: problems (blocking) and warnings (advisory).

    `omitted` counts problems found beyond the first MAX_RECORDED_PROBLEMS,
    which are counted but not kept.
    """

    problems: tuple[Problem, ...] = ()
    warnings: tuple[FieldWarning, ...] = ()
    omitted: int = 0

    @property
    def valid(self) -> bool:
        return not self.problems

    @property
    def problem_count(self) -> int:
        return len(self.problems) + self.omitted


@dataclass(slots=True)
class _Findings:
    """Accumulates problems and warnings during one walk, bounded in memory."""

    problems: list[Problem] = field(default_factory=list)
    warnings: list[FieldWarning] = field(default_factory=list)
    omitted: int = 0

    def add(self, problem: Problem) -> None:
        if len(self.problems) < api.MAX_RECORDED_PROBLEMS:
            self.problems.append(problem)
        else:
            self.omitted += 1

    def warn(self, path: str, message: str) -> None:
        self.warnings.append(FieldWarning(path, message))

    def verdict(self) -> Verdict:
        return Verdict(tuple(self.problems), tuple(self.warnings), self.omitted)


def validate_feedbackstore(obj: object) -> Verdict:
    """Verdict for a whole FeedbackStore object (its `spec`; metadata is the API server's)."""
    if type(obj) is not dict:
        found = _Findings()
        found.add(type_invalid("", obj, "object"))
        return found.verdict()
    return validate_spec(obj.get("spec"))


def validate_spec(spec: object) -> Verdict:
    """Verdict for `spec` alone; a missing spec (None) declares no source."""
    found = _Findings()
    _check_spec(spec, found)
    return found.verdict()


def _check_spec(spec: object, found: _Findings) -> None:
    if spec is None:
        found.add(required("spec", messages.MSG_NO_SOURCE))
        return
    if type(spec) is not dict:
        found.add(type_invalid("spec", spec, "object"))
        return
    _check_unknown(spec, api.SPEC_FIELDS, "spec", found)
    _check_mode(spec.get("mode"), found)
    score_names: dict[str, str] = {}
    human_scores = _check_human(spec.get("human"), score_names, found)
    channels = _check_external(spec.get("external"), score_names, found)
    if human_scores == 0 and channels == 0:
        found.add(required("spec", messages.MSG_NO_SOURCE))


def _check_unknown(obj: dict[str, Any], known: frozenset[str], path: str, found: _Findings) -> None:
    if len(obj) <= len(known) and known.issuperset(obj):
        return
    for problem in unknown_fields(obj, known, path):
        found.add(problem)


def unknown_fields(obj: dict[str, Any], known: frozenset[str], path: str) -> list[Problem]:
    """An error per key of `obj` not in `known`, suggesting the closest known one."""
    prefix = f"{path}." if path else ""
    problems = []
    for key in obj:
        if key not in known:
            hints = difflib.get_close_matches(str(key), sorted(known), n=1)
            problems.append(unknown_field(f"{prefix}{key}", f"{prefix}{hints[0]}" if hints else ""))
    return problems


def _check_mode(mode: object, found: _Findings) -> None:
    if mode is None:
        return
    if type(mode) is not str:
        found.add(type_invalid("spec.mode", mode, "string"))
    elif mode not in api.MODES:
        found.add(not_supported("spec.mode", mode, api.MODES))
    elif mode == api.MONITOR_MODE:
        found.warn(
            "spec.mode",
            "Monitor accepts undeclared score names (counted, not rejected); use only to migrate",
        )


def _check_human(human: object, score_names: dict[str, str], found: _Findings) -> int:
    """Check `spec.human`, recording each score name's first path in `score_names`.

    Returns how many scores it declares (-1: unknown, its type was already reported).
    """
    if human is None:
        return 0
    if type(human) is not dict:
        found.add(type_invalid("spec.human", human, "object"))
        return -1
    _check_unknown(human, api.HUMAN_FIELDS, "spec.human", found)
    scores = human.get("scores")
    path = "spec.human.scores"
    if scores is None:
        found.add(required(path, "human.scores is required when human is set"))
        return 0
    if type(scores) is not list:
        found.add(type_invalid(path, scores, "array"))
        return -1
    if not scores:
        found.add(required(path, f"must have at least {api.MIN_HUMAN_SCORES} item"))
        return 0
    if len(scores) > api.MAX_HUMAN_SCORES:
        found.add(too_many(path, len(scores), api.MAX_HUMAN_SCORES))
    for index, score in enumerate(scores):
        item = f"{path}[{index}]"
        name = _check_score(score, item, found)
        if name is not None:
            _claim(score_names, name, f"{item}.name", messages.MSG_DUP_HUMAN, found)
    return len(scores)


def _check_external(channels: object, score_names: dict[str, str], found: _Findings) -> int:
    """Check `spec.external` against the human `score_names` already claimed.

    Returns how many channels it declares (-1: unknown, its type was already reported).
    """
    if channels is None:
        return 0
    path = "spec.external"
    if type(channels) is not list:
        found.add(type_invalid(path, channels, "array"))
        return -1
    if len(channels) > api.MAX_EXTERNAL_CHANNELS:
        found.add(too_many(path, len(channels), api.MAX_EXTERNAL_CHANNELS))
    human_names = set(score_names)
    channel_names: dict[str, str] = {}
    for index, channel in enumerate(channels):
        item = f"{path}[{index}]"
        if type(channel) is not dict:
            found.add(type_invalid(item, channel, "object"))
            continue
        _check_unknown(channel, api.CHANNEL_FIELDS, item, found)
        name = _check_name(channel.get("name"), item, found)
        if name is not None:
            _claim(channel_names, name, f"{item}.name", messages.MSG_DUP_CHANNEL, found)
        score = channel.get("score")
        if score is None:
            found.add(required(f"{item}.score", "the score this channel writes"))
            continue
        score_name = _check_score(score, f"{item}.score", found)
        if score_name is not None:
            first = score_names.get(score_name)
            why = (
                messages.MSG_DUP_ACROSS if score_name in human_names else messages.MSG_DUP_EXTERNAL
            )
            if first is None:
                score_names[score_name] = f"{item}.score.name"
            else:
                found.add(duplicate(f"{item}.score.name", score_name, _first_at(why, first)))
    return len(channels)


def _claim(seen: dict[str, str], name: str, path: str, why: str, found: _Findings) -> None:
    first = seen.get(name)
    if first is None:
        seen[name] = path
    else:
        found.add(duplicate(path, name, _first_at(why, first)))


def _first_at(why: str, first: str) -> str:
    return f"{why} (first declared at {first})"


def _check_score(score: object, path: str, found: _Findings) -> str | None:
    """Check one ScoreDecl; return its name when it is a usable string."""
    if type(score) is not dict:
        found.add(type_invalid(path, score, "object"))
        return None
    _check_unknown(score, api.SCORE_FIELDS, path, found)
    name = _check_name(score.get("name"), path, found)
    data_type = score.get("dataType")
    if data_type is None:
        data_type = api.DEFAULT_DATA_TYPE
    elif type(data_type) is not str:
        found.add(type_invalid(f"{path}.dataType", data_type, "string"))
        data_type = None
    elif data_type not in api.DATA_TYPES:
        found.add(not_supported(f"{path}.dataType", data_type, api.DATA_TYPES))
        data_type = None
    categories = score.get("categories")
    if categories is not None:
        _check_categories(categories, f"{path}.categories", found)
    if data_type == api.CATEGORICAL and not categories:
        found.warn(path, "CATEGORICAL score declares no categories, so any label is accepted")
    elif data_type is not None and data_type != api.CATEGORICAL and categories:
        found.warn(f"{path}.categories", f"ignored: dataType is {data_type}, not CATEGORICAL")
    return name


def _check_name(name: object, owner: str, found: _Findings) -> str | None:
    """Check `<owner>.name`; the path is only built when there is something to say."""
    if type(name) is str and 0 < len(name) <= api.MAX_NAME_LENGTH and name == name.strip():
        return name
    path = f"{owner}.name"
    if name is None:
        found.add(required(path))
        return None
    if type(name) is not str:
        found.add(type_invalid(path, name, "string"))
        return None
    if not name:
        found.add(required(path))
        return None
    if len(name) > api.MAX_NAME_LENGTH:
        found.add(too_long(path, api.MAX_NAME_LENGTH))
        return None
    if name != name.strip():
        shown = name if len(name) <= _MAX_NAME_IN_WARNING else name[:_MAX_NAME_IN_WARNING] + "..."
        found.warn(path, f"{quote(shown)} has leading/trailing whitespace; the gateway trims names")
    return name


def _check_categories(categories: object, path: str, found: _Findings) -> None:
    if type(categories) is not list:
        found.add(type_invalid(path, categories, "array"))
        return
    if len(categories) > api.MAX_CATEGORIES:
        found.add(too_many(path, len(categories), api.MAX_CATEGORIES))
    # Fast path, decided in C: join() refuses anything but strings, a set finds repeats.
    try:
        "".join(categories)
    except TypeError:
        pass
    else:
        if len(set(categories)) == len(categories):
            return
    seen: set[str] = set()
    for index, category in enumerate(categories):
        if type(category) is not str:
            found.add(type_invalid(f"{path}[{index}]", category, "string"))
        elif category in seen:
            found.add(duplicate(f"{path}[{index}]", category))
        else:
            seen.add(category)


def problem_lines(problems: Iterable[Problem]) -> list[str]:
    """`field: message` for each problem, the form every adapter prints."""
    return [str(p) for p in problems]
