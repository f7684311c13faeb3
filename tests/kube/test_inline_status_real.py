"""Inline declarations on a real kube-apiserver v1.37.2: an AgentDeployment whose
`spec.feedback` is invalid, created with no webhook registered (as before the webhook was
installed, or while its `failurePolicy: Ignore` registration let it through), is told by the
status writer (the console script, as a user of its own) as an Event on the agent, and counted in
its gauge; fixed, a Normal Event follows. The agent itself is never written: its status, set by
"the platform", stays as it was, and the audit log shows no write of the writer's to agents.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client as k8s

from tests.kube.cluster import api_client, eventually, install_crd, new_namespace, shipped_crd
from tests.kube.controlplane import ControlPlane
from tests.kube.inuse_support import AGENT_GROUP, AGENT_PLURAL, agent_crd_installed
from tests.kube.status_writer_support import (  # noqa: F401 (fixtures)
    INVALID,
    MANAGER,
    VALID,
    Audit,
    Writers,
    _audit,
    _writers,
    settle,
)
from tests.support.stores import INLINE_INVALID_MESSAGE

pytestmark = [pytest.mark.kube, pytest.mark.xdist_group("kube")]

PLATFORM_STATUS = {
    "conditions": [
        {
            "type": "Ready",
            "status": "True",
            "reason": "Serving",
            "message": "set by the platform",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    ]
}


@pytest.fixture(scope="module", autouse=True)
def crds(control_plane: ControlPlane) -> Any:
    install_crd(control_plane, shipped_crd())
    with agent_crd_installed(control_plane):
        yield


@pytest.fixture
def namespace(control_plane: ControlPlane) -> str:
    return new_namespace(control_plane, "inline")


class Agents:
    def __init__(self, plane: ControlPlane, namespace: str) -> None:
        self.namespace = namespace
        self.api = k8s.CustomObjectsApi(api_client(plane))

    def create(self, name: str, feedback: dict[str, Any], version: str = "v1beta1") -> None:
        spec = {"feedback": feedback, "replicas": 1}
        body = {
            "apiVersion": f"{AGENT_GROUP}/{version}",
            "kind": "AgentDeployment",
            "metadata": {"name": name},
            "spec": spec,
        }
        self.api.create_namespaced_custom_object(
            AGENT_GROUP, version, self.namespace, AGENT_PLURAL, body
        )

    def get(self, name: str) -> dict[str, Any]:
        found: dict[str, Any] = self.api.get_namespaced_custom_object(
            AGENT_GROUP, "v1beta1", self.namespace, AGENT_PLURAL, name
        )
        return found

    def set_status(self, name: str, status: dict[str, Any]) -> None:
        """As the platform does: the status subresource, its own manager."""
        body = {
            "apiVersion": f"{AGENT_GROUP}/v1beta1",
            "kind": "AgentDeployment",
            "metadata": {"name": name},
            "status": status,
        }
        self.api.patch_namespaced_custom_object_status(
            AGENT_GROUP,
            "v1beta1",
            self.namespace,
            AGENT_PLURAL,
            name,
            body,
            field_manager="platform",
            force=True,
            _content_type="application/apply-patch+yaml",
        )

    def set_feedback(self, name: str, feedback: dict[str, Any]) -> None:
        current = self.get(name)
        current["spec"]["feedback"] = feedback
        self.api.replace_namespaced_custom_object(
            AGENT_GROUP, "v1beta1", self.namespace, AGENT_PLURAL, name, current
        )


def events_about(plane: ControlPlane, namespace: str, name: str) -> list[dict[str, Any]]:
    core = k8s.CoreV1Api(api_client(plane))
    selector = f"involvedObject.kind=AgentDeployment,involvedObject.name={name}"
    found = core.list_namespaced_event(namespace, field_selector=selector).to_dict()["items"]
    return sorted(found, key=lambda e: e["metadata"]["creation_timestamp"])


def test_an_invalid_inline_declaration_is_told_by_an_event_and_the_agent_is_never_written(
    control_plane: ControlPlane, namespace: str, writers: Writers, audit: Audit
) -> None:
    agents = Agents(control_plane, namespace)
    agents.create("support-bot", INVALID, version="v1alpha1")
    agents.create("sales-bot", VALID)
    agents.set_status("support-bot", PLATFORM_STATUS)
    before = agents.get("support-bot")
    writer = writers.start("inline", resync_seconds=1.0)

    warning = eventually(
        lambda: events_about(control_plane, namespace, "support-bot"),
        what="the warning Event on the agent",
    )[0]
    assert (warning["type"], warning["reason"], warning["message"]) == (
        "Warning",
        "InvalidSpec",
        INLINE_INVALID_MESSAGE,
    )
    involved = warning["involved_object"]
    assert (involved["api_version"], involved["kind"], involved["name"]) == (
        f"{AGENT_GROUP}/v1beta1",
        "AgentDeployment",
        "support-bot",
    )
    assert involved["uid"] == before["metadata"]["uid"]
    assert warning["reporting_component"] == MANAGER
    assert eventually(
        lambda: writer.metric("feedbackstore_status_inline_invalid") == 1, what="gauge at 1"
    )
    settle(2.5)  # resyncs: nothing more to say
    assert len(events_about(control_plane, namespace, "support-bot")) == 1
    assert events_about(control_plane, namespace, "sales-bot") == [], "valid: nothing to tell"

    agents.set_feedback("support-bot", VALID)
    fixed = eventually(
        lambda: events_about(control_plane, namespace, "support-bot")[1:], what="the normal Event"
    )[0]
    assert (fixed["type"], fixed["reason"], fixed["message"]) == (
        "Normal",
        "SpecCoherent",
        "spec.feedback is coherent",
    )
    assert eventually(
        lambda: writer.metric("feedbackstore_status_inline_invalid") == 0, what="gauge at 0"
    )

    after = agents.get("support-bot")
    assert after["status"] == before["status"] == PLATFORM_STATUS, "the platform's status stays"
    audit.flush(namespace)
    assert audit.writes_by(namespace, writer.user, AGENT_PLURAL) == []
    created = audit.writes_by(namespace, writer.user, "events")
    assert [(e.verb, e.code) for e in created] == [("create", 201)] * 2


def test_one_watch_of_agents_serves_in_use_protection_and_inline_declarations_counted(
    control_plane: ControlPlane, namespace: str, writers: Writers, audit: Audit
) -> None:
    agents = Agents(control_plane, namespace)
    agents.create("support-bot", INVALID)
    agents.create("sales-bot", VALID)
    writer = writers.start("one-watch")
    assert eventually(
        lambda: writer.metric("feedbackstore_status_inline_invalid") == 1, what="gauge at 1"
    )
    assert writer.metric("feedbackstore_status_agents") == 2
    assert writer.metric("feedbackstore_status_agent_lists_total") == 1
    assert writer.metric("feedbackstore_status_objects") == 0, "the stores' gauge: stores only"
    agents.set_feedback("sales-bot", INVALID)
    assert eventually(
        lambda: writer.metric("feedbackstore_status_inline_invalid") == 2, what="gauge at 2"
    )
    assert writer.metric("feedbackstore_status_agent_watch_events_total", type="MODIFIED") >= 1
    audit.flush(namespace)
    watches = [
        e
        for e in audit.events(namespace, stage="ResponseStarted")
        if e.user == writer.user and e.resource == AGENT_PLURAL and e.verb == "watch"
    ]
    assert len(watches) == 1, [e.uri for e in watches]
