"""The cross-field invariants of SPEC §1 as CEL `x-kubernetes-validations`.

Per-field limits live in the OpenAPI schema; what a schema cannot say (at
least one source, names unique across lists) is written here once, with the
platform's messages from `limits`, so a cluster without the webhook still
refuses the same objects.

What kube-apiserver prints is what users read when the CRD refuses an object
(its rules run before any webhook), so each rule says as much as the API lets
it, established on a real v1.37.2 server (tests/kube/test_crd_real.py):

- `reason: FieldValueRequired` on "no source" prints
  `spec: Required value: <platform message>`, the verdict's very line.
- The duplicate rules keep the default reason, `FieldValueInvalid`:
  `reason: FieldValueDuplicate` makes kube-apiserver build
  `field.Duplicate(path, value)`, which drops the message and, the value
  being a list, prints a bare `spec.external: Duplicate value`.
- A `messageExpression` names the repeated value (quoted as the verdict
  quotes it) and where it is declared first and last; the static `message`
  stays the platform's text, and kube-apiserver falls back to it if the
  expression ever fails. CEL before Kubernetes 1.33 has no index in its
  comprehensions, so the positions come from the lists library's
  `indexOf`/`lastIndexOf`, and one duplicate is named per rule (the verdict
  names every later occurrence).
- `fieldPath: .external` reports the rules that live on `spec` (they compare
  human and external names) at `spec.external`, the list that holds the
  offending name. A fieldPath cannot hold a list index.

Every field used here exists from Kubernetes 1.28 (`reason`, `fieldPath`;
`messageExpression` from 1.27), and every CEL function (`replace`,
`indexOf`, `lastIndexOf`) from the first CEL release in CRDs, so the CRD is
accepted from 1.28 on (MIN_KUBERNETES).

Each rule sits on the narrowest node that can see everything it compares.
kube-apiserver skips CEL when the object already has a blocking schema error
(required, enum, too long, too many, wrong type), so a rule may assume that
required fields are present and that every list and string respects its
bound. Optional fields (`human`, `external`) are guarded with `has(...) ? rule :
true` rather than `!has(...) || rule`: the two mean the same in CEL, but the
conditional never evaluates the side it does not take in any engine, while
cel-python evaluates both sides of `||` and, inside a comprehension, lets the
resulting errors compound until it runs out of memory. A messageExpression
runs only after its rule failed, so it needs no guard.

Every list a rule iterates and every string it compares is bounded by
`maxItems`/`maxLength` in the schema: kube-apiserver estimates each rule's
worst-case cost from those bounds and rejects the CRD when the estimate
exceeds its per-rule limit.
"""

from __future__ import annotations

from dataclasses import dataclass

from webhook.rules import limits
from webhook.rules.field_errors import GO_ESCAPES, ErrorType

MIN_KUBERNETES = (1, 28)
"""The oldest Kubernetes minor whose CRD API has every rule field used here."""


@dataclass(frozen=True, slots=True)
class CelRule:
    """One `x-kubernetes-validations` entry and where in the spec schema it is attached.

    `at` is a path of property names below `spec` ("" for spec itself);
    `field_path` (CEL's `fieldPath`, relative to `at`) moves the report lower.
    """

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
    """`text` as a CEL single-quoted string literal."""
    escaped = text.replace("\\", "\\\\").replace("'", "\\'")
    escaped = escaped.replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")
    return f"'{escaped}'"


@dataclass(frozen=True, slots=True)
class _Text:
    """Fixed text inside a generated CEL string concatenation."""

    text: str


def _concat(*parts: _Text | str) -> str:
    """CEL concatenating `parts` (CEL expressions, or `_Text`), adjacent texts merged."""
    pieces: list[str] = []
    pending = ""
    for part in parts:
        if isinstance(part, _Text):
            pending += part.text
            continue
        if pending:
            pieces.append(literal(pending))
            pending = ""
        pieces.append(part)
    if pending:
        pieces.append(literal(pending))
    return " + ".join(pieces)


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


_DIGITS = "[" + ", ".join(f"'{digit}'" for digit in range(10)) + "]"
if max(limits.MAX_HUMAN_SCORES, limits.MAX_EXTERNAL_CHANNELS) > 100:
    raise ValueError("_decimal renders indexes below 100 only; extend it with the limits")


def _decimal(index: str) -> str:
    """CEL for the decimal text of `index` (0..99), every list here being shorter than 100.

    Not `string(index)`: kube-apiserver's cost estimator gives `string(int)`
    no size bound, and concatenating it makes the whole messageExpression
    "exceed budget by factor of more than 100x"; an item of a literal list of
    strings is bounded.
    """
    return f"({index} >= 10 ? {_DIGITS}[{index} / 10] : '') + {_DIGITS}[{index} % 10]"


def declared_twice(message: str, value: str, first: _Position, again: _Position) -> str:
    """CEL for `<message>: "<value>" is declared at <first> and again at <again>`."""
    return _concat(
        _Text(f'{message}: "'),
        _escaped(value),
        _Text(f'" is declared at {first.prefix}['),
        _decimal(first.index),
        _Text(f"]{first.suffix} and again at {again.prefix}["),
        _decimal(again.index),
        _Text(f"]{again.suffix}"),
    )


def _first_and_last(items: str, var: str, key: str, value: str) -> str:
    """CEL for `[first, last]`: where in `items` the `key` of `var` equals `value`.

    Marks each item 1 or 0 and asks the int list for `indexOf(1)`: the
    estimator bounds a list of ints, while `indexOf` on a list of strings
    built by `map` has no known element size and makes kube-apiserver refuse
    the CRD as over budget.
    """
    marks = f"{items}.map({var}, {key} == {value} ? 1 : 0)"
    return f"[{marks}.indexOf(1), {marks}.lastIndexOf(1)]"


def _repeated(items: str) -> str:
    """CEL for `[first, last]` index of the earliest `name` in `items` declared twice.

    For each item, the first and the last index of its name; the first item
    whose two differ holds that name.
    """
    pairs = f"{items}.map(x, {_first_and_last(items, 'y', 'y.name', 'x.name')})"
    return f"{pairs}.filter(p, p[0] != p[1])[0]"


NO_SOURCE = CelRule(
    at="",
    rule=(
        "(has(self.human) && size(self.human.scores) > 0)"
        " || (has(self.external) && size(self.external) > 0)"
    ),
    message=limits.MSG_NO_SOURCE,
    reason=ErrorType.REQUIRED,
)

# [first, last] index of the earliest score name declared twice.
_HUMAN_PAIR = _repeated("self")
DUPLICATE_HUMAN = CelRule(
    at="human.scores",
    rule="self.all(x, self.exists_one(y, y.name == x.name))",
    message=limits.MSG_DUP_HUMAN,
    message_expression=declared_twice(
        limits.MSG_DUP_HUMAN,
        f"self[{_HUMAN_PAIR}[0]].name",
        _Position("spec.human.scores", f"{_HUMAN_PAIR}[0]", ".name"),
        _Position("spec.human.scores", f"{_HUMAN_PAIR}[1]", ".name"),
    ),
)

# [index of the human score, index of the first channel] sharing a score name.
_ACROSS_PAIR = (
    "self.external.map(c, ["
    "self.human.scores.map(s, s.name == c.score.name ? 1 : 0).indexOf(1), "
    "self.external.map(e, e.score.name == c.score.name ? 1 : 0).indexOf(1)"
    "]).filter(p, p[0] >= 0)[0]"
)
DUPLICATE_ACROSS = CelRule(
    at="",
    rule=(
        "has(self.human) && has(self.external)"
        " ? self.external.all(c, !self.human.scores.exists(s, s.name == c.score.name))"
        " : true"
    ),
    message=limits.MSG_DUP_ACROSS,
    message_expression=declared_twice(
        limits.MSG_DUP_ACROSS,
        f"self.external[{_ACROSS_PAIR}[1]].score.name",
        _Position("spec.human.scores", f"{_ACROSS_PAIR}[0]", ".name"),
        _Position("spec.external", f"{_ACROSS_PAIR}[1]", ".score.name"),
    ),
    field_path=".external",
)

# A name also declared by a human score is already reported by DUPLICATE_ACROSS
# (the verdict reports each later occurrence once, with that reason), so this
# rule only counts names that no human score declares.
# [first, last] index of the earliest external-only score name declared twice.
_IN_HUMAN = "(has(self.human) ? self.human.scores.exists(s, s.name == c.score.name) : false)"
_EXTERNAL_PAIR = (
    f"self.external.map(c, {_IN_HUMAN} ? [0, 0] : "
    f"{_first_and_last('self.external', 'e', 'e.score.name', 'c.score.name')})"
    ".filter(p, p[0] != p[1])[0]"
)
DUPLICATE_EXTERNAL = CelRule(
    at="",
    rule=(
        f"has(self.external) ? self.external.all(c, {_IN_HUMAN}"
        " || self.external.exists_one(d, d.score.name == c.score.name)) : true"
    ),
    message=limits.MSG_DUP_EXTERNAL,
    message_expression=declared_twice(
        limits.MSG_DUP_EXTERNAL,
        f"self.external[{_EXTERNAL_PAIR}[0]].score.name",
        _Position("spec.external", f"{_EXTERNAL_PAIR}[0]", ".score.name"),
        _Position("spec.external", f"{_EXTERNAL_PAIR}[1]", ".score.name"),
    ),
    field_path=".external",
)

# [first, last] index of the earliest channel name declared twice.
_CHANNEL_PAIR = _repeated("self")
DUPLICATE_CHANNEL = CelRule(
    at="external",
    rule="self.all(c, self.exists_one(d, d.name == c.name))",
    message=limits.MSG_DUP_CHANNEL,
    message_expression=declared_twice(
        limits.MSG_DUP_CHANNEL,
        f"self[{_CHANNEL_PAIR}[0]].name",
        _Position("spec.external", f"{_CHANNEL_PAIR}[0]", ".name"),
        _Position("spec.external", f"{_CHANNEL_PAIR}[1]", ".name"),
    ),
)

SPEC_RULES: tuple[CelRule, ...] = (
    NO_SOURCE,
    DUPLICATE_HUMAN,
    DUPLICATE_ACROSS,
    DUPLICATE_EXTERNAL,
    DUPLICATE_CHANNEL,
)
