"""AgentDeployments for the in-use protection tests: a minimal CRD of the tests' own and agents.

The platform's AgentDeployment CRD is not ours to ship; this one holds only
what the status writer and `migrate` read (`spec.feedbackStoreRef`, the inline
`spec.feedback` with the FeedbackStore spec's schema, CEL left out as the
platform's CRD of today, and a `replicas` standing for the rest of an agent),
served as `v1beta1` (storage) and the deprecated `v1alpha1`, as the platform
serves it, with a `status` subresource the platform alone writes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import yaml
from kubernetes import client as k8s

from tests.kube.cluster import api_client, eventually
from tests.kube.controlplane import ControlPlane
from webhook.manifests.crd import spec_schema

AGENT_GROUP, AGENT_PLURAL = "agents.ctxmesh.ai", "agentdeployments"
AGENT_CRD_NAME = f"{AGENT_PLURAL}.{AGENT_GROUP}"
FINALIZER = "agents.ctxmesh.ai/in-use-protection"

_SPEC = {"feedbackStoreRef": {"type": "string"}, "feedback": spec_schema(cel=False),
         "replicas": {"type": "integer"}}  # fmt: skip
_SCHEMA = {"openAPIV3Schema": {"type": "object", "properties": {
    "spec": {"type": "object", "properties": _SPEC},
    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}  # fmt: skip


def agent_crd() -> dict[str, Any]:
    def version(name: str, storage: bool) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": name, "served": True, "storage": storage,
                                 "schema": _SCHEMA, "subresources": {"status": {}}}  # fmt: skip
        if not storage:
            entry["deprecated"] = True
        return entry

    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": AGENT_CRD_NAME},
        "spec": {
            "group": AGENT_GROUP,
            "scope": "Namespaced",
            "names": {"kind": "AgentDeployment", "plural": AGENT_PLURAL,
                      "singular": "agentdeployment", "listKind": "AgentDeploymentList"},
            "versions": [version("v1beta1", True), version("v1alpha1", False)],
        },
    }  # fmt: skip


def agents_served(plane: ControlPlane) -> bool:
    api = k8s.CustomObjectsApi(api_client(plane))
    try:
        api.list_cluster_custom_object(AGENT_GROUP, "v1alpha1", AGENT_PLURAL, limit=1)
        api.list_cluster_custom_object(AGENT_GROUP, "v1beta1", AGENT_PLURAL, limit=1)
    except k8s.ApiException as error:
        if error.status == 404:
            return False
        raise
    return True


@contextlib.contextmanager
def agent_crd_installed(plane: ControlPlane) -> Iterator[None]:
    """The AgentDeployment CRD for the duration; removed after, with every agent in it."""
    plane.kubectl("apply", "--server-side", "--field-manager=kube-tests", "-f", "-",
                  stdin=yaml.safe_dump(agent_crd()), check=True)  # fmt: skip
    eventually(lambda: agents_served(plane), timeout=60, what="AgentDeployments served")
    try:
        yield
    finally:
        plane.kubectl("delete", "crd", AGENT_CRD_NAME, "--ignore-not-found", "--wait=true",
                      check=True, timeout=120)  # fmt: skip


def agent(name: str, store: str | None, version: str = "v1beta1") -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": f"{AGENT_GROUP}/{version}", "kind": "AgentDeployment",
                            "metadata": {"name": name}, "spec": {}}  # fmt: skip
    if store is not None:
        body["spec"]["feedbackStoreRef"] = store
    return body


class Agents:
    """AgentDeployments of one namespace, as the admin."""

    def __init__(self, plane: ControlPlane, namespace: str) -> None:
        self.namespace = namespace
        self.api = k8s.CustomObjectsApi(api_client(plane))

    def create(self, name: str, store: str | None, version: str = "v1beta1") -> None:
        self.api.create_namespaced_custom_object(
            AGENT_GROUP, version, self.namespace, AGENT_PLURAL, agent(name, store, version)
        )

    def point(self, name: str, store: str | None) -> None:
        """Change (or with None remove) the reference: a merge patch, null removes."""
        patch = {"spec": {"feedbackStoreRef": store}}
        self.api.patch_namespaced_custom_object(
            AGENT_GROUP, "v1beta1", self.namespace, AGENT_PLURAL, name, patch
        )

    def get(self, name: str) -> dict[str, Any]:
        found: dict[str, Any] = self.api.get_namespaced_custom_object(
            AGENT_GROUP, "v1beta1", self.namespace, AGENT_PLURAL, name
        )
        return found

    def delete(self, name: str) -> None:
        self.api.delete_namespaced_custom_object(
            AGENT_GROUP, "v1beta1", self.namespace, AGENT_PLURAL, name
        )
