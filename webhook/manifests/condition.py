"""The OpenAPI schema of `status`: conditions in metav1.Condition's shape.

This is the upstream Condition type's own schema (the one controller-gen
emits for `[]metav1.Condition`), not a rule of ours: other controllers may
add their own conditions next to `Validated`, and they expect this shape. The
list is a map keyed by `type`, so server-side apply merges each controller's
condition without clobbering the others'.
"""

from __future__ import annotations

from typing import Any

# Validation limits of metav1.Condition (k8s.io/apimachinery/pkg/apis/meta/v1/types.go).
_TYPE_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
_REASON_PATTERN = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"


def status_schema() -> dict[str, Any]:
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
            },
        },
    }
