"""The FeedbackStore CRD, built from the rules: a structural schema from the pydantic model, the
`status` conditions schema, and the CEL rules of `cel_rules`, so the fourth place the verdict is
enforced (beside the webhook, the status writer and `validate`) cannot drift from the
other three."""

from __future__ import annotations

from typing import Any

from webhook.manifests.cel_rules import SPEC_RULES
from webhook.rules import api, inuse
from webhook.rules.model import FeedbackStoreSpec

Schema = dict[str, Any]
PART_OF = "feedbackstore-webhook"
_VALIDATED = f'.status.conditions[?(@.type=="{api.CONDITION_TYPE}")]'
_IN_USE = f'.status.conditions[?(@.type=="{inuse.CONDITION_TYPE}")]'
# JSON Schema keywords a structural schema may keep as they are, in the order they are written.
_KEPT = ("type", "description", "enum", "default", "minLength", "maxLength", "minItems",
         "maxItems", "minimum", "maximum", "pattern", "format")  # fmt: skip
# Validation limits of metav1.Condition (k8s.io/apimachinery/pkg/apis/meta/v1/types.go).
_TYPE_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
_REASON_PATTERN = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"


def spec_schema(*, cel: bool = True) -> Schema:
    """The schema of `spec`, with the CEL rules unless `cel=False` (the platform's CRD today).

    Lists stay atomic, not maps keyed by `name` (tests/kube/test_crd_real.py): kube-apiserver
    refuses a duplicate key without the platform's words (under server-side apply: HTTP 500 before
    validation), a merge would keep a score another manager added, and `score.name` is no key."""
    schema = structural_schema(FeedbackStoreSpec.model_json_schema(by_alias=True))
    for rule in SPEC_RULES if cel else ():
        node = schema
        for name in filter(None, rule.at.split(".")):
            node = node["properties"][name]
        node.setdefault("x-kubernetes-validations", []).append(rule.validation())
    return schema


def structural_schema(json_schema: Schema) -> Schema:
    """A pydantic `model_json_schema(by_alias=True)` as kube-apiserver accepts it: every node
    typed, no `$ref`, no typed `anyOf`, no `title`. An optional `anyOf: [X, null]` is X, as
    Kubernetes drops nulls; `additionalProperties: false` goes, left to pruning and strict
    field validation."""
    return _convert(json_schema, json_schema.get("$defs", {}), depth=0)


def _convert(node: Schema, defs: dict[str, Schema], depth: int) -> Schema:
    if depth > 32:
        raise ValueError("schema nests too deeply (a recursive model cannot be a CRD schema)")
    node = _resolve(_collapse_optional(node), defs)
    out: Schema = {key: node[key] for key in _KEPT if key in node}
    out.update({key: value for key, value in node.items() if key.startswith("x-kubernetes-")})
    if out.get("default", 0) is None:
        del out["default"]
    if "type" not in out:
        raise ValueError(f"schema node has no type: {sorted(node)}")
    if "properties" in node:
        out["properties"] = {
            name: _convert(child, defs, depth + 1) for name, child in node["properties"].items()
        }
        if required := sorted(node.get("required", ())):
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


def status_schema() -> Schema:
    """Upstream metav1.Condition's own schema, as controller-gen emits it: other controllers add
    conditions beside `Validated`, and a map keyed by `type` lets server-side apply merge them."""
    condition = {
        "type": "object",
        "description": "One aspect of the object's current state (metav1.Condition).",
        "required": ["lastTransitionTime", "message", "reason", "status", "type"],
        "properties": {
            "type": {"type": "string", "maxLength": 316, "pattern": _TYPE_PATTERN},
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
            "lastTransitionTime": {"type": "string", "format": "date-time"},
            "reason": {
                "type": "string",
                "minLength": 1,
                "maxLength": 1024,
                "pattern": _REASON_PATTERN,
            },
            "message": {"type": "string", "maxLength": 32768},
        },
    }
    return {
        "type": "object",
        "description": "Written by the status writer; `Validated` mirrors the webhook's verdict.",
        "properties": {
            "conditions": {
                "type": "array",
                "description": "Conditions by type; the status writer owns `Validated`.",
                "items": condition,
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["type"],
            }
        },
    }


def root_schema(*, cel: bool = True) -> Schema:
    return {
        "type": "object",
        "description": (
            "Which feedback score names an agent accepts and from which source "
            "(a human channel or an external channel)."
        ),
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec_schema(cel=cel),
            "status": status_schema(),
        },
    }


def printer_columns() -> list[dict[str, Any]]:
    return [
        {"name": "Mode", "type": "string", "jsonPath": ".spec.mode"},
        {"name": "Validated", "type": "string", "jsonPath": f"{_VALIDATED}.status"},
        {"name": "Reason", "type": "string", "jsonPath": f"{_VALIDATED}.reason", "priority": 1},
        {"name": "In Use", "type": "string", "jsonPath": f"{_IN_USE}.status"},
        {"name": "Agents", "type": "string", "jsonPath": f"{_IN_USE}.message", "priority": 1},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]


def crd_manifest(*, cel: bool = True) -> Schema:
    """The whole CRD object, ready to serialise (built afresh on every call)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": api.CRD_NAME, "labels": {"app.kubernetes.io/part-of": PART_OF}},
        "spec": {
            "group": api.GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": api.KIND,
                "listKind": f"{api.KIND}List",
                "plural": api.PLURAL,
                "singular": api.SINGULAR,
                "shortNames": list(api.SHORT_NAMES),
                "categories": list(api.CATEGORIES),
            },
            "versions": [
                {
                    "name": api.VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": printer_columns(),
                    "schema": {"openAPIV3Schema": root_schema(cel=cel)},
                }
            ],
        },
    }
