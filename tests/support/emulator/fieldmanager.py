"""Field ownership for server-side apply: who set which field, and when an apply conflicts.

Kubernetes imitated: "Server-Side Apply" — *Field management* (every field has managers recorded
in ``metadata.managedFields`` as FieldsV1), *Conflicts* (an apply that would change a field owned
by another manager fails with 409 and one ``FieldManagerConflict`` cause per field, unless
``force=true``, which transfers ownership), *Merge strategy* (maps merge per key, lists are
atomic unless the schema marks them ``x-kubernetes-list-type: map`` — merged per item by key —
or ``set``), and the rule that a field a manager stops applying is removed when nobody else owns
it. A non-apply write (PUT, merge/JSON patch) is an ``Update`` operation: its manager takes every
field whose value it changed, taking it away from everyone else, as structured-merge-diff does.

Deliberately simpler than structured-merge-diff: ownership is tracked for leaf fields and
list-map items (not for intermediate maps), nulls in an applied configuration are treated as
absent, and there is no per-version conversion of field sets (every resource has one version).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tests.support.emulator.errors import ApiError, status_body
from tests.support.emulator.jsonvalue import clone
from tests.support.emulator.resources import ResourceType

FieldPath = tuple[str, ...]  # FieldsV1 segments: "f:name", "k:{json key}", "v:json value"
SchemaPath = tuple[str, ...]  # field names only (list items are transparent)
ManagerKey = tuple[str, str, str]  # (manager, operation, subresource)

_ITEM = object()  # value recorded for a list-map item node (".") — present or not, never "changed"
_META_FIELDS = ("labels", "annotations", "finalizers", "ownerReferences")


def _key_segment(item: dict[str, Any], keys: tuple[str, ...]) -> str:
    return "k:" + json.dumps({k: item.get(k) for k in keys}, separators=(",", ":"), sort_keys=True)


def _walk(
    value: Any,
    spath: SchemaPath,
    path: FieldPath,
    resource: ResourceType,
    out: dict[FieldPath, Any],
) -> None:
    if isinstance(value, dict):
        if not value and path:
            out[path] = {}
        for name, child in value.items():
            _walk(child, (*spath, name), (*path, f"f:{name}"), resource, out)
        return
    if isinstance(value, list) and spath in resource.list_map_keys:
        keys = resource.list_map_keys[spath]
        if all(isinstance(item, dict) for item in value):
            for item in value:
                item_path = (*path, _key_segment(item, keys))
                out[item_path] = _ITEM
                for name, child in item.items():
                    _walk(child, (*spath, name), (*item_path, f"f:{name}"), resource, out)
            return
    if isinstance(value, list) and spath in resource.list_sets:
        for item in value:
            out[(*path, "v:" + json.dumps(item, separators=(",", ":"), sort_keys=True))] = item
        return
    out[path] = value


def flatten(obj: dict[str, Any], resource: ResourceType) -> dict[FieldPath, Any]:
    """Every owned-able field of an object (leaves and list-map items) with its value."""
    out: dict[FieldPath, Any] = {}
    for name, value in obj.items():
        if name in ("apiVersion", "kind"):
            continue
        if name == "metadata":
            meta = value if isinstance(value, dict) else {}
            for meta_name in _META_FIELDS:
                if meta_name in meta:
                    _walk(
                        meta[meta_name],
                        ("metadata", meta_name),
                        ("f:metadata", f"f:{meta_name}"),
                        resource,
                        out,
                    )
            continue
        _walk(value, (name,), (f"f:{name}",), resource, out)
    return out


def in_scope(path: FieldPath, subresource: str, resource: ResourceType) -> bool:
    """Fields a request may set: /status owns only status; the main resource everything else.

    Imitates the CRD strategies' ResetFieldsFor ("Custom Resources: Status subresource").
    """
    if not resource.status_subresource:
        return True
    is_status = bool(path) and path[0] == "f:status"
    return is_status if subresource == "status" else not is_status


def changed_paths(old: dict[FieldPath, Any], new: dict[FieldPath, Any]) -> set[FieldPath]:
    changed = {p for p in old.keys() ^ new.keys()}
    changed.update(p for p in old.keys() & new.keys() if old[p] is not new[p] and old[p] != new[p])
    return changed


def format_path(path: FieldPath) -> str:
    """structured-merge-diff's Path.String(): ``.status.conditions[type="Validated"].status``."""
    parts: list[str] = []
    for segment in path:
        kind, text = segment[:2], segment[2:]
        if kind == "f:":
            parts.append("." + text)
        elif kind == "k:":
            key = json.loads(text)
            parts.append("[" + ",".join(f"{k}={json.dumps(v)}" for k, v in key.items()) + "]")
        else:
            parts.append(f"[={text}]")
    return "".join(parts)


def render_fields(paths: Iterable[FieldPath]) -> dict[str, Any]:
    """FieldsV1: nested segments; a list-map item owned as a whole carries a "." member."""
    tree: dict[str, Any] = {}
    for path in sorted(paths):
        node = tree
        for segment in path:
            node = node.setdefault(segment, {})
        if path and path[-1].startswith("k:"):
            node["."] = {}
    return tree


@dataclass
class Ownership:
    """The managedFields of one object, kept as sets for arithmetic and rendered on write."""

    entries: dict[ManagerKey, set[FieldPath]] = field(default_factory=dict)
    times: dict[ManagerKey, str] = field(default_factory=dict)

    def copy(self) -> Ownership:
        return Ownership({k: set(v) for k, v in self.entries.items()}, dict(self.times))

    def prune(self, existing: dict[FieldPath, Any]) -> None:
        for key in list(self.entries):
            self.entries[key] &= existing.keys()
            if not self.entries[key]:
                del self.entries[key]
                self.times.pop(key, None)

    def render(self, api_version: str) -> list[dict[str, Any]]:
        rendered = []
        for key, paths in self.entries.items():
            manager, operation, subresource = key
            entry: dict[str, Any] = {
                "manager": manager,
                "operation": operation,
                "apiVersion": api_version,
                "time": self.times[key],
                "fieldsType": "FieldsV1",
                "fieldsV1": render_fields(paths),
            }
            if subresource:
                entry["subresource"] = subresource
            rendered.append(entry)
        return rendered


def record_update(
    ownership: Ownership,
    old: dict[str, Any] | None,
    new: dict[str, Any],
    resource: ResourceType,
    key: ManagerKey,
    now: str,
) -> Ownership:
    """An Update operation: the writer owns what it changed; nobody else keeps those fields."""
    result = ownership.copy()
    old_flat = flatten(old, resource) if old is not None else {}
    new_flat = flatten(new, resource)
    changed = changed_paths(old_flat, new_flat)
    for other, paths in result.entries.items():
        if other != key:
            paths -= changed
    taken = {p for p in changed if p in new_flat}
    if taken:
        result.entries.setdefault(key, set()).update(taken)
        result.times[key] = now
    result.prune(new_flat)
    return result


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def _merge(live: Any, applied: Any, spath: SchemaPath, resource: ResourceType) -> Any:
    if isinstance(live, dict) and isinstance(applied, dict):
        merged = dict(live)
        for name, value in applied.items():
            merged[name] = (
                _merge(live[name], value, (*spath, name), resource)
                if name in live
                else clone(value)
            )
        return merged
    if isinstance(live, list) and isinstance(applied, list):
        keys = resource.list_map_keys.get(spath)
        if keys and all(isinstance(i, dict) for i in live + applied):
            result = list(live)
            index = {_key_segment(item, keys): i for i, item in enumerate(live)}
            for item in applied:
                segment = _key_segment(item, keys)
                if segment in index:
                    result[index[segment]] = _merge(result[index[segment]], item, spath, resource)
                else:
                    index[segment] = len(result)
                    result.append(clone(item))
            return result
        if spath in resource.list_sets:
            return list(live) + [clone(i) for i in applied if i not in live]
    return clone(applied)


def _remove(obj: Any, path: FieldPath, resource: ResourceType) -> None:
    """Delete one field or list item from an object, if it is still there."""
    node = obj
    spath: SchemaPath = ()
    for depth, segment in enumerate(path):
        last = depth == len(path) - 1
        kind, text = segment[:2], segment[2:]
        if kind == "f:":
            if not isinstance(node, dict) or text not in node:
                return
            spath = (*spath, text)
            if last:
                del node[text]
                return
            node = node[text]
        elif kind == "k:":
            keys = resource.list_map_keys.get(spath, ())
            if not isinstance(node, list):
                return
            match = [
                i
                for i, it in enumerate(node)
                if isinstance(it, dict) and _key_segment(it, keys) == segment
            ]
            if not match:
                return
            if last:
                del node[match[0]]
                return
            node = node[match[0]]
        else:
            if isinstance(node, list) and last:
                value = json.loads(text)
                if value in node:
                    node.remove(value)
            return


def _is_item_key_field(path: FieldPath) -> bool:
    """A key field of a list-map item goes only with its item (it names the item)."""
    if len(path) < 2 or not path[-2].startswith("k:") or not path[-1].startswith("f:"):
        return False
    return path[-1][2:] in json.loads(path[-2][2:])


def _scoped(obj: dict[str, Any], subresource: str, resource: ResourceType) -> dict[str, Any]:
    """The part of an applied configuration this endpoint may set (the rest is reset)."""
    if not resource.status_subresource:
        return obj
    if subresource == "status":
        return {k: v for k, v in obj.items() if k in ("apiVersion", "kind", "status")}
    return {k: v for k, v in obj.items() if k != "status"}


@dataclass(frozen=True)
class ApplyResult:
    obj: dict[str, Any]
    ownership: Ownership


def apply(
    live: dict[str, Any],
    ownership: Ownership,
    applied: dict[str, Any],
    resource: ResourceType,
    manager: str,
    subresource: str,
    force: bool,
    now: str,
) -> ApplyResult:
    """Server-side apply of ``applied`` by ``manager`` onto ``live`` (see the module docstring)."""
    config = _scoped(_drop_nulls(applied), subresource, resource)
    config_meta = config.get("metadata")
    if isinstance(config_meta, dict):
        config = {**config, "metadata": {k: v for k, v in config_meta.items() if k in _META_FIELDS}}
    key: ManagerKey = (manager, "Apply", subresource)
    config_flat = flatten(config, resource)
    # _merge shares unchanged subtrees with its first argument: give it a private copy, so
    # nothing done to the result can reach the stored object (or the watch history).
    body = {k: v for k, v in config.items() if k not in ("apiVersion", "kind")}
    merged = _merge(clone(live), body, (), resource)
    others = set().union(*(p for k, p in ownership.entries.items() if k != key))
    # Shortest first: an item goes as a whole before its own fields are looked up.
    for path in sorted(ownership.entries.get(key, set()) - config_flat.keys() - others, key=len):
        if not _is_item_key_field(path):
            _remove(merged, path, resource)
    live_flat = flatten(live, resource)
    merged_flat = flatten(merged, resource)
    contested = changed_paths(live_flat, merged_flat) & config_flat.keys()
    conflicts = [
        (other, path)
        for other, paths in ownership.entries.items()
        if other != key
        for path in sorted(paths & contested)
    ]
    if conflicts and not force:
        raise _conflict_error(conflicts, resource.api_version)
    result = ownership.copy()
    for other, paths in result.entries.items():
        if other != key:
            paths -= contested
    result.entries[key] = set(config_flat.keys())
    result.times[key] = now
    result.prune(merged_flat)
    if key not in result.entries:
        result.entries[key] = set()
        result.times[key] = now
    return ApplyResult(merged, result)


def _print_manager(key: ManagerKey, api_version: str) -> str:
    """fieldmanager's printManager: name, subresource, and "using <apiVersion>" for Updates."""
    manager, operation, subresource = key
    text = json.dumps(manager)
    if subresource:
        text += f" with subresource {json.dumps(subresource)}"
    if operation == "Update":
        text += f" using {api_version}"
    return text


def _conflict_error(conflicts: list[tuple[ManagerKey, FieldPath]], api_version: str) -> ApiError:
    """``errors.NewApplyConflict`` with fieldmanager's conflict message."""
    causes = [
        {
            "reason": "FieldManagerConflict",
            "message": f"conflict with {_print_manager(key, api_version)}",
            "field": format_path(path),
        }
        for key, path in conflicts
    ]
    if len(conflicts) == 1:
        key, path = conflicts[0]
        message = (
            f"Apply failed with 1 conflict: conflict with {_print_manager(key, api_version)}: "
            f"{format_path(path)}"
        )
    else:
        lines: list[str] = []
        for key in sorted({k for k, _ in conflicts}):
            lines.append(f"conflicts with {_print_manager(key, api_version)}:")
            lines.extend(f"- {format_path(p)}" for k, p in conflicts if k == key)
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return ApiError(status_body(409, "Conflict", message, {"causes": causes}))
