"""What kube-apiserver does with a FeedbackStore under our CRD, before any webhook runs.

Test support code. It follows apiextensions-apiserver step by step, citing
where each step comes from, so the CRD can be held against the verdict
without a cluster:

1. Strict field validation (kubectl's default since 1.27, `--validate=strict`):
   a field the schema does not declare fails the request at decode time.
2. Null pruning (`schema/defaulting/prunenulls.go`): a null under a
   non-nullable property without a default is dropped; one with a default is
   left for step 3. Nulls inside arrays stay (and fail type checks).
3. Defaulting (`schema/defaulting/algorithm.go`): a missing property, or a
   null one, takes its schema default; then recurse into properties and items.
4. OpenAPI validation (kube-openapi; `maxLength`/`minLength` count runes,
   i.e. code points, as Python's `len` does) plus list-type `set`
   uniqueness (`schema/listtype`), here done by `jsonschema`.
5. CEL `x-kubernetes-validations`, skipped when step 4 found a "blocking"
   error: required, enum, too long, too many, wrong type
   (`registry/customresource/strategy.go`, `hasBlockingErr`). Each rule runs
   with `self` bound to the value at its node, with `cel-python`, which counts
   string sizes in code points as Kubernetes' CEL does. A failed rule is
   reported as `schema/cel/validation.go` does: at its node plus `fieldPath`,
   with `messageExpression` evaluated (the static `message` if it fails) and
   `reason` choosing the field error (`fieldErrorForReason`); the Kubernetes
   library functions the rules use (`indexOf`, `lastIndexOf`, `replace`)
   are supplied here, as cel-python lacks them.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import celpy
import jsonschema

Schema = dict[str, Any]

# jsonschema validators whose failures kube-apiserver reports as Required,
# NotSupported, TooLong, TooMany or TypeInvalid, which stop CEL from running;
# additionalProperties stands for strict field validation, which fails the
# request before validation even starts.
BLOCKING = frozenset({"required", "enum", "maxLength", "maxItems", "type", "additionalProperties"})


@dataclass(frozen=True)
class Outcome:
    """The API server's answer: schema errors, then CEL failures (if CEL ran)."""

    stored: Any
    schema_errors: tuple[tuple[str, str, str], ...] = ()
    cel_failures: tuple[tuple[str, str], ...] = ()
    cel_ran: bool = False
    # (field, reason, message) of each failed rule, as kube-apiserver's Status causes read.
    cel_causes: tuple[tuple[str, str, str], ...] = ()

    @property
    def accepted(self) -> bool:
        return not self.schema_errors and not self.cel_failures

    @property
    def cel_messages(self) -> set[str]:
        return {message for _, message in self.cel_failures}


@dataclass
class CrdServer:
    """One CRD version's schema, ready to admit objects the way kube-apiserver would."""

    schema: Schema
    _programs: dict[str, list[_CompiledRule]] = field(default_factory=dict, init=False)

    @classmethod
    def from_crd(cls, crd: dict[str, Any]) -> CrdServer:
        (version,) = crd["spec"]["versions"]
        return cls(version["schema"]["openAPIV3Schema"])

    def __post_init__(self) -> None:
        self._validator = jsonschema.Draft7Validator(strict_validation_schema(self.schema))
        # celpy.Environment() raises the interpreter-wide recursion limit to 2500 and
        # never lowers it again; other tests in the same process rely on the default.
        limit = sys.getrecursionlimit()
        try:
            env = celpy.Environment()
        finally:
            sys.setrecursionlimit(limit)
        for path, node in schema_nodes(self.schema):
            compiled = [
                _CompiledRule(
                    env.program(env.compile(rule["rule"]), functions=KUBERNETES_CEL_FUNCTIONS),
                    rule,
                    _program(env, rule.get("messageExpression")),
                )
                for rule in node.get("x-kubernetes-validations", ())
            ]
            if compiled:
                self._programs[path] = compiled

    def admit(self, obj: Any, *, messages: bool = False) -> Outcome:
        """The answer to creating `obj`; `messages` also evaluates each failed rule's
        messageExpression (slow in cel-python: seconds for a 64-item list)."""
        stored = copy.deepcopy(obj)
        prune_nulls(stored, self.schema)
        apply_defaults(stored, self.schema)
        errors = tuple(
            (_path(error.absolute_path), str(error.validator), error.message)
            for error in self._validator.iter_errors(stored)
        )
        if any(validator in BLOCKING for _, validator, _ in errors):
            return Outcome(stored, errors)
        causes = tuple(self._run_cel(stored, messages))
        failures = tuple((field, message) for field, message, _ in causes)
        return Outcome(
            stored,
            errors,
            failures,
            cel_ran=True,
            cel_causes=tuple(cause for _, _, cause in causes),
        )

    def _run_cel(
        self, stored: Any, messages: bool
    ) -> Iterator[tuple[str, str, tuple[str, str, str]]]:
        """(field, static message, kube-apiserver's cause) for each failed rule."""
        for path, programs in self._programs.items():
            value = _lookup(stored, path)
            if value is _MISSING:
                continue
            activation = {"self": celpy.json_to_cel(value)}
            for compiled in programs:
                result = compiled.program.evaluate(activation)
                if isinstance(result, celpy.CELEvalError):
                    error = f"error evaluating rule: {result}"
                    yield path, error, (_spec_path(path), "FieldValueInvalid", error)
                elif not bool(result):
                    yield compiled.failure(path, activation if messages else None)


def _index_of(items: Any, value: Any) -> Any:
    return celpy.celtypes.IntType(list(items).index(value) if value in items else -1)


def _last_index_of(items: Any, value: Any) -> Any:
    found = [index for index, item in enumerate(items) if item == value]
    return celpy.celtypes.IntType(found[-1] if found else -1)


def _replace(text: Any, old: Any, new: Any) -> Any:
    return celpy.celtypes.StringType(str(text).replace(str(old), str(new)))


# Kubernetes' CEL library functions the rules call (k8s.io/apiserver/pkg/cel/library,
# cel-go's strings extension); cel-python calls a member function with the target first.
KUBERNETES_CEL_FUNCTIONS = {
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    "replace": _replace,
}

# fieldErrorForReason: the field error each `reason` makes, as kubectl shows its body.
_REASON_BODIES = {
    "FieldValueRequired": "Required value: {detail}",
    "FieldValueForbidden": "Forbidden: {detail}",
    "FieldValueDuplicate": "Duplicate value",
    "FieldValueInvalid": "Invalid value: {detail}",
}


def _program(env: Any, source: str | None) -> Any:
    if not source:
        return None
    return env.program(env.compile(source), functions=KUBERNETES_CEL_FUNCTIONS)


def _spec_path(path: str) -> str:
    return path if path else "<nil>"


@dataclass(frozen=True)
class _CompiledRule:
    """One rule with its optional messageExpression, compiled."""

    program: Any
    rule: dict[str, Any]
    message_program: Any

    def failure(
        self, path: str, activation: dict[str, Any] | None
    ) -> tuple[str, str, tuple[str, str, str]]:
        field_path = ".".join(filter(None, [path, self.rule.get("fieldPath", "").lstrip(".")]))
        detail = self.rule["message"]
        if self.message_program is not None and activation is not None:
            evaluated = self.message_program.evaluate(activation)
            text = "" if isinstance(evaluated, celpy.CELEvalError) else str(evaluated).strip()
            if text and "\n" not in text:
                detail = text
        reason = self.rule.get("reason", "FieldValueInvalid")
        body = _REASON_BODIES[reason].format(detail=detail)
        return field_path, self.rule["message"], (field_path, reason, body)


def strict_validation_schema(node: Schema) -> Schema:
    """The structural schema plus what kube-apiserver checks outside OpenAPI.

    Unknown fields are errors (strict field validation) and `set` lists hold no
    duplicates (list-type validation); jsonschema needs both stated.
    """
    out = {key: value for key, value in node.items() if not key.startswith("x-kubernetes-")}
    if "properties" in node:
        out["properties"] = {k: strict_validation_schema(v) for k, v in node["properties"].items()}
        out["additionalProperties"] = False
    if "items" in node:
        out["items"] = strict_validation_schema(node["items"])
    if node.get("x-kubernetes-list-type") == "set":
        out["uniqueItems"] = True
    if node.get("type") == "object" and "properties" not in node:
        out.pop("additionalProperties", None)
    return out


def prune_nulls(value: Any, schema: Schema | None) -> None:
    if isinstance(value, dict):
        for key in list(value):
            child = (schema or {}).get("properties", {}).get(key)
            droppable = child is not None and "default" not in child and not child.get("nullable")
            if value[key] is None and droppable:
                del value[key]
                continue
            prune_nulls(value[key], child)
    elif isinstance(value, list):
        items = (schema or {}).get("items")
        for item in value:
            prune_nulls(item, items)


def apply_defaults(value: Any, schema: Schema | None) -> None:
    if schema is None:
        return
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for key, child in properties.items():
            if "default" in child and (key not in value or value[key] is None):
                value[key] = copy.deepcopy(child["default"])
        for key, item in value.items():
            apply_defaults(item, properties.get(key))
    elif isinstance(value, list):
        items = schema.get("items")
        for index, item in enumerate(value):
            if item is None and items is not None and "default" in items:
                value[index] = copy.deepcopy(items["default"])
            apply_defaults(value[index], items)


def schema_nodes(node: Schema, path: str = "") -> Iterator[tuple[str, Schema]]:
    """Every schema node reachable through properties (not items: no rule sits there)."""
    yield path, node
    for name, child in node.get("properties", {}).items():
        yield from schema_nodes(child, f"{path}.{name}" if path else name)


_MISSING = object()


def _lookup(value: Any, path: str) -> Any:
    for name in filter(None, path.split(".")):
        if not isinstance(value, dict) or name not in value:
            return _MISSING
        value = value[name]
    return value


def _path(parts: Any) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text
