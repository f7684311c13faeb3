"""What kube-apiserver checks before it stores an object, for the kinds the emulator serves.

Two stages, as in the real server:
- decoding: the body must decode into the Go type. ``metav1.MicroTime`` parses with layout
  ``2006-01-02T15:04:05.000000Z07:00`` (exactly six fractional digits, ``Z`` or ``±hh:mm``), so
  ``2026-11-30T12:00:00Z`` — what Python's ``isoformat()`` gives when microseconds are 0 — fails,
  and ``metav1.Time`` parses RFC 3339. A POST/PUT body that does not decode is a 400 BadRequest
  ("<Kind> in version "v1" cannot be handled as a <Kind>: ..."); a PATCH whose result does not
  decode is a 422 on the field ``patch``. Stored times are re-encoded as the Go types marshal them
  (UTC, ``Z``; MicroTime with six digits, Time with none).
- validation: object names are DNS-1123 subdomains ("Object Names and IDs"); Events follow
  ``ValidateEventCreate`` (the events.k8s.io/v1 required fields; ``type`` Normal or Warning; the
  involved object in the Event's own namespace).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from tests.support.emulator.errors import Cause, field_cause
from tests.support.emulator.resources import CORE_EVENTS, EVENTS_V1, LEASES, ResourceType
from webhook.rules.metadata import validate_metadata

MICRO_LAYOUT = "2006-01-02T15:04:05.000000Z07:00"
_MICRO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}(Z|[+-]\d{2}:\d{2})")
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")

# (path, is_micro) of every time field per resource.
_TIME_FIELDS: dict[str, tuple[tuple[tuple[str, ...], bool], ...]] = {
    LEASES.key: ((("spec", "acquireTime"), True), (("spec", "renewTime"), True)),
    CORE_EVENTS.key: (
        (("eventTime",), True),
        (("firstTimestamp",), False),
        (("lastTimestamp",), False),
        (("series", "lastObservedTime"), True),
    ),
    EVENTS_V1.key: (
        (("eventTime",), True),
        (("deprecatedFirstTimestamp",), False),
        (("deprecatedLastTimestamp",), False),
        (("series", "lastObservedTime"), True),
    ),
}
_INT_FIELDS: dict[str, tuple[tuple[str, ...], ...]] = {
    LEASES.key: (("spec", "leaseDurationSeconds"), ("spec", "leaseTransitions")),
    CORE_EVENTS.key: (("count",),),
    EVENTS_V1.key: (("deprecatedCount",),),
}


def _lookup(obj: Any, path: tuple[str, ...]) -> tuple[dict[str, Any] | None, Any]:
    node = obj
    for name in path[:-1]:
        node = node.get(name) if isinstance(node, dict) else None
    if isinstance(node, dict) and path[-1] in node:
        return node, node[path[-1]]
    return None, None


def _parse(text: str, micro: bool) -> datetime | None:
    pattern = _MICRO if micro else _RFC3339
    if not pattern.fullmatch(text):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def decode_problem(resource: ResourceType, obj: dict[str, Any]) -> str | None:
    """Why the Go decoder would refuse this body, or None; times are normalised in place."""
    for path, micro in _TIME_FIELDS.get(resource.key, ()):
        parent, value = _lookup(obj, path)
        if parent is None or value is None:
            continue
        parsed = _parse(value, micro) if isinstance(value, str) else None
        if parsed is None:
            layout = MICRO_LAYOUT if micro else "2006-01-02T15:04:05Z07:00"
            return f'parsing time "{value}" as "{layout}": cannot parse "{value}" as "{layout}"'
        utc = parsed.astimezone(UTC)
        parent[path[-1]] = (
            utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ") if micro else utc.strftime("%Y-%m-%dT%H:%M:%SZ")
        )
    for path in _INT_FIELDS.get(resource.key, ()):
        parent, value = _lookup(obj, path)
        if parent is not None and value is not None and (type(value) is not int):
            return (
                f"json: cannot unmarshal {type(value).__name__} into Go struct field of type int32"
            )
    return None


def decode_message(resource: ResourceType, problem: str) -> str:
    kind = resource.kind
    return f'{kind} in version "{resource.version}" cannot be handled as a {kind}: {problem}'


def name_causes(name: Any) -> list[Cause]:
    """The server's causes for `metadata.name`: the CLI's offline rule, which
    tests/kube/test_metadata_real.py holds word for word to kube-apiserver's (a name too long
    and malformed gets both; the value shown whole)."""
    return [
        field_cause(str(problem.type), problem.field, problem.message)
        for problem in validate_metadata({"name": name})
        if problem.field == "metadata.name"
    ]


def _required(obj: dict[str, Any], field: str) -> list[Cause]:
    if obj.get(field):
        return []
    return [field_cause("FieldValueRequired", field, "Required value")]


def event_causes(resource: ResourceType, obj: dict[str, Any], namespace: str) -> list[Cause]:
    """A subset of ``ValidateEventCreate`` large enough to catch a malformed Event."""
    causes: list[Cause] = []
    event_type = obj.get("type")
    if event_type not in (None, "", "Normal", "Warning"):
        causes.append(
            field_cause(
                "FieldValueNotSupported",
                "type",
                f'Unsupported value: "{event_type}": supported values: "Normal", "Warning"',
            )
        )
    involved_field = "regarding" if resource is EVENTS_V1 else "involvedObject"
    involved = obj.get(involved_field)
    involved_ns = involved.get("namespace") if isinstance(involved, dict) else None
    if involved_ns and involved_ns != namespace:
        causes.append(
            field_cause(
                "FieldValueInvalid",
                f"{involved_field}.namespace",
                f'Invalid value: "{involved_ns}": does not match event.namespace',
            )
        )
    if resource is EVENTS_V1:
        for field in ("eventTime", "reportingController", "reportingInstance", "action", "reason"):
            causes.extend(_required(obj, field))
    return causes
