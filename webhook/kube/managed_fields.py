"""Who owns which field of one condition, read from `metadata.managedFields` (FieldsV1).

A condition is an item of the list map `status.conditions` keyed by `type`; FieldsV1 names it
`k:{"type":"<type>"}` under `f:status` / `f:conditions`, and each of its fields `f:<name>` (the
item itself is `.`). Whoever owns any of them writes that condition too. Read tolerant of any
shape, as everything in `objects`; knows nothing of any resource.
"""

from __future__ import annotations

import json
from typing import Any, Final, NamedTuple

from webhook.kube.objects import metadata_of

APPLY: Final = "Apply"  # metav1.ManagedFieldsOperationApply; the other operation is "Update"


class Owner(NamedTuple):
    """One `managedFields` entry's identity: kube-apiserver keeps one per manager and operation."""

    manager: str
    operation: str


def _item(fields: object, condition_type: str) -> dict[str, Any] | None:
    """The FieldsV1 of the `condition_type` item, in one entry's `fieldsV1`."""
    status = fields.get("f:status") if isinstance(fields, dict) else None
    conditions = status.get("f:conditions") if isinstance(status, dict) else None
    if not isinstance(conditions, dict):
        return None
    for segment, item in conditions.items():
        if not segment.startswith("k:") or not isinstance(item, dict):
            continue
        try:
            key = json.loads(segment[2:])
        except ValueError:
            continue
        if key == {"type": condition_type}:
            return item
    return None


def _entries(obj: object) -> list[dict[str, Any]]:
    entries = metadata_of(obj).get("managedFields")
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def condition_owners(obj: object, condition_type: str) -> dict[Owner, frozenset[str]]:
    """Each owner of part of the condition, with the field names it owns (`.`: the item)."""
    owners: dict[Owner, frozenset[str]] = {}
    for entry in _entries(obj):
        item = _item(entry.get("fieldsV1"), condition_type)
        if not item:
            continue
        owner = Owner(str(entry.get("manager", "")), str(entry.get("operation", "")))
        names = frozenset(s[2:] if s.startswith("f:") else s for s in item)
        owners[owner] = owners.get(owner, frozenset()) | names
    return owners


def keep_condition_ownership(obj: dict[str, Any], condition_type: str) -> None:
    """Cut `managedFields` down to what `condition_owners` reads for this condition type.

    For a cache: the rest of `managedFields` is half of a decoded object (weighed by
    bench/controlplane/writer.py) and nobody reads it; what is left keeps the API's shape, so
    the same reader works on either.
    """
    metadata = metadata_of(obj)
    if "managedFields" not in metadata:
        return
    kept = []
    for entry in _entries(obj):
        item = _item(entry.get("fieldsV1"), condition_type)
        if item:
            segment = "k:" + json.dumps({"type": condition_type}, separators=(",", ":"))
            fields = {"f:status": {"f:conditions": {segment: item}}}
            names = ("manager", "operation", "subresource")
            identity: dict[str, Any] = {k: entry[k] for k in names if k in entry}
            kept.append({**identity, "fieldsType": "FieldsV1", "fieldsV1": fields})
    if kept:
        metadata["managedFields"] = kept
    else:
        del metadata["managedFields"]
