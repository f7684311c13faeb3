"""Small builders for test objects, shared by the emulator's tests and the status writer's."""

from __future__ import annotations

from typing import Any

GROUP = "agents.ctxmesh.ai"
VERSION = "v1beta1"
PLURAL = "feedbackstores"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "FeedbackStore"
APPLY_PATCH = "application/apply-patch+yaml"


def feedbackstore(
    name: str,
    namespace: str | None = None,
    spec: dict[str, Any] | None = None,
    conditions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A FeedbackStore body; ``conditions`` become ``status.conditions`` when given."""
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    body: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": metadata,
        "spec": spec if spec is not None else {"human": {"scores": [{"name": "thumbs"}]}},
    }
    if conditions is not None:
        body["status"] = {"conditions": conditions}
    return body


def condition(
    type_: str, status: str = "True", reason: str = "Fine", message: str = "", generation: int = 1
) -> dict[str, Any]:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


def status_apply(conditions: list[dict[str, Any]]) -> dict[str, Any]:
    """The apply configuration a status controller sends to ``/status``."""
    return {"apiVersion": API_VERSION, "kind": KIND, "status": {"conditions": conditions}}
