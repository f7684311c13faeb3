"""The spec's cross-field invariants (`webhook.rules.verdict`) as CEL `x-kubernetes-validations`,
with the platform's messages: what users read, since the CRD runs before any webhook (as seen on
a real server in tests/kube/test_crd_real.py). Each rule may assume the schema's bounds (CEL runs
after them)."""

from __future__ import annotations

from dataclasses import dataclass

from webhook.rules import api, messages
from webhook.rules.field_errors import GO_ESCAPES, ErrorType

MIN_KUBERNETES = (1, 28)  # the oldest minor with every rule field and CEL function used here


@dataclass(frozen=True, slots=True)
class CelRule:
    """`at`: property names below `spec` ("" for spec itself) where the rule is attached;
    `field_path` (CEL's `fieldPath`, relative to `at`) moves the report lower."""

    at: str
    rule: str
    message: str
    message_expression: str = ""
    field_path: str = ""
    reason: ErrorType | None = None

    def validation(self) -> dict[str, str]:
        entry = {"rule": self.rule, "message": self.message}
        if self.message_expression:
            entry["messageExpression"] = self.message_expression
        if self.field_path:
            entry["fieldPath"] = self.field_path
        if self.reason is not None:
            entry["reason"] = str(self.reason)
        return entry

    @property
    def reported_at(self) -> str:
        """The field path kube-apiserver puts on this rule's error."""
        below = ".".join(filter(None, [self.at, self.field_path.lstrip(".")]))
        return f"spec.{below}" if below else "spec"


def literal(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("'", "\\'")
    escaped = escaped.replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")
    return f"'{escaped}'"


def _escaped(value: str) -> str:
    """CEL escaping `value` as `field_errors.quote` does, so both render a name alike."""
    for raw, escaped in GO_ESCAPES:
        value = f"{value}.replace({literal(raw)}, {literal(escaped)})"
    return value


@dataclass(frozen=True, slots=True)
class _Position:
    """Where in a list a name sits: `<prefix>[<CEL index>]<suffix>`."""

    prefix: str
    index: str
    suffix: str


# "0" .. "63": the decimal text of every index a message names, one literal list.
_LONGEST_LIST = max(api.MAX_HUMAN_SCORES, api.MAX_EXTERNAL_CHANNELS)
_INDEXES = "[" + ", ".join(f"'{index}'" for index in range(_LONGEST_LIST)) + "]"


def _decimal(index: str) -> str:
    """CEL for the decimal text of `index`: not `string(index)`, which kube-apiserver's cost
    estimator leaves unbounded ("exceed budget by factor of more than 100x")."""
    return f"{_INDEXES}[{index}]"


def declared_twice(message: str, value: str, first: _Position, again: _Position) -> str:
    """CEL for `<message>: "<value>" is declared at <first> and again at <again>`."""
    return " + ".join(
        [
            literal(f'{message}: "'),
            _escaped(value),
            literal(f'" is declared at {first.prefix}['),
            _decimal(first.index),
            literal(f"]{first.suffix} and again at {again.prefix}["),
            _decimal(again.index),
            literal(f"]{again.suffix}"),
        ]
    )


def _marks(items: str, var: str, key: str, value: str) -> str:
    """CEL for a list of ints, 1 where an item's `key` equals `value`, to find it by `indexOf(1)`:
    on strings built by `map` the estimator knows no size and refuses the CRD as over budget."""
    return f"{items}.map({var}, {key} == {value} ? 1 : 0)"


def _first_message(items: str, var: str, fine: str, message: str) -> str:
    """CEL for the message of the first item of `items` (bound to `var`) that is not `fine`.
    Built where the item is in hand, as CEL before 1.33 has no variables: each position is then
    computed once, within the per-call cost limit kube-apiserver also applies at run time."""
    return f"{items}.map({var}, {fine} ? '' : {message}).filter(m, m != '')[0]"


def _unique_names(items: str, prefix: str, message: str) -> str:
    """CEL messageExpression for "every `name` in `items` is unique"."""
    marks = _marks(items, "y", "y.name", "x.name")
    first = _Position(prefix, f"{marks}.indexOf(1)", ".name")
    again = _Position(prefix, f"{marks}.lastIndexOf(1)", ".name")
    unique = f"{items}.exists_one(y, y.name == x.name)"
    return _first_message(items, "x", unique, declared_twice(message, "x.name", first, again))


def _first_external(fine: str, message: str, first: _Position, again: _Position) -> str:
    """CEL messageExpression naming the first `score.name` in `spec.external` that is not `fine`."""
    said = declared_twice(message, "c.score.name", first, again)
    return _first_message("self.external", "c", fine, said)


# The static `message` is the fallback should a messageExpression fail. CEL before 1.33 has no
# index in comprehensions: hence `indexOf`/`lastIndexOf`, and one duplicate named per rule.
# `reason: FieldValueRequired` prints the verdict's very line, `spec: Required value: <message>`.
NO_SOURCE = CelRule(
    at="",
    rule=(
        "(has(self.human) && size(self.human.scores) > 0)"
        " || (has(self.external) && size(self.external) > 0)"
    ),
    message=messages.MSG_NO_SOURCE,
    reason=ErrorType.REQUIRED,
)

# The duplicate rules keep the default FieldValueInvalid: FieldValueDuplicate makes kube-apiserver
# print a bare `Duplicate value`, without the message.
DUPLICATE_HUMAN = CelRule(
    at="human.scores",
    rule="self.all(x, self.exists_one(y, y.name == x.name))",
    message=messages.MSG_DUP_HUMAN,
    message_expression=_unique_names("self", "spec.human.scores", messages.MSG_DUP_HUMAN),
)

# `has(...) ? rule : true`, not `!has(...) || rule`: cel-python evaluates both sides of `||` and,
# in a comprehension, compounds the errors until it runs out of memory. `fieldPath: .external`
# reports at the list holding the name (a fieldPath cannot hold an index).
_IN_HUMAN = "self.human.scores.exists(s, s.name == c.score.name)"
_HUMAN_MARKS = _marks("self.human.scores", "s", "s.name", "c.score.name")
_EXTERNAL_MARKS = _marks("self.external", "e", "e.score.name", "c.score.name")
_FIRST_EXTERNAL = _Position("spec.external", f"{_EXTERNAL_MARKS}.indexOf(1)", ".score.name")
DUPLICATE_ACROSS = CelRule(
    at="",
    rule=f"has(self.human) && has(self.external) ? self.external.all(c, !{_IN_HUMAN}) : true",
    message=messages.MSG_DUP_ACROSS,
    message_expression=_first_external(
        f"!{_IN_HUMAN}",
        messages.MSG_DUP_ACROSS,
        _Position("spec.human.scores", f"{_HUMAN_MARKS}.indexOf(1)", ".name"),
        _FIRST_EXTERNAL,
    ),
    field_path=".external",
)

# A name also declared by a human score is already reported by DUPLICATE_ACROSS
# (the verdict reports each later occurrence once, with that reason), so this
# rule only counts names that no human score declares.
_EXTERNAL_ONLY = (
    f"(has(self.human) ? {_IN_HUMAN} : false)"
    " || self.external.exists_one(d, d.score.name == c.score.name)"
)
DUPLICATE_EXTERNAL = CelRule(
    at="",
    rule=f"has(self.external) ? self.external.all(c, {_EXTERNAL_ONLY}) : true",
    message=messages.MSG_DUP_EXTERNAL,
    message_expression=_first_external(
        f"({_EXTERNAL_ONLY})",
        messages.MSG_DUP_EXTERNAL,
        _FIRST_EXTERNAL,
        _Position("spec.external", f"{_EXTERNAL_MARKS}.lastIndexOf(1)", ".score.name"),
    ),
    field_path=".external",
)

DUPLICATE_CHANNEL = CelRule(
    at="external",
    rule="self.all(c, self.exists_one(d, d.name == c.name))",
    message=messages.MSG_DUP_CHANNEL,
    message_expression=_unique_names("self", "spec.external", messages.MSG_DUP_CHANNEL),
)

SPEC_RULES = (NO_SOURCE, DUPLICATE_HUMAN, DUPLICATE_ACROSS, DUPLICATE_EXTERNAL, DUPLICATE_CHANNEL)
