"""The PATCH formats kube-apiserver accepts, applied to a JSON object.

Kubernetes imitated: "API Concepts: Patch" / ``kubectl patch`` types —
``application/merge-patch+json``
(RFC 7386 JSON Merge Patch: maps merge, ``null`` deletes, lists are replaced whole),
``application/json-patch+json`` (RFC 6902 JSON Patch, including ``test``; a patch that cannot be
applied is answered 422 through ``NewGenericServerResponse``), ``application/apply-patch+yaml``
(server-side apply, see fieldmanager.py) and ``application/strategic-merge-patch+json``, which
custom resources refuse with 415 because they have no Go struct tags to drive it ("Custom
Resources: ... strategic merge patch is not supported").

What the kubernetes Python client (v37) actually sends, read from ``client/rest.py`` and
``client/api/*_api.py``: ``patch_namespaced_custom_object[_status]`` defaults to
``application/merge-patch+json`` (``select_header_content_type`` picks the first type containing
"json" from ``[merge-patch+json, apply-patch+yaml]``); pass
``_content_type="application/apply-patch+yaml"`` for server-side apply (a dict body is sent as
JSON, which is YAML). With ``_content_type="application/json-patch+json"`` a list body is sent as
JSON Patch, but a dict body is silently re-labelled ``application/strategic-merge-patch+json`` by
``rest.py`` — which a custom resource answers with 415.
"""

from __future__ import annotations

from typing import Any

import yaml

from tests.support.emulator.errors import ApiError, bad_request, rejected_patch
from tests.support.emulator.jsonvalue import clone, decode_yaml
from tests.support.emulator.jsonvalue import decode_json as _decode_json

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
APPLY = "application/apply-patch+yaml"
STRATEGIC = "application/strategic-merge-patch+json"
CUSTOM_RESOURCE_TYPES = [JSON_PATCH, MERGE, APPLY]
BUILTIN_TYPES = [JSON_PATCH, MERGE, STRATEGIC, APPLY]


def media_type(header: str | None) -> str:
    """The Content-Type without parameters, as the patch handler compares it."""
    return (header or "").split(";", 1)[0].strip().lower()


def decode_json(body: bytes) -> Any:
    try:
        return _decode_json(body)
    except (ValueError, RecursionError) as error:
        raise bad_request(f"error decoding patch: {error}") from error


def decode_apply(body: bytes) -> dict[str, Any]:
    """An apply configuration is YAML (JSON is YAML); it must be one object."""
    try:
        parsed = decode_yaml(body)
    except (yaml.YAMLError, ValueError, RecursionError) as error:
        raise bad_request(f"error decoding YAML: {error}") from error
    if not isinstance(parsed, dict):
        raise bad_request(
            "couldn't get version/kind; json parse error: the apply configuration is not an object"
        )
    return parsed


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 section 2, literally."""
    if not isinstance(patch, dict):
        return clone(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for name, value in patch.items():
        if value is None:
            result.pop(name, None)
        else:
            result[name] = merge_patch(result.get(name), value)
    return result


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise bad_request(f"json patch: {name} must be a string, not {value!r}")
    return value


def _pointer(path: str) -> list[str]:
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise bad_request(f"invalid JSON pointer: {path!r}")
    if path == "":
        return []
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _index(container: list[Any], token: str, path: str, allow_end: bool) -> int:
    if allow_end and token == "-":
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise rejected_patch(f"invalid array index {token!r} in {path}")
    index = int(token)
    limit = len(container) if allow_end else len(container) - 1
    if index > limit:
        raise rejected_patch(f"array index out of bounds: {index} in {path}")
    return index


def _parent(doc: Any, tokens: list[str], path: str, op: str) -> tuple[Any, str]:
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, path, allow_end=False)]
        else:
            raise rejected_patch(
                f'{op} operation does not apply: doc is missing path: "{path}": missing value'
            )
    return node, tokens[-1]


def _get(doc: Any, path: str, op: str) -> Any:
    node = doc
    for token in _pointer(path):
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, path, allow_end=False)]
        else:
            raise rejected_patch(
                f'{op} operation does not apply: doc is missing path: "{path}": missing value'
            )
    return node


def _add(doc: Any, path: str, value: Any) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return clone(value)
    parent, last = _parent(doc, tokens, path, "add")
    if isinstance(parent, dict):
        parent[last] = clone(value)
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, path, allow_end=True), clone(value))
    else:
        raise rejected_patch(
            f'add operation does not apply: doc is missing path: "{path}": missing value'
        )
    return doc


def _remove(doc: Any, path: str) -> tuple[Any, Any]:
    tokens = _pointer(path)
    if not tokens:
        raise rejected_patch("unable to remove the whole document")
    parent, last = _parent(doc, tokens, path, "remove")
    if isinstance(parent, dict) and last in parent:
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_index(parent, last, path, allow_end=False))
    raise rejected_patch(f"Unable to remove nonexistent key: {last}: missing value")


def _replace(doc: Any, path: str, value: Any) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return clone(value)
    parent, last = _parent(doc, tokens, path, "replace")
    if isinstance(parent, dict) and last in parent:
        parent[last] = clone(value)
    elif isinstance(parent, list):
        parent[_index(parent, last, path, allow_end=False)] = clone(value)
    else:
        raise rejected_patch(
            f"replace operation does not apply: doc is missing key: {path}: missing value"
        )
    return doc


def json_patch(target: dict[str, Any], operations: Any) -> Any:
    """RFC 6902, all six operations; errors read like evanphx/json-patch's."""
    if not isinstance(operations, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    doc: Any = clone(target)
    for operation in operations:
        if not isinstance(operation, dict) or not isinstance(operation.get("op"), str):
            raise bad_request("Unexpected kind: missing op")
        op, path = operation["op"], _text(operation.get("path"), "path")
        if op in ("add", "replace", "test") and "value" not in operation:
            raise rejected_patch(f"{op} operation does not apply: missing value")
        if op == "add":
            doc = _add(doc, path, operation["value"])
        elif op == "remove":
            doc, _ = _remove(doc, path)
        elif op == "replace":
            doc = _replace(doc, path, operation["value"])
        elif op == "move":
            doc, value = _remove(doc, _text(operation.get("from"), "from"))
            doc = _add(doc, path, value)
        elif op == "copy":
            doc = _add(doc, path, _get(doc, _text(operation.get("from"), "from"), "copy"))
        elif op == "test":
            if _get(doc, path, "test") != operation["value"]:
                raise rejected_patch(f"testing value {path} failed: test failed")
        else:
            raise bad_request(f"Unexpected kind: {op}")
    return doc


def check_patch_options(patch_type: str, field_manager: str | None, force: str | None) -> None:
    """``validation.ValidatePatchOptions``: apply needs a manager; force is apply-only."""
    from tests.support.emulator.errors import field_cause, invalid

    causes = []
    if patch_type != APPLY and force is not None:
        causes.append(
            field_cause(
                "FieldValueForbidden",
                "force",
                "Forbidden: may not be specified for non-apply patch",
            )
        )
    if patch_type == APPLY and not field_manager:
        causes.append(
            field_cause(
                "FieldValueRequired", "fieldManager", "Required value: is required for apply patch"
            )
        )
    if field_manager and len(field_manager) > 128:
        causes.append(
            field_cause(
                "FieldValueTooLong", "fieldManager", "Too long: may not be more than 128 bytes"
            )
        )
    if causes:
        raise invalid("meta.k8s.io", "PatchOptions", "", causes)


__all__ = [
    "APPLY",
    "BUILTIN_TYPES",
    "CUSTOM_RESOURCE_TYPES",
    "JSON_PATCH",
    "MERGE",
    "STRATEGIC",
    "ApiError",
    "check_patch_options",
    "decode_apply",
    "decode_json",
    "json_patch",
    "media_type",
    "merge_patch",
]
