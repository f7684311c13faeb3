"""A ValidatingAdmissionPolicy's variables and validations, evaluated offline by cel-python.

What kube-apiserver does with a policy that matched: each variable in order (bound to
`variables.<name>`), then each validation, and for a failed one its messageExpression (its
`message` when that is not a non-blank single line of at most 5 KiB). Fast enough for the
unit tests; the real server decides (tests/kube/test_policy_real.py).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any

import celpy
from celpy import celtypes

from tests.support.crd_apiserver import KUBERNETES_CEL_FUNCTIONS

# celconfig.MaxEvaluatedMessageExpressionSizeBytes
MAX_MESSAGE_BYTES = 5 * 1024


def _join(items: Any, separator: Any = "") -> Any:
    return celtypes.StringType(str(separator).join(str(item) for item in items))


def _split(text: Any, separator: Any) -> Any:
    return celtypes.ListType([celtypes.StringType(p) for p in str(text).split(str(separator))])


def _substring(text: Any, start: Any, end: Any = None) -> Any:
    value = str(text)
    return celtypes.StringType(value[int(start) :] if end is None else value[int(start) : int(end)])


def _sum(items: Any) -> Any:
    return celtypes.IntType(sum(int(item) for item in items))


FUNCTIONS = {
    **KUBERNETES_CEL_FUNCTIONS,
    "join": _join,
    "split": _split,
    "substring": _substring,
    "sum": _sum,
}


@dataclass(frozen=True)
class Evaluated:
    """The variables' values, and the message of each failed validation (in order)."""

    variables: dict[str, Any]
    failures: tuple[str, ...]


# Each variable is compiled once per expression text, and an object's variables are evaluated
# once per policy's variables: a policy under Deny and under Warn differs only in its
# validations, and cel-python takes seconds to parse a policy (about 100 KB of CEL) and to
# walk a long list through it.
_COMPILED: dict[str, Any] = {}
_EVALUATED: dict[tuple[tuple[tuple[str, str], ...], str], dict[str, Any]] = {}


def _environment() -> Any:
    limit = sys.getrecursionlimit()
    try:
        return celpy.Environment()
    finally:
        sys.setrecursionlimit(max(limit, 10_000))


def _program(source: str, env: Any) -> Any:
    if source not in _COMPILED:
        _COMPILED[source] = env.program(env.compile(source), functions=FUNCTIONS)
    return _COMPILED[source]


class PolicyProgram:
    def __init__(self, policy: dict[str, Any]) -> None:
        spec = policy["spec"]
        env = _environment()
        self.sources = tuple((v["name"], v["expression"]) for v in spec["variables"])
        self.variables = [(name, _program(source, env)) for name, source in self.sources]
        self.validations = [
            (
                _program(v["expression"], env),
                _program(v["messageExpression"], env) if v.get("messageExpression") else None,
                v.get("message", ""),
            )
            for v in spec["validations"]
        ]

    def evaluate(self, obj: Any, old: Any = None, operation: str = "CREATE") -> Evaluated:
        activation: dict[str, Any] = {
            "object": celpy.json_to_cel(obj),
            "oldObject": celpy.json_to_cel(old),
            "request": celpy.json_to_cel({"operation": operation}),
        }
        key = (self.sources, json.dumps([obj, old, operation]))
        if key not in _EVALUATED:
            _EVALUATED[key] = self._variables(activation)
        values = _EVALUATED[key]
        activation["variables"] = celtypes.MapType(
            {celtypes.StringType(k): v for k, v in values.items()}
        )
        failures = []
        for expression, message_expression, message in self.validations:
            result = expression.evaluate(activation)
            if isinstance(result, celpy.CELEvalError):
                raise AssertionError(f"validation: {result}")
            if bool(result):
                continue
            text = ""
            if message_expression is not None:
                said = message_expression.evaluate(activation)
                if isinstance(said, celpy.CELEvalError):
                    raise AssertionError(f"messageExpression: {said}")
                text = str(said).strip()
                if len(text.encode()) > MAX_MESSAGE_BYTES or "\n" in text:
                    text = ""
            failures.append(text or message.strip())
        return Evaluated(values, tuple(failures))

    def _variables(self, activation: dict[str, Any]) -> dict[str, Any]:
        """Each variable in order, bound to `variables.<name>` for those after it."""
        values: dict[str, Any] = {}
        for name, compiled in self.variables:
            activation["variables"] = celtypes.MapType(
                {celtypes.StringType(k): v for k, v in values.items()}
            )
            result = compiled.evaluate(activation)
            if isinstance(result, celpy.CELEvalError):
                raise AssertionError(f"variable {name}: {result}")
            values[name] = result
        return values
