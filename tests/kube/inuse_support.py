"""AgentDeployments for the in-use protection and `migrate` tests: agents naming their store in
`spec.feedbackStoreRef`, under the tests' AgentDeployment CRD (tests/kube/agents_crd.py, the
variant without CEL rules, as the platform's CRD of today; served as `v1beta1` and the
deprecated `v1alpha1`, as the platform serves it, with a `status` subresource the platform
alone writes).
"""

from __future__ import annotations

from typing import Any

from kubernetes import client as k8s

from tests.kube.agents_crd import (
    AGENT_CRD_NAME,
    AGENT_GROUP,
    AGENT_PLURAL,
    agent_crd_installed,
)
from tests.kube.cluster import api_client
from tests.kube.controlplane import ControlPlane

__all__ = [
    "AGENT_CRD_NAME",
    "AGENT_GROUP",
    "AGENT_PLURAL",
    "FINALIZER",
    "Agents",
    "agent",
    "agent_crd_installed",
]

FINALIZER = "agents.ctxmesh.ai/in-use-protection"


def agent(name: str, store: str | None, version: str = "v1beta1") -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": f"{AGENT_GROUP}/{version}",
        "kind": "AgentDeployment",
        "metadata": {"name": name},
        "spec": {},
    }
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
