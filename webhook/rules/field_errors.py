"""Field errors in apimachinery's vocabulary (k8s.io/apimachinery/pkg/util/validation/field).

Users already read `spec.x: Required value` and `Unsupported value: "a":
supported values: ...` from kubectl; speaking the same language, with the same
machine-readable types as metav1.CauseType, means no new vocabulary to learn.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from webhook.rules.field_path import Path
from webhook.text import ELLIPSIS, cut

# A bad string value is shown as its first 64 characters and an ellipsis: a 1 MiB bad value
# must not become a 1 MiB error message.
SHOWN_VALUE = 64 + len(ELLIPSIS)


class ErrorType(enum.StrEnum):
    """metav1.CauseType values, as sent in Status.details.causes[].reason."""

    REQUIRED = "FieldValueRequired"
    INVALID = "FieldValueInvalid"
    DUPLICATE = "FieldValueDuplicate"
    NOT_SUPPORTED = "FieldValueNotSupported"
    TOO_LONG = "FieldValueTooLong"
    TOO_MANY = "FieldValueTooMany"
    TYPE_INVALID = "FieldValueTypeInvalid"
    FORBIDDEN = "FieldValueForbidden"


# field.ErrorType.String(): the words kubectl shows before the detail.
_TITLES = {
    ErrorType.REQUIRED: "Required value",
    ErrorType.INVALID: "Invalid value",
    ErrorType.DUPLICATE: "Duplicate value",
    ErrorType.NOT_SUPPORTED: "Unsupported value",
    ErrorType.TOO_LONG: "Too long",
    ErrorType.TOO_MANY: "Too many",
    ErrorType.TYPE_INVALID: "Invalid value",
    ErrorType.FORBIDDEN: "Forbidden",
}

# Types whose message never shows the bad value, as in apimachinery's ErrorBody.
_VALUE_OMITTED = frozenset({ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG})

_OMIT = object()


# The JSON/OpenAPI name of each type a JSON or YAML decoder builds, as schema errors name it.
_JSON_TYPES: dict[type, str] = {
    type(None): "null",
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    tuple: "array",
    dict: "object",
}


def json_type_name(value: object) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def format_value(value: object, *, whole: bool = False) -> str:
    """Render a bad value the way Go's %q / %v would, cut to a readable size unless `whole`."""
    if isinstance(value, str):
        return quote(value if whole else cut(value, SHOWN_VALUE))
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json_type_name(value)


# What `quote` escapes, in order; the CRD's CEL messages quote values with the
# same table (webhook/manifests/cel_rules.py), so both render a name alike.
GO_ESCAPES: tuple[tuple[str, str], ...] = (
    ("\\", "\\\\"),
    ('"', '\\"'),
    ("\n", "\\n"),
    ("\t", "\\t"),
    ("\r", "\\r"),
)


def quote(text: str) -> str:
    """Go-style double-quoted string (what %q prints for printable text)."""
    for raw, escaped in GO_ESCAPES:
        text = text.replace(raw, escaped)
    return f'"{text}"'


@dataclass(frozen=True, slots=True)
class Problem:
    """One field error: where, what kind, the offending value and why."""

    path: Path
    type: ErrorType
    bad_value: Any = _OMIT
    detail: str = ""
    # Shown whole where kube-apiserver shows it whole (an object's name), not cut.
    whole: bool = False

    @property
    def field(self) -> str:
        """The path as kube-apiserver prints it (`spec.human.scores[1].name`)."""
        return str(self.path)

    @property
    def message(self) -> str:
        """The error body kubectl prints after the field path."""
        text = _TITLES[self.type]
        if self.type not in _VALUE_OMITTED and self.bad_value is not _OMIT:
            text = f"{text}: {format_value(self.bad_value, whole=self.whole)}"
        if self.detail:
            text = f"{text}: {self.detail}"
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


@dataclass(frozen=True, slots=True)
class FieldWarning:
    """Allowed, but surprising: shown by kubectl as `Warning: ...`."""

    path: Path
    message: str

    @property
    def field(self) -> str:
        return str(self.path)

    def __str__(self) -> str:
        return f"{self.field}: {self.message}"


def required(path: Path, detail: str = "") -> Problem:
    return Problem(path, ErrorType.REQUIRED, detail=detail)


def invalid(path: Path, value: object, detail: str, *, whole: bool = False) -> Problem:
    return Problem(path, ErrorType.INVALID, value, detail, whole)


def duplicate(path: Path, value: object, detail: str = "") -> Problem:
    return Problem(path, ErrorType.DUPLICATE, value, detail)


def not_supported(path: Path, value: object, supported: tuple[str, ...]) -> Problem:
    listed = ", ".join(quote(s) for s in supported)
    return Problem(path, ErrorType.NOT_SUPPORTED, value, f"supported values: {listed}")


def too_long(path: Path, limit: int) -> Problem:
    return Problem(path, ErrorType.TOO_LONG, detail=f"may not be more than {limit} characters")


def too_many(path: Path, actual: int, limit: int) -> Problem:
    return Problem(path, ErrorType.TOO_MANY, actual, f"must have at most {limit} items")


def type_invalid(path: Path, value: object, expected: str) -> Problem:
    return Problem(
        path, ErrorType.TYPE_INVALID, json_type_name(value), f"must be of type {expected}"
    )


def unknown_field(path: Path, hint: Path | None = None) -> Problem:
    detail = f"unknown field {quote(str(path))}"
    if hint is not None:
        detail = f"{detail}; did you mean {quote(str(hint))}?"
    return Problem(path, ErrorType.FORBIDDEN, detail=detail)
