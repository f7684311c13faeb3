"""Who owns which field of one condition, read from `metadata.managedFields` (FieldsV1).

A condition is an item of the list map `status.conditions` keyed by `type`; FieldsV1 names it
`k:{"type":"<type>"}` under `f:status` / `f:conditions`, and each of its fields `f:<name>` (the
item itself is `.`). Whoever owns any of them writes that condition too. A finalizer is an item
of the set `metadata.finalizers`, named `v:"<finalizer>"`. Read tolerant of any shape, as
everything in `objects`; knows nothing of any resource.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Final, NamedTuple

from webhook.kube.objects import metadata_of

APPLY: Final = "Apply"  # metav1.ManagedFieldsOperationApply; the other operation is "Update"


class Owner(NamedTuple):
    """One `managedFields` entry's identity: kube-apiserver keeps one per manager and operation."""

    manager: str
    operation: str


def _members(fields: object, *path: str) -> dict[str, Any]:
    """The FieldsV1 under `path` (`f:` segments) of one entry's `fieldsV1`; empty when absent."""
    for segment in path:
        fields = fields.get(segment) if isinstance(fields, dict) else None
    return fields if isinstance(fields, dict) else {}


def _keyed(members: dict[str, Any], prefix: str) -> Iterator[tuple[Any, dict[str, Any]]]:
    """Each `k:`/`v:` member's decoded key or value, with its FieldsV1."""
    for segment, item in members.items():
        if not segment.startswith(prefix) or not isinstance(item, dict):
            continue
        try:
            yield json.loads(segment[len(prefix) :]), item
        except ValueError:
            continue


def _condition_items(fields: object) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each condition item in one entry's `fieldsV1`: its type and its FieldsV1."""
    for key, item in _keyed(_members(fields, "f:status", "f:conditions"), "k:"):
        if isinstance(key, dict) and set(key) == {"type"} and isinstance(key["type"], str):
            yield key["type"], item


def _item(fields: object, condition_type: str) -> dict[str, Any] | None:
    """The FieldsV1 of the `condition_type` item, in one entry's `fieldsV1`."""
    return next((item for kind, item in _condition_items(fields) if kind == condition_type), None)


def _entries(obj: object) -> list[dict[str, Any]]:
    entries = metadata_of(obj).get("managedFields")
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def _owner(entry: dict[str, Any]) -> Owner:
    return Owner(str(entry.get("manager", "")), str(entry.get("operation", "")))


def owned_conditions(obj: object, owner: Owner) -> tuple[str, ...]:
    """The types of the conditions of which `owner` owns any part, in its entries' order."""
    found: dict[str, None] = {}
    for entry in _entries(obj):
        if _owner(entry) == owner:
            found.update(
                (kind, None) for kind, item in _condition_items(entry.get("fieldsV1")) if item
            )
    return tuple(found)


def finalizer_owners(obj: object, finalizer: str) -> frozenset[Owner]:
    """Who owns the `finalizer` item of `metadata.finalizers`."""
    return frozenset(
        _owner(entry)
        for entry in _entries(obj)
        for value, _ in _keyed(_members(entry.get("fieldsV1"), "f:metadata", "f:finalizers"), "v:")
        if value == finalizer
    )


def owned_part(condition: dict[str, Any], owned: frozenset[str]) -> dict[str, Any]:
    """The fields of `condition` named in `owned` (as `condition_owners` gives them), at their
    values, and its `type`: applied again by their owner, it changes and removes nothing."""
    kept = {name: condition[name] for name in sorted(owned) if name in condition}
    return {**kept, "type": condition.get("type")}


def condition_owners(obj: object, condition_type: str) -> dict[Owner, frozenset[str]]:
    """Each owner of part of the condition, with the field names it owns (`.`: the item)."""
    owners: dict[Owner, frozenset[str]] = {}
    for entry in _entries(obj):
        item = _item(entry.get("fieldsV1"), condition_type)
        if not item:
            continue
        owner = _owner(entry)
        names = frozenset(s[2:] if s.startswith("f:") else s for s in item)
        owners[owner] = owners.get(owner, frozenset()) | names
    return owners


def condition_ownership(obj: object, condition_type: str) -> list[dict[str, Any]]:
    """`managedFields` cut down to what `condition_owners` reads for this condition type: each
    entry that owns part of it, with only that part. The cut keeps the API's shape, so the same
    readers work on either; a cache keeps this rather than the whole list (half of a decoded
    object, weighed by bench/controlplane/writer.py).
    """
    segment = "k:" + json.dumps({"type": condition_type}, separators=(",", ":"))
    kept = []
    for entry in _entries(obj):
        item = _item(entry.get("fieldsV1"), condition_type)
        if item:
            fields = {"f:status": {"f:conditions": {segment: item}}}
            names = ("manager", "operation", "subresource")
            identity: dict[str, Any] = {k: entry[k] for k in names if k in entry}
            kept.append({**identity, "fieldsType": "FieldsV1", "fieldsV1": fields})
    return kept
