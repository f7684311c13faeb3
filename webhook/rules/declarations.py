"""Every rule of the verdict as data: the one source both renderings in CEL are generated from.

kube-apiserver judges a FeedbackStore declaration in two places without the webhook: the CRD
and the ValidatingAdmissionPolicies. The CRD's cross-field rules (`x-kubernetes-validations`,
webhook/manifests/cel_rules.py) and every problem a policy says (webhook/manifests/policy.py)
are rendered from these declarations, so a rule changed here changes both; the CRD's per-field
rules are its OpenAPI schema, generated from model.py with the same limits, and a test holds
each per-field declaration to that schema. The verdict stays a hand-written walk, for its speed
(bench/rules/bench_verdict.py); tests/webhook/rules/test_declarations.py holds it to these
rules: every problem it finds is one rule's, in that rule's words.

A rule belongs to an object kind (an `Owner`: a ScoreDecl's rules hold wherever a ScoreDecl
stands) and names the field below it. Limits, enums, known fields and words are read from
api.py, model.py and messages.py, never restated. What the verdict says that no CEL rendering
can say is in NOT_CEL, with the reason.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final, NamedTuple

from webhook.rules import api, messages
from webhook.rules.field_errors import (
    ErrorType,
    Problem,
    duplicate,
    not_supported,
    required,
    too_long,
    too_many,
    type_invalid,
    unknown_field,
)
from webhook.rules.field_path import Path
from webhook.rules.model import CHANNEL_FIELDS, HUMAN_FIELDS, SCORE_FIELDS, SPEC_FIELDS

# A step of a rule's field standing for every item of a list.
ITEM: Final = "[]"

Steps = tuple[str, ...]


class Check(enum.Enum):
    """What a rule checks."""

    TYPE = "type"  # the value has its JSON type (`limit`: the type's name)
    REQUIRED = "required"  # present and not null; a name: not empty either
    MIN_ITEMS = "minItems"  # a list has at least `limit` items (said as a Required value)
    MAX_ITEMS = "maxItems"
    MAX_LENGTH = "maxLength"
    ENUM = "enum"
    KNOWN_FIELDS = "known fields"  # an object has no key outside `limit`
    DISTINCT = "distinct"  # no item of a list repeats an earlier one (a set)
    UNIQUE = "unique"  # cross-field: no item's `key` repeats an earlier one's
    ANY_SOURCE = "any source"  # cross-field: one of `sources` is a list with items


class Owner(NamedTuple):
    """An object kind of the declaration and every place it stands (`()`: the declaration)."""

    name: str
    at: tuple[Steps, ...]


SPEC: Final = Owner("spec", ((),))
HUMAN: Final = Owner("human", (("human",),))
SCORE: Final = Owner("score", (("human", "scores", ITEM), ("external", ITEM, "score")))
CHANNEL: Final = Owner("channel", (("external", ITEM),))


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule: `check` on the `field` (steps below its owner; `()` the owner itself).

    `limit` is the check's parameter: a JSON type's name, a bound, an enum's values or the
    known fields. `words` are the verdict's own, when it says more than the error type.
    UNIQUE rules are stated at the spec: `field` is the list, `key` the steps to the name in
    each item; a name may be first declared in another rule's list (`first_in`), or left to
    another rule to report (`unless`). ANY_SOURCE lists the fields of which one must be a
    list with items."""

    owner: Owner
    field: Steps
    check: Check
    limit: int | str | tuple[str, ...] | frozenset[str] | None = None
    words: str = ""
    key: Steps = ()
    first_in: Rule | None = None
    unless: Rule | None = None
    sources: tuple[Steps, ...] = ()

    @property
    def paths(self) -> tuple[Steps, ...]:
        """Every place the rule holds, as steps below the declaration."""
        return tuple((*at, *self.field) for at in self.owner.at)

    @property
    def per_item(self) -> bool:
        """Said once per offending item (a UNIQUE rule: at each later item) rather than once."""
        return self.check is Check.UNIQUE or any(ITEM in path for path in self.paths)

    @property
    def cross_field(self) -> bool:
        return self.check in (Check.UNIQUE, Check.ANY_SOURCE)

    @property
    def bound(self) -> int:
        """The limit of a rule that counts (items, characters)."""
        if not isinstance(self.limit, int):
            raise TypeError(f"{self!r} counts nothing")
        return self.limit

    @property
    def error(self) -> ErrorType:
        """The error type of the problems this rule finds."""
        return _ERRORS[self.check]

    def problem(self, path: Path, value: object = None, first: str = "") -> Problem:
        """The verdict's problem for this rule at `path`: `value` is the bad value (a list's
        length for MAX_ITEMS), `first` where a UNIQUE rule's name was first declared."""
        check, limit = self.check, self.limit
        if check is Check.TYPE and isinstance(limit, str):
            return type_invalid(path, value, limit)
        if check in (Check.REQUIRED, Check.MIN_ITEMS, Check.ANY_SOURCE):
            return required(path, self.words)
        if check is Check.MAX_ITEMS and isinstance(limit, int) and isinstance(value, int):
            return too_many(path, value, limit)
        if check is Check.MAX_LENGTH and isinstance(limit, int):
            return too_long(path, limit)
        if check is Check.ENUM and isinstance(limit, tuple):
            return not_supported(path, value, limit)
        if check is Check.KNOWN_FIELDS:
            return unknown_field(path)
        if check is Check.DISTINCT:
            return duplicate(path, value)
        if check is Check.UNIQUE:
            return duplicate(path, value, messages.first_declared_at(self.words, first))
        raise ValueError(f"no problem for {self}")

    def __repr__(self) -> str:
        return f"Rule({self.owner.name}:{'.'.join(self.field)} {self.check.name})"


_ERRORS: Final = {
    Check.TYPE: ErrorType.TYPE_INVALID,
    Check.REQUIRED: ErrorType.REQUIRED,
    Check.MIN_ITEMS: ErrorType.REQUIRED,
    Check.MAX_ITEMS: ErrorType.TOO_MANY,
    Check.MAX_LENGTH: ErrorType.TOO_LONG,
    Check.ENUM: ErrorType.NOT_SUPPORTED,
    Check.KNOWN_FIELDS: ErrorType.FORBIDDEN,
    Check.DISTINCT: ErrorType.DUPLICATE,
    Check.UNIQUE: ErrorType.DUPLICATE,
    Check.ANY_SOURCE: ErrorType.REQUIRED,
}


def _name_rules(owner: Owner) -> tuple[Rule, ...]:
    """A name (a score's, a channel's): a non-empty string of at most MAX_NAME_LENGTH."""
    return (
        Rule(owner, ("name",), Check.REQUIRED, api.MIN_NAME_LENGTH),
        Rule(owner, ("name",), Check.TYPE, "string"),
        Rule(owner, ("name",), Check.MAX_LENGTH, api.MAX_NAME_LENGTH),
    )


UNIQUE_HUMAN: Final = Rule(
    SPEC, ("human", "scores"), Check.UNIQUE, words=messages.MSG_DUP_HUMAN, key=("name",)
)
UNIQUE_ACROSS: Final = Rule(
    SPEC,
    ("external",),
    Check.UNIQUE,
    words=messages.MSG_DUP_ACROSS,
    key=("score", "name"),
    first_in=UNIQUE_HUMAN,
)
# A name also declared by a human score is UNIQUE_ACROSS's to report (the verdict reports each
# later occurrence once, with one reason).
UNIQUE_EXTERNAL: Final = Rule(
    SPEC,
    ("external",),
    Check.UNIQUE,
    words=messages.MSG_DUP_EXTERNAL,
    key=("score", "name"),
    unless=UNIQUE_ACROSS,
)
UNIQUE_CHANNEL: Final = Rule(
    SPEC, ("external",), Check.UNIQUE, words=messages.MSG_DUP_CHANNEL, key=("name",)
)
NO_SOURCE: Final = Rule(
    SPEC,
    (),
    Check.ANY_SOURCE,
    words=messages.MSG_NO_SOURCE,
    sources=(("human", "scores"), ("external",)),
)

# The per-field rules in the order a reader meets them, then the cross-field ones in the order
# the CRD lists them.
RULES: Final[tuple[Rule, ...]] = (
    Rule(SPEC, (), Check.TYPE, "object"),
    Rule(SPEC, (), Check.KNOWN_FIELDS, SPEC_FIELDS),
    Rule(SPEC, ("mode",), Check.TYPE, "string"),
    Rule(SPEC, ("mode",), Check.ENUM, api.MODES),
    Rule(HUMAN, (), Check.TYPE, "object"),
    Rule(HUMAN, (), Check.KNOWN_FIELDS, HUMAN_FIELDS),
    Rule(HUMAN, ("scores",), Check.REQUIRED, words=messages.MSG_HUMAN_SCORES_REQUIRED),
    Rule(HUMAN, ("scores",), Check.TYPE, "array"),
    Rule(
        HUMAN, ("scores",), Check.MIN_ITEMS, api.MIN_HUMAN_SCORES, messages.MSG_HUMAN_SCORES_EMPTY
    ),
    Rule(HUMAN, ("scores",), Check.MAX_ITEMS, api.MAX_HUMAN_SCORES),
    Rule(SCORE, (), Check.TYPE, "object"),
    Rule(SCORE, (), Check.KNOWN_FIELDS, SCORE_FIELDS),
    *_name_rules(SCORE),
    Rule(SCORE, ("dataType",), Check.TYPE, "string"),
    Rule(SCORE, ("dataType",), Check.ENUM, api.DATA_TYPES),
    Rule(SCORE, ("categories",), Check.TYPE, "array"),
    Rule(SCORE, ("categories",), Check.MAX_ITEMS, api.MAX_CATEGORIES),
    Rule(SCORE, ("categories", ITEM), Check.TYPE, "string"),
    Rule(SCORE, ("categories", ITEM), Check.DISTINCT),
    Rule(SPEC, ("external",), Check.TYPE, "array"),
    Rule(SPEC, ("external",), Check.MAX_ITEMS, api.MAX_EXTERNAL_CHANNELS),
    Rule(CHANNEL, (), Check.TYPE, "object"),
    Rule(CHANNEL, (), Check.KNOWN_FIELDS, CHANNEL_FIELDS),
    *_name_rules(CHANNEL),
    Rule(CHANNEL, ("score",), Check.REQUIRED, words=messages.MSG_CHANNEL_SCORE_REQUIRED),
    NO_SOURCE,
    UNIQUE_HUMAN,
    UNIQUE_ACROSS,
    UNIQUE_EXTERNAL,
    UNIQUE_CHANNEL,
)


def declared(owner: Owner, field: Steps, check: Check) -> Rule:
    """The one rule of `owner` checking `field` so (a renderer asks for each it renders)."""
    (found,) = [r for r in RULES if (r.owner, r.field, r.check) == (owner, field, check)]
    return found


def declared_at(path: Steps, check: Check) -> Rule:
    """The one rule checking the field at `path` (below the declaration) so."""
    (found,) = [r for r in RULES if r.check is check and path in r.paths]
    return found


# What the verdict says that neither rendering in CEL says, and why.
NOT_CEL: Final = {
    "a `did you mean` after an unknown field": "CEL has no fuzzy match",
    "warnings on an allowed object (Monitor mode, categories, untrimmed names)": (
        "a binding's actions hold for all its validations: under Deny every failed one refuses"
    ),
    "an object that is no JSON object": "kube-apiserver decodes nothing else into an object",
}
