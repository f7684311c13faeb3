"""AdmissionReview requests in the full shape kube-apiserver sends.

Every field of admission.k8s.io/v1 AdmissionRequest is set (uid, kind,
resource, subResource, requestKind, requestResource, requestSubResource, name,
namespace, operation, userInfo with extra, object, oldObject, dryRun,
options), with the values a real API server would put there for the request.
"""

from __future__ import annotations

import copy
import itertools
import uuid
from typing import Any

GROUP = "agents.ctxmesh.ai"
VERSION = "v1beta1"
KIND = "FeedbackStore"
PLURAL = "feedbackstores"
V1 = "admission.k8s.io/v1"
V1BETA1 = "admission.k8s.io/v1beta1"

_OPTIONS_KIND = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}
_generation = itertools.count(1)


def valid_spec() -> dict[str, Any]:
    """Two human scores and one external channel, all distinct."""
    return {
        "mode": "Enforce",
        "human": {
            "scores": [
                {"name": "thumbs", "dataType": "BOOLEAN"},
                {"name": "tone", "dataType": "CATEGORICAL", "categories": ["kind", "rude"]},
            ]
        },
        "external": [{"name": "csat-webhook", "score": {"name": "csat", "dataType": "NUMERIC"}}],
    }


def duplicate_spec() -> dict[str, Any]:
    """`thumbs` declared twice by people: exactly one problem."""
    spec = valid_spec()
    spec["human"]["scores"].append({"name": "thumbs"})
    return spec


def feedbackstore(
    spec: Any, name: str = "support-feedback", namespace: str = "agents", **metadata: Any
) -> dict[str, Any]:
    """A stored FeedbackStore as kube-apiserver passes it: defaulted metadata included."""
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "uid": str(uuid.uuid4()),
        "resourceVersion": str(next(_generation)),
        "generation": 1,
        "creationTimestamp": "2026-01-05T10:00:00Z",
        "labels": {"app.kubernetes.io/part-of": "support-agent"},
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
        "managedFields": [
            {
                "manager": "kubectl-client-side-apply",
                "operation": "Update",
                "apiVersion": f"{GROUP}/{VERSION}",
                "time": "2026-01-05T10:00:00Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {".": {}, "f:human": {}}},
            }
        ],
    }
    meta.update(metadata)
    obj: dict[str, Any] = {"apiVersion": f"{GROUP}/{VERSION}", "kind": KIND, "metadata": meta}
    if spec is not None:
        obj["spec"] = spec
    return obj


def review(
    operation: str,
    obj: Any = None,
    old: Any = None,
    *,
    api_version: str = V1,
    uid: str | None = None,
    group: str = GROUP,
    resource: str = PLURAL,
    kind: str = KIND,
    version: str = VERSION,
    sub_resource: str = "",
    dry_run: bool = False,
    name: str | None = None,
    namespace: str = "agents",
) -> dict[str, Any]:
    """The AdmissionReview kube-apiserver posts for `operation` on `obj` (and `old`)."""
    if name is None:
        source = obj if obj is not None else old
        metadata = source.get("metadata") if isinstance(source, dict) else None
        name = metadata.get("name", "") if isinstance(metadata, dict) else ""
    gvk = {"group": group, "version": version, "kind": kind}
    gvr = {"group": group, "version": version, "resource": resource}
    request: dict[str, Any] = {
        "uid": uid or str(uuid.uuid4()),
        "kind": gvk,
        "resource": gvr,
        "requestKind": dict(gvk),
        "requestResource": dict(gvr),
        "name": name,
        "namespace": namespace,
        "operation": operation,
        "userInfo": {
            "username": "jane@example.com",
            "uid": "7f3d2a1c-5b6e-4d8f-9a0b-1c2d3e4f5a6b",
            "groups": ["platform-team", "system:authenticated"],
            "extra": {"authentication.kubernetes.io/credential-id": ["X509SHA256=ab12"]},
        },
        "object": copy.deepcopy(obj),
        "oldObject": copy.deepcopy(old),
        "dryRun": dry_run,
        "options": {
            "apiVersion": "meta.k8s.io/v1",
            "kind": _OPTIONS_KIND.get(operation, "CreateOptions"),
            "fieldManager": "kubectl-client-side-apply",
        },
    }
    if sub_resource:
        request["subResource"] = sub_resource
        request["requestSubResource"] = sub_resource
    return {"apiVersion": api_version, "kind": "AdmissionReview", "request": request}


def create(spec: Any, **kwargs: Any) -> dict[str, Any]:
    return review("CREATE", feedbackstore(spec), **kwargs)


def update(
    new_spec: Any, old_spec: Any, *, deleting: bool = False, **kwargs: Any
) -> dict[str, Any]:
    old = feedbackstore(old_spec)
    new = copy.deepcopy(old)
    if new_spec is None:
        new.pop("spec", None)
    else:
        new["spec"] = new_spec
    new["metadata"]["labels"]["team"] = "support"
    if deleting:
        for obj in (old, new):
            obj["metadata"]["deletionTimestamp"] = "2026-01-06T09:00:00Z"
            obj["metadata"]["finalizers"] = ["agents.ctxmesh.ai/gateway"]
        new["metadata"]["finalizers"] = []
    return review("UPDATE", new, old, **kwargs)


AGENT_KIND = "AgentDeployment"
AGENT_PLURAL = "agentdeployments"
AGENT_VERSIONS = ("v1alpha1", "v1beta1")


def agentdeployment(
    feedback: Any, name: str = "support-agent", version: str = VERSION
) -> dict[str, Any]:
    """A stored AgentDeployment: the platform's own spec fields, and `feedback` when not None."""
    obj = feedbackstore(None, name)
    obj["apiVersion"], obj["kind"] = f"{GROUP}/{version}", AGENT_KIND
    obj["spec"] = {"image": "registry.example/support-agent:1.4", "replicas": 2}
    if feedback is not None:
        obj["spec"]["feedback"] = feedback
    return obj


def agent_review(
    operation: str, obj: Any = None, old: Any = None, *, version: str = VERSION, **kwargs: Any
) -> dict[str, Any]:
    """The review of `operation` on `agentdeployments` in `version`."""
    return review(
        operation, obj, old, kind=AGENT_KIND, resource=AGENT_PLURAL, version=version, **kwargs
    )


def agent_update(
    new_feedback: Any, old_feedback: Any, *, deleting: bool = False, **kwargs: Any
) -> dict[str, Any]:
    """An UPDATE of an agent from `old_feedback` to `new_feedback`, relabelled and rescaled."""
    old = agentdeployment(old_feedback)
    new = agentdeployment(new_feedback)
    new["metadata"] = copy.deepcopy(old["metadata"])
    new["metadata"]["labels"]["team"] = "support"
    new["spec"]["replicas"] = 3
    if deleting:
        for obj in (old, new):
            obj["metadata"]["deletionTimestamp"] = "2026-01-06T09:00:00Z"
            obj["metadata"]["finalizers"] = ["agents.ctxmesh.ai/gateway"]
        new["metadata"]["finalizers"] = []
    return agent_review("UPDATE", new, old, **kwargs)
