"""The three AdmissionReview bodies the benchmark posts, written as JSON files.

- small-valid: a CREATE as `kubectl apply` sends it (last-applied annotation,
  managedFields), three human scores and one external channel, ~2 KB;
- small-invalid: the same with one score name declared twice (denied);
- maximal: the largest valid FeedbackStore, 64 human scores x 64 categories
  and 32 external channels, ~120 KB.

Run: python bench/admission/payloads.py OUT_DIR
"""

from __future__ import annotations

import copy
import json
import pathlib
import sys
from typing import Any

GROUP = "agents.ctxmesh.ai"


def review(obj: dict[str, Any]) -> dict[str, Any]:
    gvk = {"group": GROUP, "version": "v1beta1", "kind": "FeedbackStore"}
    gvr = {"group": GROUP, "version": "v1beta1", "resource": "feedbackstores"}
    return {
        "kind": "AdmissionReview",
        "apiVersion": "admission.k8s.io/v1",
        "request": {
            "uid": "2b5c8a3e-7d41-4f0e-9c6a-1e2f3a4b5c6d",
            "kind": gvk,
            "resource": gvr,
            "requestKind": gvk,
            "requestResource": gvr,
            "name": obj["metadata"]["name"],
            "namespace": obj["metadata"]["namespace"],
            "operation": "CREATE",
            "userInfo": {
                "username": "kubernetes-admin",
                "groups": ["kubeadm:cluster-admins", "system:authenticated"],
                "extra": {"authentication.kubernetes.io/credential-id": ["X509SHA256=4f3a9c"]},
            },
            "object": obj,
            "oldObject": None,
            "dryRun": False,
            "options": {
                "kind": "CreateOptions",
                "apiVersion": "meta.k8s.io/v1",
                "fieldManager": "kubectl-client-side-apply",
                "fieldValidation": "Strict",
            },
        },
    }


def store(spec: dict[str, Any], name: str, *, applied: bool) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": "agents",
        "uid": "d9e3c1a7-52b4-4b8e-a0f1-6c7d8e9f0a1b",
        "generation": 1,
        "creationTimestamp": "2026-11-30T12:00:00Z",
        "labels": {"app.kubernetes.io/name": "support-agent"},
        "managedFields": [
            {
                "manager": "kubectl-client-side-apply",
                "operation": "Update",
                "apiVersion": f"{GROUP}/v1beta1",
                "time": "2026-11-30T12:00:00Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:metadata": {"f:annotations": {".": {}}, "f:labels": {".": {}}},
                    "f:spec": {".": {}, "f:external": {}, "f:human": {".": {}, "f:scores": {}},
                               "f:mode": {}},
                },
            }
        ],
    }  # fmt: skip
    obj = {"apiVersion": f"{GROUP}/v1beta1", "kind": "FeedbackStore", "metadata": metadata,
           "spec": spec}  # fmt: skip
    if applied:
        applied_obj = {"apiVersion": obj["apiVersion"], "kind": "FeedbackStore",
                       "metadata": {"name": name, "namespace": "agents"}, "spec": spec}  # fmt: skip
        metadata["annotations"] = {
            "kubectl.kubernetes.io/last-applied-configuration": json.dumps(applied_obj) + "\n"
        }
    return obj


def small_spec() -> dict[str, Any]:
    return {
        "mode": "Enforce",
        "human": {
            "scores": [
                {"name": "thumbs", "dataType": "BOOLEAN"},
                {"name": "accuracy", "dataType": "NUMERIC"},
                {"name": "tone", "dataType": "CATEGORICAL",
                 "categories": ["friendly", "neutral", "curt"]},
            ]
        },
        "external": [{"name": "csat-webhook", "score": {"name": "csat", "dataType": "NUMERIC"}}],
    }  # fmt: skip


def maximal_spec() -> dict[str, Any]:
    scores = [
        {"name": f"human-score-{i:02d}", "dataType": "CATEGORICAL",
         "categories": [f"category-{i:02d}-{j:02d}-label" for j in range(64)]}
        for i in range(64)
    ]  # fmt: skip
    channels = [
        {"name": f"external-channel-{k:02d}",
         "score": {"name": f"external-score-{k:02d}", "dataType": "NUMERIC"}}
        for k in range(32)
    ]  # fmt: skip
    return {"mode": "Enforce", "human": {"scores": scores}, "external": channels}


def payloads() -> dict[str, bytes]:
    invalid = copy.deepcopy(small_spec())
    invalid["human"]["scores"].append({"name": "thumbs", "dataType": "BOOLEAN"})
    bodies = {
        "small-valid": review(store(small_spec(), "support-feedback", applied=True)),
        "small-invalid": review(store(invalid, "support-feedback", applied=True)),
        "maximal": review(store(maximal_spec(), "all-the-scores", applied=False)),
    }
    return {name: json.dumps(body, separators=(",", ":")).encode() for name, body in bodies.items()}


def main(out_dir: pathlib.Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, body in payloads().items():
        (out_dir / f"{name}.json").write_bytes(body)
        print(f"{name}: {len(body)} bytes")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]))
