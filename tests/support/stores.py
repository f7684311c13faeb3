"""The example FeedbackStores the tests share: one valid spec, one invalid for one reason, and
what a person reads of each, word for word (a condition's message, or the same problem declared
inline in an AgentDeployment's `spec.feedback`)."""

from __future__ import annotations

from typing import Any

VALID: dict[str, Any] = {"human": {"scores": [{"name": "thumbs", "dataType": "BOOLEAN"}]}}
INVALID: dict[str, Any] = {"human": {"scores": [{"name": "thumbs"}, {"name": "thumbs"}]}}
VALID_MESSAGE = "feedback store spec is coherent"
INVALID_MESSAGE = (
    'spec.human.scores[1].name: Duplicate value: "thumbs": human score names must be unique '
    "(first declared at spec.human.scores[0].name)"
)
INLINE_INVALID_MESSAGE = (
    'spec.feedback is invalid: spec.feedback.human.scores[1].name: Duplicate value: "thumbs": '
    "human score names must be unique (first declared at spec.feedback.human.scores[0].name)"
)


def fs(name: str, spec: object, **metadata: Any) -> dict[str, Any]:
    """A FeedbackStore object with `spec` (any value, for hostile ones) and `metadata` beside
    its name."""
    return {
        "apiVersion": "agents.ctxmesh.ai/v1beta1",
        "kind": "FeedbackStore",
        "metadata": {"name": name, **metadata},
        "spec": spec,
    }
