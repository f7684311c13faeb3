"""Who owns the FeedbackStore CRD, asked of the real kube-apiserver: what `kubectl apply -k
manifests/` does to a cluster where the platform installed its own (docs/upgrade.md, "Who
owns the CRD"), and that the platform-cluster route (manifests/without-crd) sends no CRD.

The platform's CRD is tests/kube/fixtures' stand-in (our schema without the CEL rules), put
in place by server-side apply as a chart of its own would; ours is the CRD that
`kubectl kustomize manifests/` builds, applied as `kubectl apply -k` applies it.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from tests.kube.cluster import (
    GROUP,
    PLURAL,
    PROBE_NAMESPACE,
    VERSION,
    api_client,
    eventually,
    feedbackstore,
    install_crd,
    platform_today_crd,
)
from tests.kube.controlplane import ControlPlane
from tests.support.manifest_render import MANIFESTS, kustomize

pytestmark = [pytest.mark.kube, pytest.mark.xdist_group("kube")]

CRD = f"{PLURAL}.{GROUP}"
PLATFORM_MANAGER = "platform-chart"
# Refused by our CRD's CEL rules, stored by the platform's schema alone.
DUPLICATE = {"human": {"scores": [{"name": "thumbs"}, {"name": "thumbs"}]}}


def crds(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [doc for doc in docs if doc["kind"] == "CustomResourceDefinition"]


def platform_route(tmp_path: Path) -> Path:
    (tmp_path / "manifests").symlink_to(MANIFESTS)  # kustomize takes relative paths only
    overlay = tmp_path / "platform"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        "resources: [../manifests]\ncomponents: [../manifests/without-crd]\n"
    )
    return overlay


def refuses_duplicates(plane: ControlPlane) -> bool:
    """Whether the served CRD refuses a duplicate score name (its CEL rules), by a dry run."""
    api = k8s.CustomObjectsApi(api_client(plane))
    store = feedbackstore(f"dup-{uuid.uuid4().hex[:8]}", DUPLICATE)
    try:
        api.create_namespaced_custom_object(
            GROUP, VERSION, PROBE_NAMESPACE, PLURAL, store, dry_run="All"
        )
    except k8s.ApiException as error:
        if error.status != 422:
            raise
        return True
    return False


def served(plane: ControlPlane) -> dict[str, Any]:
    found: dict[str, Any] = yaml.safe_load(plane.kubectl("get", "crd", CRD, "-o", "yaml",
                                                         check=True).stdout)  # fmt: skip
    return found


def test_the_platform_route_sends_no_crd_and_leaves_the_platform_s_as_it_was(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    install_crd(control_plane, platform_today_crd())
    before = served(control_plane)
    assert crds(kustomize(platform_route(tmp_path))) == []
    assert served(control_plane)["metadata"]["generation"] == before["metadata"]["generation"]
    assert not refuses_duplicates(control_plane)


def test_applying_the_manifests_replaces_the_platform_s_crd_with_ours(
    control_plane: ControlPlane,
) -> None:
    install_crd(control_plane, platform_today_crd())
    platform = served(control_plane)
    assert not refuses_duplicates(control_plane)
    (ours,) = crds(kustomize(MANIFESTS))
    applied = control_plane.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(ours), check=True)
    try:
        # kubectl takes over an object it did not create, saying so
        assert "missing the kubectl.kubernetes.io/last-applied-configuration annotation" in (
            applied.stderr
        )
        now = served(control_plane)
        assert now["metadata"]["generation"] > platform["metadata"]["generation"]
        assert now["spec"]["versions"] == ours["spec"]["versions"]  # its schema, columns, CEL
        eventually(lambda: refuses_duplicates(control_plane), what="our CEL rules served")
        # The platform's chart, applying its own CRD again as it upgrades, now meets ours.
        again = control_plane.kubectl(
            "apply", "--server-side", f"--field-manager={PLATFORM_MANAGER}", "-f", "-",
            stdin=yaml.safe_dump(platform_today_crd()),
        )  # fmt: skip
        assert again.returncode != 0
        assert "conflict" in again.stderr
        assert "kubectl-client-side-apply" in again.stderr
        # applied client-side instead, it puts its own back, and the next install of ours undoes it
        control_plane.kubectl(
            "apply", "-f", "-", stdin=yaml.safe_dump(platform_today_crd()), check=True
        )
        eventually(lambda: not refuses_duplicates(control_plane), what="the platform's served")
        assert served(control_plane)["spec"]["versions"] == platform["spec"]["versions"]
    finally:
        install_crd(control_plane, platform_today_crd())
