"""The cross-field rules of webhook/rules/declarations.py as the CRD's `x-kubernetes-validations`
(its OpenAPI schema, from the model, holds the per-field ones), with the platform's messages:
what users read, since the CRD runs before any webhook (as seen on a real server in
tests/kube/test_crd_real.py). Each rule may assume the schema's bounds (CEL runs after them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import get_args

from pydantic import BaseModel

from webhook.rules import api
from webhook.rules.declarations import RULES, Check, Rule, Steps, declared_at
from webhook.rules.field_errors import GO_ESCAPES, ErrorType
from webhook.rules.field_path import Path
from webhook.rules.model import FeedbackStoreSpec

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
_LONGEST_LIST = max(
    declared_at(rule.field, Check.MAX_ITEMS).bound for rule in RULES if rule.check is Check.UNIQUE
)
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


def _unique_names(items: str, key: str, prefix: str, message: str) -> str:
    """CEL messageExpression for "every item's `key` in `items` is unique"."""
    marks = _marks(items, "y", f"y.{key}", f"x.{key}")
    first = _Position(prefix, f"{marks}.indexOf(1)", f".{key}")
    again = _Position(prefix, f"{marks}.lastIndexOf(1)", f".{key}")
    unique = f"{items}.exists_one(y, y.{key} == x.{key})"
    return _first_message(items, "x", unique, declared_twice(message, f"x.{key}", first, again))


def _model_of(annotation: object) -> type[BaseModel] | None:
    """The model a field's annotation holds (`HumanSource | None`: HumanSource)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in get_args(annotation):
        found = _model_of(argument)
        if found is not None:
            return found
    return None


def _present(steps: Steps) -> list[str]:
    """`has(...)` for each optional field on the way to `steps` (the schema makes the rest
    present once their parent is)."""
    model: type[BaseModel] | None = FeedbackStoreSpec
    guards = []
    for depth, step in enumerate(steps):
        assert model is not None, steps
        fields = {field.alias or name: field for name, field in model.model_fields.items()}
        if not fields[step].is_required():
            guards.append(f"has(self.{'.'.join(steps[: depth + 1])})")
        model = _model_of(fields[step].annotation)
    return guards


def _when(guards: list[str], then: str, otherwise: str, *, parenthesised: bool = True) -> str:
    """CEL for `then` where every guard holds, else `otherwise`."""
    if not guards:
        return then
    chosen = f"{' && '.join(guards)} ? {then} : {otherwise}"
    return f"({chosen})" if parenthesised else chosen


def _any_source(rule: Rule) -> CelRule:
    """ANY_SOURCE on spec; `reason: FieldValueRequired` prints the verdict's very line,
    `spec: Required value: <message>`."""
    sources = [
        "(" + " && ".join([*_present(steps), f"size(self.{'.'.join(steps)}) > 0"]) + ")"
        for steps in rule.sources
    ]
    return CelRule(at="", rule=" || ".join(sources), message=rule.words, reason=rule.error)


def _unique(rule: Rule) -> CelRule:
    """A UNIQUE rule: at its list when it reads nothing else, else on spec with `fieldPath` at
    the list holding the name (a fieldPath cannot hold an index). The duplicate rules keep
    the default FieldValueInvalid: FieldValueDuplicate makes kube-apiserver print a bare
    `Duplicate value`, without the message."""
    items, key = ".".join(rule.field), ".".join(rule.key)
    prefix = str(Path(api.SPEC_PATH, *rule.field))
    other = rule.first_in or (rule.unless.first_in if rule.unless is not None else None)
    if other is None:
        return CelRule(
            at=items,
            rule=f"self.all(x, self.exists_one(y, y.{key} == x.{key}))",
            message=rule.words,
            message_expression=_unique_names("self", key, prefix, rule.words),
        )
    # `has(...) ? rule : true`, not `!has(...) || rule`: cel-python evaluates both sides of `||`
    # and, in a comprehension, compounds the errors until it runs out of memory.
    listed, theirs = f"self.{items}", f"self.{'.'.join(other.field)}"
    their_key = ".".join(other.key)
    in_theirs = f"{theirs}.exists(s, s.{their_key} == c.{key})"
    ours = _marks(listed, "e", f"e.{key}", f"c.{key}")
    first_ours = _Position(prefix, f"{ours}.indexOf(1)", f".{key}")
    if rule.first_in is not None:
        holds = fine = f"!{in_theirs}"
        guards = [*_present(other.field), *_present(rule.field)]
        theirs_marks = _marks(theirs, "s", f"s.{their_key}", f"c.{key}")
        their_prefix = str(Path(api.SPEC_PATH, *other.field))
        first = _Position(their_prefix, f"{theirs_marks}.indexOf(1)", f".{their_key}")
        again = first_ours
    else:
        in_theirs = _when(_present(other.field), in_theirs, "false")
        holds = f"{in_theirs} || {listed}.exists_one(d, d.{key} == c.{key})"
        fine = f"({holds})"
        guards = _present(rule.field)
        first, again = first_ours, _Position(prefix, f"{ours}.lastIndexOf(1)", f".{key}")
    said = declared_twice(rule.words, f"c.{key}", first, again)
    return CelRule(
        at="",
        rule=_when(guards, f"{listed}.all(c, {holds})", "true", parenthesised=False),
        message=rule.words,
        message_expression=_first_message(listed, "c", fine, said),
        field_path=f".{items}",
    )


# The static `message` is the fallback should a messageExpression fail. CEL before 1.33 has no
# index in comprehensions: hence `indexOf`/`lastIndexOf`, and one duplicate named per rule.
SPEC_RULES = tuple(
    _unique(rule) if rule.check is Check.UNIQUE else _any_source(rule)
    for rule in RULES
    if rule.cross_field
)
