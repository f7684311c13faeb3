"""Turn a pydantic JSON schema into a Kubernetes structural schema.

kube-apiserver accepts only "structural" OpenAPI v3 schemas: every node has a
`type`, no `$ref`, no `anyOf` carrying types, no `additionalProperties`
beside `properties`, no `title`. Pydantic states optional fields as
`anyOf: [X, {type: null}]` with `default: null`; Kubernetes drops nulls on
decode, so such a field is simply X, not required. Unknown fields are left to
Kubernetes' pruning and strict field validation (kubectl's default), which is
why `additionalProperties: false` is dropped rather than translated.
"""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]

# JSON Schema keywords a structural schema may keep as they are.
_KEPT = (
    "type",
    "description",
    "enum",
    "default",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "pattern",
    "format",
)
_EXTENSION_PREFIX = "x-kubernetes-"


def structural_schema(json_schema: Schema) -> Schema:
    """The structural form of a pydantic `model_json_schema(by_alias=True)` document."""
    defs: dict[str, Schema] = json_schema.get("$defs", {})
    return _convert(json_schema, defs, depth=0)


def _convert(node: Schema, defs: dict[str, Schema], depth: int) -> Schema:
    if depth > 32:
        raise ValueError("schema nests too deeply (a recursive model cannot be a CRD schema)")
    node = _resolve(_collapse_optional(node), defs)
    out: Schema = {key: node[key] for key in _KEPT if key in node}
    out.update({key: value for key, value in node.items() if key.startswith(_EXTENSION_PREFIX)})
    if out.get("default", 0) is None:
        del out["default"]
    if "type" not in out:
        raise ValueError(f"schema node has no type: {sorted(node)}")
    if "properties" in node:
        out["properties"] = {
            name: _convert(child, defs, depth + 1) for name, child in node["properties"].items()
        }
        required = sorted(node.get("required", ()))
        if required:
            out["required"] = required
    if "items" in node:
        out["items"] = _convert(node["items"], defs, depth + 1)
    return out


def _collapse_optional(node: Schema) -> Schema:
    """`anyOf: [X, null]` plus siblings (description, default, extensions) becomes X + siblings."""
    branches = node.get("anyOf")
    if branches is None:
        return node
    typed = [branch for branch in branches if branch.get("type") != "null"]
    if len(typed) != 1:
        raise ValueError("only optional (X or null) unions can be expressed structurally")
    merged = {key: value for key, value in node.items() if key != "anyOf"}
    return {**typed[0], **merged}


def _resolve(node: Schema, defs: dict[str, Schema]) -> Schema:
    ref = node.get("$ref")
    if ref is None:
        return node
    name = ref.removeprefix("#/$defs/")
    if name not in defs:
        raise ValueError(f"unresolvable reference {ref}")
    siblings = {key: value for key, value in node.items() if key != "$ref"}
    return {**defs[name], **siblings}
