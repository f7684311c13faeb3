"""The audit trail in the real server's audit log: kube-apiserver v1.37.2 records the webhook's
`auditAnnotations` under `<webhook name>/<key>` on the request's audit event, for an allowed and
a denied CREATE and for a DELETE (registered here for DELETE too, which the shipped registration
does not match)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.kube.cluster import (
    GROUP,
    PLURAL,
    VERSION,
    WebhookServer,
    eventually,
    feedbackstore,
    install_crd,
    new_namespace,
    platform_today_crd,
    registered,
    registration,
    webhook_server,
)
from tests.kube.controlplane import ControlPlane

pytestmark = [pytest.mark.kube, pytest.mark.xdist_group("kube")]

WEBHOOK_NAME = "validate.feedbackstores.agents.ctxmesh.ai"  # the shipped registration's
VALID = {"mode": "Enforce", "human": {"scores": [{"name": "thumbs"}]}}
THREE_PROBLEMS = {
    "mode": "Enforce",
    "human": {"scores": [{"name": "thumbs"}, {"name": "thumbs"}, {"name": "tone"}]},
    "external": [
        {"name": "csat", "score": {"name": "tone"}},
        {"name": "csat", "score": {"name": "nps"}},
    ],
}


@pytest.fixture(scope="module", autouse=True)
def _platform_today_crd(control_plane: ControlPlane) -> None:
    # No CEL rules: an invalid store reaches the webhook, which alone refuses it.
    install_crd(control_plane, platform_today_crd())


@pytest.fixture(scope="module", name="server")
def _server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookServer]:
    with webhook_server(tmp_path_factory.mktemp("audit-webhook")) as server:
        yield server


@pytest.fixture(scope="module", name="namespace")
def _namespace(control_plane: ControlPlane, server: WebhookServer) -> Iterator[str]:
    namespace = new_namespace(control_plane, "audit")
    rules = [
        {
            "apiGroups": [GROUP],
            "apiVersions": [VERSION],
            "resources": [PLURAL],
            "operations": ["CREATE", "UPDATE", "DELETE"],
            "scope": "Namespaced",
        }
    ]
    document = registration(f"audit-{uuid.uuid4().hex[:8]}", server.url, server.ca_pem, rules=rules)
    assert document["webhooks"][0]["name"] == WEBHOOK_NAME
    with registered(control_plane, document, namespace):
        yield namespace


def audit_annotations(plane: ControlPlane, verb: str, namespace: str, name: str) -> dict[str, str]:
    """The webhook's annotations on the completed audit event of `verb` on the store `name`."""

    def find() -> dict[str, str] | None:
        for line in plane.audit_log.read_text().splitlines():
            event: dict[str, Any] = json.loads(line)
            ref = event.get("objectRef", {})
            if (
                event["stage"] == "ResponseComplete"
                and event["verb"] == verb
                and ref.get("resource") == PLURAL
                and ref.get("namespace") == namespace
                and ref.get("name") == name
            ):
                annotations: dict[str, str] = event.get("annotations", {})
                return {k: v for k, v in annotations.items() if k.startswith(WEBHOOK_NAME)}
        return None

    found = eventually(find, what=f"audit event of {verb} {namespace}/{name}")
    assert found is not None
    return found


def create(plane: ControlPlane, namespace: str, name: str, spec: dict[str, Any]) -> str:
    result = plane.kubectl(
        "create", "-n", namespace, "-f", "-", stdin=yaml.safe_dump(feedbackstore(name, spec))
    )
    return result.stdout + result.stderr


def test_an_allowed_create_is_audited_as_allowed_with_no_problems(
    control_plane: ControlPlane, namespace: str
) -> None:
    name = f"fine-{uuid.uuid4().hex[:6]}"
    assert "created" in create(control_plane, namespace, name, VALID)
    assert audit_annotations(control_plane, "create", namespace, name) == {
        f"{WEBHOOK_NAME}/verdict": "allowed",
        f"{WEBHOOK_NAME}/why": "valid",
        f"{WEBHOOK_NAME}/problems": "0",
    }


def test_a_denied_create_is_audited_as_denied_with_its_problem_count(
    control_plane: ControlPlane, namespace: str
) -> None:
    name = f"broken-{uuid.uuid4().hex[:6]}"
    printed = create(control_plane, namespace, name, THREE_PROBLEMS)
    assert f'The FeedbackStore "{name}" is invalid: \n* ' in printed
    assert printed.count("\n* ") == 3
    assert audit_annotations(control_plane, "create", namespace, name) == {
        f"{WEBHOOK_NAME}/verdict": "denied",
        f"{WEBHOOK_NAME}/why": "invalid",
        f"{WEBHOOK_NAME}/problems": "3",
    }


def test_a_delete_is_audited_with_the_delete_decision(
    control_plane: ControlPlane, namespace: str
) -> None:
    name = f"gone-{uuid.uuid4().hex[:6]}"
    assert "created" in create(control_plane, namespace, name, VALID)
    control_plane.kubectl("delete", "-n", namespace, f"{PLURAL}.{GROUP}", name, check=True)
    assert audit_annotations(control_plane, "delete", namespace, name) == {
        f"{WEBHOOK_NAME}/verdict": "allowed",
        f"{WEBHOOK_NAME}/why": "not_judged_operation",
        f"{WEBHOOK_NAME}/delete": "use unknown: no InUse",  # no status writer ran here
    }
