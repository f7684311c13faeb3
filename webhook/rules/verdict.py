"""The one FeedbackStore verdict: every problem at once, each at its field path.

Plain code over decoded JSON rather than a pydantic model on purpose: every
adapter needs Kubernetes field paths, apimachinery error types, warnings and
unknown-field errors for every problem, which a hand-written walk gives at a
fraction of a model's cost (bench/rules/bench_verdict.py). `model.py` states the same
limits declaratively, for the CRD schema and as a test oracle.

Each check is a generator: it yields its findings in the order a reader meets
them in the object, and returns what its caller needs next (None when that is
unknown because the part had the wrong type). `verdict_of` keeps only the first
findings and counts the rest, so a hostile object costs counting, not memory.

Work is bounded by the API's limits, not by the object: a list longer than its
maximum is `Too many` (with its length) and only its first maximum items are
judged, and an object's unknown fields past the first few are counted in C,
not named. So whatever a review holds within the body limit, judging it costs
at most what a store at the limits costs (bench/rules/long_lists.py).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

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
from webhook.rules.field_path import Path, Step
from webhook.rules.model import CHANNEL_FIELDS, HUMAN_FIELDS, SCORE_FIELDS, SPEC_FIELDS
from webhook.text import ELLIPSIS, cut

# A whitespace warning names the name's first 15 characters and an ellipsis: with the longest
# path, the warning stays within MAX_WARNING_LENGTH.
_NAME_IN_WARNING = 15 + len(ELLIPSIS)
# Enough of an unknown key to find its `did you mean`: difflib's 0.6 cutoff needs a key at
# most 2.4 times as long as the known name, and the longest is 10 characters.
_KEY_MATCHED = 32


@dataclass(frozen=True, slots=True)
class Unjudged:
    """Problems known to exist, counted but not built (an object's unknown fields past the
    ones named)."""

    count: int


Finding = Problem | FieldWarning | Unjudged


class Verdict(NamedTuple):
    """The outcome for one object: problems (blocking) and warnings (advisory).

    `omitted` counts problems found beyond the first MAX_RECORDED_PROBLEMS, and
    unknown fields past the ones named: counted but not kept. A named tuple, as `Decision` is.
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


def validate_feedbackstore(obj: object) -> Verdict:
    """Verdict for a whole FeedbackStore object (its `spec`; metadata is the API server's)."""
    if type(obj) is not dict:
        return verdict_of((type_invalid(Path(), obj, "object"),))
    return validate_spec(obj.get("spec"))


def validate_spec(spec: object, path: Path = api.SPEC) -> Verdict:
    """Verdict for a FeedbackStore spec alone, its problems at paths under `path` (where it
    stands: `spec` in a FeedbackStore, `spec.feedback` in an AgentDeployment); a
    missing spec (None) declares no source."""
    return verdict_of(spec_findings(spec, path))


def verdict_of(findings: Iterable[Finding]) -> Verdict:
    """The verdict of findings in the order they were found: the first ones kept, the rest
    counted (a check's findings may be chained after others', as the CLI's manifest's are)."""
    problems: list[Problem] = []
    warnings: list[FieldWarning] = []
    omitted = 0
    for finding in findings:
        if isinstance(finding, FieldWarning):
            warnings.append(finding)  # a few per judged item: bounded by the walk
        elif isinstance(finding, Unjudged):
            omitted += finding.count
        elif len(problems) < api.MAX_RECORDED_PROBLEMS:
            problems.append(finding)
        else:
            omitted += 1
    return Verdict(tuple(problems), tuple(warnings), omitted)


def spec_findings(spec: object, path: Path = api.SPEC) -> Iterator[Finding]:
    """What there is to say about a spec at `path`, in the order a reader meets it."""
    if spec is None:
        yield required(path, messages.MSG_NO_SOURCE)
        return
    if type(spec) is not dict:
        yield type_invalid(path, spec, "object")
        return
    yield from unknown_fields(spec, SPEC_FIELDS, path)
    yield from _mode(spec.get("mode"), path)
    scores, human_names = yield from _human(spec.get("human"), path)
    channels = yield from _external(spec.get("external"), human_names, path)
    if scores == 0 and channels == 0:
        yield required(path, messages.MSG_NO_SOURCE)


def unknown_fields(
    obj: dict[Any, Any], known: frozenset[str], owner: Path, step: Step | None = None
) -> Iterator[Finding]:
    """An error per key of `obj` (at `owner`, or at its `step`) not in `known`, suggesting the
    closest known one; past the first MAX_UNKNOWN_FIELDS_NAMED, the rest only counted."""
    # Asked in C without building the set the count builds: most objects have no unknown
    # field, and the count's set cost a maximal review 188k instructions (bench/README.md).
    if known.issuperset(obj):  # stops at the first unknown key
        return
    unknown = len(obj) - len(obj.keys() & known)  # in C, whatever the number of keys
    path = owner if step is None else owner.at(step)
    named = 0
    for key in obj:  # meets at most len(known) known keys before it stops
        if named == min(unknown, api.MAX_UNKNOWN_FIELDS_NAMED):
            break
        if key not in known:
            named += 1
            hints = difflib.get_close_matches(str(key)[:_KEY_MATCHED], sorted(known), n=1)
            yield unknown_field(path.child(str(key)), path.child(hints[0]) if hints else None)
    if unknown > named:
        yield Unjudged(unknown - named)


def _judged(items: list[Any], limit: int) -> list[Any]:
    """The items of a list the walk judges: its first `limit` (the rest are `Too many`)."""
    return items if len(items) <= limit else items[:limit]


def _mode(mode: object, spec: Path) -> Iterator[Finding]:
    """Check `<spec>.mode`. Each check below takes the path of what holds its field (and, for
    a list's item, the item's index) and builds the field's own path only when there is
    something to say: the walk of a valid store builds a path per list, not per item
    (bench/rules/ab_verdict.py)."""
    if mode is None:
        return
    path = spec.child("mode")
    if type(mode) is not str:
        yield type_invalid(path, mode, "string")
    elif mode not in api.MODES:
        yield not_supported(path, mode, api.MODES)
    elif mode == api.MONITOR_MODE:
        yield FieldWarning(path, messages.WARN_MONITOR)


def _human(
    human: object, spec: Path
) -> Generator[Finding, None, tuple[int | None, dict[str, int]]]:
    """Check `<spec>.human`; return how many scores it declares and each name's first index."""
    if human is None:
        return 0, {}
    owner = spec.child("human")
    if type(human) is not dict:
        yield type_invalid(owner, human, "object")
        return None, {}
    yield from unknown_fields(human, HUMAN_FIELDS, owner)
    scores = human.get("scores")
    path = owner.child("scores")
    if scores is None:
        yield required(path, messages.MSG_HUMAN_SCORES_REQUIRED)
        return 0, {}
    if type(scores) is not list:
        yield type_invalid(path, scores, "array")
        return None, {}
    if not scores:
        yield required(path, messages.MSG_HUMAN_SCORES_EMPTY)
        return 0, {}
    if len(scores) > api.MAX_HUMAN_SCORES:
        yield too_many(path, len(scores), api.MAX_HUMAN_SCORES)
    first_at: dict[str, int] = {}
    for index, score in enumerate(_judged(scores, api.MAX_HUMAN_SCORES)):
        name = yield from _score(score, path, index)
        if name is None:
            continue
        first = first_at.setdefault(name, index)
        if first != index:
            yield _duplicate_name(path, index, name, messages.MSG_DUP_HUMAN, path, first)
    return len(scores), first_at


def _external(
    channels: object, human_names: dict[str, int], spec: Path
) -> Generator[Finding, None, int | None]:
    """Check `<spec>.external` against the human scores' names; return how many channels."""
    if channels is None:
        return 0
    path = spec.child("external")
    if type(channels) is not list:
        yield type_invalid(path, channels, "array")
        return None
    if len(channels) > api.MAX_EXTERNAL_CHANNELS:
        yield too_many(path, len(channels), api.MAX_EXTERNAL_CHANNELS)
    channel_at: dict[str, int] = {}
    score_at: dict[str, int] = {}
    for index, channel in enumerate(_judged(channels, api.MAX_EXTERNAL_CHANNELS)):
        if type(channel) is not dict:
            yield type_invalid(path.index(index), channel, "object")
            continue
        yield from unknown_fields(channel, CHANNEL_FIELDS, path, index)
        name, said = _name(channel.get("name"), path, index, _untrimmed_channel)
        if said is not None:
            yield said
        if name is not None:
            first = channel_at.setdefault(name, index)
            if first != index:
                yield _duplicate_name(path, index, name, messages.MSG_DUP_CHANNEL, path, first)
        score = channel.get("score")
        if score is None:
            yield required(path.index(index).child("score"), messages.MSG_CHANNEL_SCORE_REQUIRED)
            continue
        item = path.index(index)
        score_name = yield from _score(score, item, "score")
        if score_name is None:
            continue
        human_first = human_names.get(score_name)
        first_step: Step
        if human_first is not None:
            human = spec.child("human").child("scores")
            why, first_owner, first_step = messages.MSG_DUP_ACROSS, human, human_first
        else:
            first = score_at.setdefault(score_name, index)
            if first == index:
                continue
            why, first_owner, first_step = messages.MSG_DUP_EXTERNAL, path.index(first), "score"
        yield _duplicate_name(item, "score", score_name, why, first_owner, first_step)
    return len(channels)


def _duplicate_name(
    owner: Path, step: Step, name: str, why: str, first_owner: Path, first_step: Step
) -> Problem:
    """`<owner>[step].name` declares `name` again, first declared at `<first_owner>[step].name`."""
    first = first_owner.at(first_step).child("name")
    return duplicate(
        owner.at(step).child("name"), name, messages.first_declared_at(why, str(first))
    )


def _score(score: object, owner: Path, step: Step) -> Generator[Finding, None, str | None]:
    """Check the ScoreDecl at `<owner>[step]`; return its name when it is a usable string."""
    if type(score) is not dict:
        yield type_invalid(owner.at(step), score, "object")
        return None
    yield from unknown_fields(score, SCORE_FIELDS, owner, step)
    name, said = _name(score.get("name"), owner, step)
    if said is not None:
        yield said
    data_type = score.get("dataType")
    if data_type is None:
        data_type = api.DEFAULT_DATA_TYPE
    elif type(data_type) is not str:
        yield type_invalid(owner.at(step).child("dataType"), data_type, "string")
        data_type = None
    elif data_type not in api.DATA_TYPES:
        yield not_supported(owner.at(step).child("dataType"), data_type, api.DATA_TYPES)
        data_type = None
    categories = score.get("categories")
    if categories is not None:
        yield from _categories(categories, owner, step)
    if data_type == api.CATEGORICAL and not categories:
        yield FieldWarning(owner.at(step), messages.WARN_NO_CATEGORIES)
    elif data_type is not None and data_type != api.CATEGORICAL and categories:
        warning = messages.warn_categories_ignored(data_type)
        yield FieldWarning(owner.at(step).child("categories"), warning)
    return name


def _untrimmed_score(shown: str) -> str:
    return messages.warn_untrimmed_score(quote(shown))


def _untrimmed_channel(shown: str) -> str:
    return messages.warn_untrimmed_channel(quote(messages.attribution(shown)))


def _name(
    name: object, owner: Path, step: Step, untrimmed: Callable[[str], str] = _untrimmed_score
) -> tuple[str | None, Finding | None]:
    """Check `<owner>[step].name`: the name when usable, and what there is to say about it."""
    if type(name) is str and 0 < len(name) <= api.MAX_NAME_LENGTH:
        if name == name.strip():
            return name, None
        warning = untrimmed(cut(name, _NAME_IN_WARNING))
        return name, FieldWarning(owner.at(step).child("name"), warning)
    path = owner.at(step).child("name")
    if name is None or name == "":
        return None, required(path)
    if type(name) is not str:
        return None, type_invalid(path, name, "string")
    return None, too_long(path, api.MAX_NAME_LENGTH)


def _categories(categories: object, owner: Path, step: Step) -> Iterator[Finding]:
    """Check `<owner>[step].categories`."""
    if type(categories) is not list:
        yield type_invalid(owner.at(step).child("categories"), categories, "array")
        return
    if len(categories) > api.MAX_CATEGORIES:
        yield too_many(owner.at(step).child("categories"), len(categories), api.MAX_CATEGORIES)
        categories = categories[: api.MAX_CATEGORIES]
    if _distinct_strings(categories):
        return
    path = owner.at(step).child("categories")
    seen: set[str] = set()
    for index, category in enumerate(categories):
        if type(category) is not str:
            yield type_invalid(path.index(index), category, "string")
        elif category in seen:
            yield duplicate(path.index(index), category)
        else:
            seen.add(category)


def _distinct_strings(categories: list[Any]) -> bool:
    """Decided in C (join() refuses anything but strings, a set finds repeats), so a clean list
    is not walked in Python for problems it does not have. The walk's one shortcut, for speed:
    bench/rules/distinct_strings.py."""
    try:
        "".join(categories)
    except TypeError:
        return False
    return len(set(categories)) == len(categories)
