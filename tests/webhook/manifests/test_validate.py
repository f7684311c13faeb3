"""Every manifest renders with kubectl's kustomize and passes the official Kubernetes schemas.

`kubernetes-validate` in strict mode (an unknown field is an error) is run
for the oldest and the newest Kubernetes minor it ships, over the output of
all three install paths: the base (`manifests/`), the cert-manager variant,
and the overlay the `certs` command writes.
"""

from __future__ import annotations

import copy
import pathlib
import subprocess
import sys
import textwrap
from typing import Any

import kubernetes_validate
import pytest
import yaml
from kubernetes_validate.utils import SchemaNotFoundError, all_versions

import webhook
from tests.docs.pages import page
from tests.support.manifest_render import MANIFESTS, NAMESPACE, find, kinds, kustomize
from webhook.manifests.cel_rules import MIN_KUBERNETES

# The oldest minor with every CEL rule field the CRD uses (cel_rules.py), and the newest.
OLDEST = "{}.{}.0".format(*MIN_KUBERNETES)
VERSIONS = (OLDEST, all_versions()[-1])
CERT_MANAGER_KINDS = {"Issuer", "Certificate"}
BASE_OBJECTS = [
    ("ClusterRole", "feedbackstore-status-writer"),
    ("ClusterRoleBinding", "feedbackstore-status-writer"),
    ("CustomResourceDefinition", "feedbackstores.agents.ctxmesh.ai"),
    ("Deployment", "feedbackstore-status-writer"),
    ("Deployment", "feedbackstore-webhook"),
    ("Namespace", NAMESPACE),
    ("PodDisruptionBudget", "feedbackstore-status-writer"),
    ("PodDisruptionBudget", "feedbackstore-webhook"),
    ("Role", "feedbackstore-status-writer-leader-election"),
    ("RoleBinding", "feedbackstore-status-writer-leader-election"),
    ("Service", "feedbackstore-webhook"),
    ("ServiceAccount", "feedbackstore-status-writer"),
    ("ServiceAccount", "feedbackstore-webhook"),
    ("ValidatingWebhookConfiguration", "feedbackstore-webhook"),
]


@pytest.fixture(scope="module")
def base() -> list[dict[str, Any]]:
    return kustomize(MANIFESTS)


@pytest.fixture(scope="module")
def cert_manager() -> list[dict[str, Any]]:
    return kustomize(MANIFESTS / "cert-manager")


@pytest.fixture(scope="module")
def certs_overlay(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    out_dir = tmp_path_factory.mktemp("certs")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "webhook.cli.main",
            "certs",
            "--out-dir",
            str(out_dir),
            "--base",
            str(MANIFESTS),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return kustomize(out_dir)


def test_the_base_renders_exactly_the_expected_objects(base: list[dict[str, Any]]) -> None:
    assert kinds(base) == sorted(BASE_OBJECTS)


def test_the_cert_manager_variant_adds_issuers_and_certificates_only(
    cert_manager: list[dict[str, Any]],
) -> None:
    assert kinds(cert_manager) == sorted(
        [
            *BASE_OBJECTS,
            ("Certificate", "feedbackstore-ca"),
            ("Certificate", "feedbackstore-webhook-tls"),
            ("Issuer", "feedbackstore-ca"),
            ("Issuer", "feedbackstore-selfsigned"),
        ]
    )


def test_the_certs_overlay_adds_the_tls_secret_only(certs_overlay: list[dict[str, Any]]) -> None:
    assert kinds(certs_overlay) == sorted([*BASE_OBJECTS, ("Secret", "feedbackstore-webhook-tls")])


def _core(docs: list[dict[str, Any]]) -> list[Any]:
    return [
        pytest.param(doc, id=f"{doc['kind']}/{doc['metadata']['name']}")
        for doc in docs
        if doc["kind"] not in CERT_MANAGER_KINDS
    ]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("variant", ["base", "cert_manager", "certs_overlay"])
def test_every_object_passes_the_strict_official_schema(
    request: pytest.FixtureRequest, variant: str, version: str
) -> None:
    docs = request.getfixturevalue(variant)
    checked = 0
    for doc in docs:
        if doc["kind"] in CERT_MANAGER_KINDS:
            continue
        kubernetes_validate.validate(doc, version, strict=True)
        checked += 1
    assert checked >= len(BASE_OBJECTS)


@pytest.mark.parametrize("version", VERSIONS)
def test_cert_manager_kinds_are_not_core_kinds_so_they_are_checked_separately(
    cert_manager: list[dict[str, Any]], version: str
) -> None:
    for doc in cert_manager:
        if doc["kind"] in CERT_MANAGER_KINDS:
            with pytest.raises(SchemaNotFoundError) as missing:
                kubernetes_validate.validate(doc, version, strict=True)
            assert (missing.value.kind, missing.value.api_version) == (
                doc["kind"],
                doc["apiVersion"],
            )


@pytest.mark.parametrize(
    ("kind", "name", "path", "typo"),
    [
        pytest.param(
            "Deployment",
            "feedbackstore-webhook",
            ["spec", "template", "spec", "containers", 0, "securityContext"],
            "readOnlyRootFS",
            id="a misspelt securityContext field in the webhook Deployment",
        ),
        pytest.param(
            "ValidatingWebhookConfiguration",
            "feedbackstore-webhook",
            ["webhooks", 0],
            "failurePolicies",
            id="a misspelt webhook field",
        ),
        pytest.param(
            "CustomResourceDefinition",
            "feedbackstores.agents.ctxmesh.ai",
            ["spec", "versions", 0, "schema", "openAPIV3Schema", "properties", "spec"],
            "maxLenght",
            id="a misspelt keyword deep in the CRD schema",
        ),
    ],
)
@pytest.mark.parametrize("version", VERSIONS)
def test_the_validator_is_strict_enough_to_catch_a_typo(
    base: list[dict[str, Any]], kind: str, name: str, path: list[Any], typo: str, version: str
) -> None:
    doc = copy.deepcopy(find(base, kind, name))
    node: Any = doc
    for part in path:
        node = node[part]
    node[typo] = 1
    unexpected = rf"^Additional properties are not allowed \('{typo}' was unexpected\)"
    with pytest.raises(kubernetes_validate.ValidationError, match=unexpected):
        kubernetes_validate.validate(doc, version, strict=True)


def test_the_crd_needs_the_rule_fields_of_its_oldest_kubernetes(
    base: list[dict[str, Any]],
) -> None:
    """reason/fieldPath (1.28+) make the CRD invalid for the minor before MIN_KUBERNETES."""
    assert OLDEST in all_versions()
    doc = find(base, "CustomResourceDefinition", "feedbackstores.agents.ctxmesh.ai")
    major, minor = MIN_KUBERNETES
    with pytest.raises(kubernetes_validate.ValidationError, match=r"reason|fieldPath"):
        kubernetes_validate.validate(doc, f"{major}.{minor - 1}.0", strict=True)


def test_every_yaml_file_under_manifests_is_reachable_from_a_kustomization() -> None:
    referenced: set[pathlib.Path] = set()
    for kustomization in MANIFESTS.rglob("kustomization.yaml"):
        spec = yaml.safe_load(kustomization.read_text(encoding="utf-8"))
        for entry in spec.get("resources", []):
            referenced.add((kustomization.parent / entry).resolve())
        for patch in spec.get("patches", []):
            referenced.add((kustomization.parent / patch["path"]).resolve())
        referenced.add(kustomization.resolve())
    # The Helm chart is not kustomize's: its templates are generated from these files
    # (tests/webhook/manifests/test_chart.py holds it to them).
    chart = MANIFESTS / "helm"
    files = {p.resolve() for p in MANIFESTS.rglob("*.yaml") if chart not in p.parents}
    assert files - referenced == set()


def _readme_overlay(first_line: str) -> str:
    """The YAML block of docs/install.md that starts with `first_line` (a comment naming a file)."""
    readme = page("install.md").read_text(encoding="utf-8")
    start = readme.index(first_line)
    block_start = readme.rindex("```yaml\n", 0, start) + len("```yaml\n")
    return textwrap.dedent(readme[block_start : readme.index("```", start)])


@pytest.fixture(scope="module")
def certs_dir(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    root = tmp_path_factory.mktemp("install")
    result = subprocess.run(
        [
            *(sys.executable, "-m", "webhook.cli.main", "certs"),
            *("--out-dir", str(root / "certs"), "--base", str(MANIFESTS)),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return root / "certs"


def test_the_readme_image_overlay_renders_and_swaps_the_image(certs_dir: pathlib.Path) -> None:
    overlay = certs_dir.parent / "deploy"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        _readme_overlay("# deploy/kustomization.yaml"), encoding="utf-8"
    )
    docs = kustomize(overlay)
    for name in ("feedbackstore-webhook", "feedbackstore-status-writer"):
        (container,) = find(docs, "Deployment", name)["spec"]["template"]["spec"]["containers"]
        assert container["image"] == f"registry.example/feedbackstore-webhook:{webhook.version()}"


@pytest.mark.parametrize(
    "route",
    [
        pytest.param("../certs", id="the certs command's overlay"),
        pytest.param("../manifests/cert-manager", id="the cert-manager variant"),
    ],
)
def test_the_platform_overlay_installs_its_route_less_the_crd(
    certs_dir: pathlib.Path, route: str
) -> None:
    root = certs_dir.parent
    if not (root / "manifests").exists():
        (root / "manifests").symlink_to(MANIFESTS)
    text = _readme_overlay("# platform/kustomization.yaml")
    assert "resources: [../certs]" in text
    overlay = root / f"platform-{pathlib.Path(route).name}"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        text.replace("../certs", route, 1), encoding="utf-8"
    )
    crd = ("CustomResourceDefinition", "feedbackstores.agents.ctxmesh.ai")
    whole = kinds(kustomize(root / route.removeprefix("../")))
    assert crd in whole
    assert kinds(kustomize(overlay)) == [k for k in whole if k != crd]


def test_the_readme_rollout_overlay_fails_open_in_a_labelled_namespace_only(
    certs_dir: pathlib.Path,
) -> None:
    overlay = certs_dir.parent / "rollout"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        _readme_overlay("# rollout/kustomization.yaml"), encoding="utf-8"
    )
    docs = kustomize(overlay)
    webhook = find(docs, "ValidatingWebhookConfiguration", "feedbackstore-webhook")["webhooks"][0]
    assert webhook["failurePolicy"] == "Ignore"
    assert webhook["namespaceSelector"] == {
        "matchLabels": {"feedbackstore-webhook/rollout": "true"}
    }
    assert webhook["clientConfig"]["caBundle"], "the certificate path underneath still applies"
    for version in VERSIONS:
        for doc in docs:
            kubernetes_validate.validate(doc, version, strict=True)


@pytest.mark.parametrize("variant", ["base", "cert_manager", "certs_overlay"])
def test_every_install_path_skips_the_calls_the_webhook_always_allows(
    variant: str, request: pytest.FixtureRequest
) -> None:
    """The judging entry's matchConditions (the webhook's outage blocks only what it judges; proven
    on the real server by tests/kube/test_kubectl_platform_today.py) reach the cluster by every
    install path."""
    docs = request.getfixturevalue(variant)
    configuration = find(docs, "ValidatingWebhookConfiguration", "feedbackstore-webhook")
    judging = configuration["webhooks"][0]
    assert judging["rules"][0]["operations"] == ["CREATE", "UPDATE"]
    assert [c["name"] for c in judging["matchConditions"]] == ["not-being-deleted", "spec-changed"]
