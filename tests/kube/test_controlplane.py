"""The test control plane is what it claims to be: real, pinned, locked down, observable."""

from __future__ import annotations

import json
import re

import pytest
from kubernetes import client as k8s

from tests.kube.cluster import (
    PLATFORM_TODAY_CRD,
    api_client,
    eventually,
    new_namespace,
    platform_today_text,
)
from tests.kube.controlplane import REPO, ControlPlane

pytestmark = [pytest.mark.kube, pytest.mark.xdist_group("kube")]


def pinned_version() -> str:
    go_mod = (REPO / "tests" / "controlplane" / "go.mod").read_text()
    match = re.search(r"k8s\.io/kubernetes (v\d+\.\d+\.\d+)", go_mod)
    assert match, "go.mod pins no k8s.io/kubernetes version"
    return match.group(1)


def test_the_server_is_the_pinned_kubernetes_release(control_plane: ControlPlane) -> None:
    status, body = control_plane.raw("GET", "/version")
    assert status == 200
    assert json.loads(body)["gitVersion"].startswith(pinned_version())


def test_every_readiness_check_passes(control_plane: ControlPlane) -> None:
    status, body = control_plane.raw("GET", "/readyz?verbose")
    assert status == 200, body.decode()
    assert "[+]etcd ok" in body.decode()


def test_rbac_is_enforced_for_an_unprivileged_user(control_plane: ControlPlane) -> None:
    nobody = control_plane.write_kubeconfig("nobody", control_plane.pki.client("nobody"))
    denied = control_plane.kubectl("get", "namespaces", kubeconfig=nobody)
    assert denied.returncode == 1
    assert 'User "nobody" cannot list resource "namespaces"' in denied.stderr


def test_token_request_issues_a_token_the_server_accepts(control_plane: ControlPlane) -> None:
    namespace = new_namespace(control_plane)
    core = k8s.CoreV1Api(api_client(control_plane))
    core.create_namespaced_service_account(namespace, {"metadata": {"name": "probe"}})
    token = core.create_namespaced_service_account_token(
        "probe", namespace, {"spec": {"expirationSeconds": 600}}
    ).status.token
    as_probe = control_plane.write_kubeconfig("probe", token=token)
    who = control_plane.kubectl(
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username}",
        kubeconfig=as_probe,
        check=True,
    )
    assert who.stdout == f"system:serviceaccount:{namespace}:probe"


def test_requests_are_written_to_the_audit_log(control_plane: ControlPlane) -> None:
    namespace = new_namespace(control_plane)

    def audited() -> bool:
        lines = control_plane.audit_log.read_text().splitlines()
        return any(
            (event := json.loads(line))["verb"] == "create"
            and event.get("objectRef", {}).get("name") == namespace
            for line in lines
        )

    eventually(audited, what="namespace creation audited")


def test_the_platform_crd_fixture_is_generated_from_the_model() -> None:
    assert PLATFORM_TODAY_CRD.read_text() == platform_today_text(), (
        "regenerate: python -c 'from tests.kube.cluster import write_platform_today; "
        "write_platform_today()'"
    )


def test_a_deleted_namespace_is_emptied_and_removed_by_the_namespace_controller(
    control_plane: ControlPlane,
) -> None:
    namespace = new_namespace(control_plane)
    core = k8s.CoreV1Api(api_client(control_plane))
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "content"}})
    core.delete_namespace(namespace)

    def removed() -> bool:
        try:
            core.read_namespace(namespace)
        except k8s.ApiException as error:
            return error.status == 404
        return False

    eventually(removed, timeout=60, what="namespace removed by kube-controller-manager")
