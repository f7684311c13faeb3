"""Small builders so rule tests read as the FeedbackStores they describe."""

from __future__ import annotations

from typing import Any


def score(name: object = "thumbs", **fields: object) -> dict[str, Any]:
    return {"name": name, **fields}


def channel(name: object = "csat-webhook", score_name: object = "csat", **fields: object) -> dict:
    return {"name": name, "score": score(score_name, **fields)}


def human(*scores: object) -> dict[str, Any]:
    return {"human": {"scores": list(scores)}}


def scores(count: int, prefix: str = "s") -> list[dict[str, Any]]:
    return [score(f"{prefix}{i}") for i in range(count)]


def channels(count: int) -> list[dict[str, Any]]:
    return [channel(f"channel-{i}", f"external-{i}") for i in range(count)]


def feedbackstore(spec: object, name: str = "support-feedback") -> dict[str, Any]:
    return {
        "apiVersion": "agents.ctxmesh.ai/v1beta1",
        "kind": "FeedbackStore",
        "metadata": {"name": name, "namespace": "agents"},
        "spec": spec,
    }
