"""The Helm chart (manifests/helm/feedbackstore-webhook) with the real helm v4.

The chart's templates are generated from manifests/ (webhook/manifests/chart.py), so the two
cannot drift apart unnoticed: the committed files must be what the generator writes today, and
`helm template` with the default values must render exactly what `kubectl kustomize` renders
(less the Namespace, which Helm installs into, and the CRD, which is the platform's), the
other certificate paths and the monitoring component likewise. Every knob is set in
tests/helm/values-every-knob.yaml and must reach its field; both renders pass the official
schemas strictly (tests/kube/test_helm_real.py puts them through kube-apiserver too).
"""

from __future__ import annotations

import base64
import copy
import os
import pathlib
import shutil
import subprocess
import sys
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.support import helm_binary
from tests.support.helm_binary import CHART
from tests.support.manifest_render import MANIFESTS, NAMESPACE, find, kustomize
from webhook.manifests.chart import CHART_LABELS, chart_files

EVERY_KNOB = pathlib.Path(__file__).resolve().parents[2] / "helm" / "values-every-knob.yaml"
RELEASE = "fbw"
CRD_NAME = "feedbackstores.agents.ctxmesh.ai"
CERT_MANAGER_KINDS = {"Issuer", "Certificate"}
MONITORING_KINDS = {"ServiceMonitor", "PrometheusRule"}


def template(*args: str) -> list[dict[str, Any]]:
    result = helm_binary.run("template", RELEASE, str(CHART), "--namespace", NAMESPACE, *args)
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc is not None]


@pytest.fixture(scope="module", name="pki")
def _pki(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A CA and serving pair from the `certs` command, as path 1 makes them."""
    out = tmp_path_factory.mktemp("certs")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "webhook.cli.main",
            "certs",
            "--out-dir",
            str(out),
            "--base",
            str(MANIFESTS),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return out


def from_files(pki: pathlib.Path) -> list[str]:
    pair = f"tls.certificate={pki / 'tls.crt'},tls.key={pki / 'tls.key'}"
    return ["--set-file", f"{pair},tls.caBundle={pki / 'ca.crt'}"]


@pytest.fixture(scope="module", name="defaults")
def _defaults() -> list[dict[str, Any]]:
    return template()


@pytest.fixture(scope="module", name="knobs")
def _knobs(pki: pathlib.Path) -> list[dict[str, Any]]:
    return template("-f", str(EVERY_KNOB), *from_files(pki))


def _without_chart_marks(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` less what the chart adds to every object: its labels, an empty annotations key,
    the CRD's keep policy."""
    doc = copy.deepcopy(doc)
    for metadata in (doc["metadata"], doc.get("spec", {}).get("template", {}).get("metadata")):
        if not metadata:
            continue
        for label in CHART_LABELS:
            metadata.get("labels", {}).pop(label, None)
        (metadata.get("annotations") or {}).pop("helm.sh/resource-policy", None)
        if not metadata.get("annotations"):
            metadata.pop("annotations", None)
    return doc


def _keyed(docs: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """The objects by kind and name, less the chart's marks and its `helm test` hooks."""
    return {
        (d["kind"], d["metadata"]["name"]): _without_chart_marks(d)
        for d in docs
        if "helm.sh/hook" not in (d["metadata"].get("annotations") or {})
    }


def _installed(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the chart installs of a kustomization: all but the Namespace and the CRD."""
    return [d for d in docs if d["kind"] not in ("Namespace", "CustomResourceDefinition")]


def _set(value: Any) -> Any:
    """A knob's value as it lands: Helm merges maps into the defaults, and a null drops a key."""
    if isinstance(value, dict):
        return {k: _set(v) for k, v in value.items() if v is not None}
    return value


def test_the_committed_chart_is_what_the_generator_writes_from_manifests() -> None:
    """A change to manifests/ without `feedbackstore-webhook manifests chart --out
    manifests/helm/feedbackstore-webhook` fails here, naming the command."""
    wanted = chart_files(MANIFESTS)
    stale = [
        path
        for path, text in wanted.items()
        if not (CHART / path).is_file() or (CHART / path).read_text("utf-8") != text
    ]
    assert not stale, (
        f"{stale} differ from manifests/: run "
        "feedbackstore-webhook manifests chart --out manifests/helm/feedbackstore-webhook"
    )


@pytest.mark.parametrize(
    "values",
    [
        pytest.param([], id="with the default values"),
        pytest.param(["every-knob"], id="with every knob set"),
    ],
)
def test_helm_lint_finds_nothing(values: list[str], pki: pathlib.Path) -> None:
    extra = ["-f", str(EVERY_KNOB), *from_files(pki)] if values else []
    result = helm_binary.run("lint", "--strict", str(CHART), *extra)
    assert "1 chart(s) linted, 0 chart(s) failed" in result.stdout, result.stdout
    assert "[WARNING]" not in result.stdout, result.stdout
    assert "[ERROR]" not in result.stdout, result.stdout


def test_the_default_values_render_exactly_the_manifests_less_namespace_and_crd(
    defaults: list[dict[str, Any]],
) -> None:
    assert _keyed(defaults) == _keyed(_installed(kustomize(MANIFESTS)))


def test_crds_install_renders_the_shipped_crd_kept_on_uninstall() -> None:
    rendered = template("--set", "crds.install=true")
    crd = find(rendered, "CustomResourceDefinition", CRD_NAME)
    assert crd["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    shipped = find(kustomize(MANIFESTS / "crd"), "CustomResourceDefinition", CRD_NAME)
    assert _without_chart_marks(crd) == shipped


def test_tls_source_cert_manager_renders_the_cert_manager_variant() -> None:
    rendered = _keyed(template("--set", "tls.source=certManager"))
    assert rendered == _keyed(_installed(kustomize(MANIFESTS / "cert-manager")))


def test_tls_source_values_renders_the_secret_and_ca_bundle_the_certs_overlay_applies(
    pki: pathlib.Path,
) -> None:
    rendered = _keyed(template("--set", "tls.source=values", *from_files(pki)))
    assert rendered == _keyed(_installed(kustomize(pki)))


def test_the_monitoring_switches_render_the_monitoring_component(tmp_path: pathlib.Path) -> None:
    rendered = _keyed(
        template("--set", "serviceMonitor.enabled=true", "--set", "prometheusRule.enabled=true")
    )
    base = os.path.relpath(MANIFESTS, tmp_path)
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump({"resources": [base], "components": [f"{base}/monitoring"]})
    )
    assert rendered == _keyed(_installed(kustomize(tmp_path)))
    assert {kind for kind, _ in rendered} >= MONITORING_KINDS


def _with_policy(tmp_path: pathlib.Path) -> list[dict[str, Any]]:
    """manifests/ with the policy component, as kustomize renders it."""
    base = os.path.relpath(MANIFESTS, tmp_path)
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump({"resources": [base], "components": [f"{base}/policy"]})
    )
    return _installed(kustomize(tmp_path))


def test_admission_mode_both_renders_the_policy_component_beside_the_webhook(
    tmp_path: pathlib.Path,
) -> None:
    rendered = _keyed(template("--set", "admission.mode=both"))
    assert rendered == _keyed(_with_policy(tmp_path))
    assert ("ValidatingAdmissionPolicy", "validate.feedbackstores.agents.ctxmesh.ai") in rendered


def test_admission_mode_policy_renders_the_policies_and_nothing_of_the_webhook(
    tmp_path: pathlib.Path,
) -> None:
    rendered = _keyed(template("--set", "admission.mode=policy"))
    webhook_less = [
        d
        for d in _with_policy(tmp_path)
        if d["metadata"].get("labels", {}).get("app.kubernetes.io/component") != "webhook"
    ]
    assert rendered == _keyed(webhook_less)
    assert ("ValidatingWebhookConfiguration", "feedbackstore-webhook") not in rendered
    assert ("Deployment", "feedbackstore-status-writer") in rendered
    tls = template("--set", "admission.mode=policy", "--set", "tls.source=certManager")
    assert {d["kind"] for d in tls}.isdisjoint(CERT_MANAGER_KINDS)


def test_the_policies_leave_out_the_namespaces_the_registration_leaves_out() -> None:
    rendered = template("--set", "admission.mode=both", "--set",
                        "webhookConfiguration.excludedNamespaces={kube-system,ops}")  # fmt: skip
    policies = [d for d in rendered if d["kind"] == "ValidatingAdmissionPolicy"]
    assert len(policies) == 2
    for doc in policies:
        selector = doc["spec"]["matchConstraints"]["namespaceSelector"]["matchExpressions"][0]
        assert selector["values"] == ["kube-system", "ops", NAMESPACE]


def _at(docs: list[dict[str, Any]], kind: str, name: str, path: str) -> Any:
    node: Any = find(docs, kind, name)
    for part in path.split("/"):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


WEBHOOK = ("Deployment", "feedbackstore-webhook")
WRITER = ("Deployment", "feedbackstore-status-writer")
CLEANUP = ("Job", "feedbackstore-cleanup")
POD = "spec/template/spec"
KNOB_VALUES = yaml.safe_load(EVERY_KNOB.read_text(encoding="utf-8"))
W, S = KNOB_VALUES["webhook"], KNOB_VALUES["statusWriter"]
DIGEST_IMAGE = "registry.example/platform/feedbackstore-webhook@" + KNOB_VALUES["image"]["digest"]
VWC = ("ValidatingWebhookConfiguration", "feedbackstore-webhook")


@pytest.mark.parametrize(
    ("target", "path", "expected"),
    [
        pytest.param(WEBHOOK, "spec/replicas", 3, id="webhook.replicas sets the webhook's"),
        pytest.param(WRITER, "spec/replicas", 3, id="statusWriter.replicas sets the writer's"),
        pytest.param(
            WEBHOOK, f"{POD}/containers/0/image", DIGEST_IMAGE, id="image.digest wins over the tag"
        ),
        pytest.param(
            WRITER,
            f"{POD}/containers/0/imagePullPolicy",
            "Always",
            id="image.pullPolicy reaches both components",
        ),
        pytest.param(
            WEBHOOK,
            f"{POD}/imagePullSecrets",
            [{"name": "regcred"}],
            id="imagePullSecrets reach the pods",
        ),
        pytest.param(
            WEBHOOK,
            f"{POD}/containers/0/resources",
            W["resources"],
            id="webhook.resources replace the default",
        ),
        pytest.param(
            WRITER,
            f"{POD}/containers/0/resources",
            S["resources"],
            id="statusWriter.resources replace the default",
        ),
        pytest.param(
            CLEANUP,
            f"{POD}/containers/0/resources",
            KNOB_VALUES["cleanup"]["resources"],
            id="cleanup.resources replace the uninstall Job's default",
        ),
        pytest.param(WEBHOOK, f"{POD}/nodeSelector", W["nodeSelector"], id="nodeSelector"),
        pytest.param(WRITER, f"{POD}/tolerations", S["tolerations"], id="tolerations"),
        pytest.param(WEBHOOK, f"{POD}/affinity", W["affinity"], id="affinity replaces the default"),
        pytest.param(
            WEBHOOK,
            f"{POD}/topologySpreadConstraints",
            W["topologySpreadConstraints"],
            id="topologySpreadConstraints replace the default",
        ),
        pytest.param(
            WEBHOOK, f"{POD}/priorityClassName", "platform-critical", id="priorityClassName"
        ),
        pytest.param(
            WEBHOOK,
            "spec/template/metadata/labels/tier",
            "edge",
            id="podLabels join the pod's labels",
        ),
        pytest.param(
            WRITER, "spec/template/metadata/annotations", {"note": "writer"}, id="podAnnotations"
        ),
        pytest.param(WEBHOOK, "metadata/labels/team", "platform", id="commonLabels on objects"),
        pytest.param(
            VWC,
            "metadata/annotations",
            {"owner": "platform-team"},
            id="commonAnnotations on the webhook configuration",
        ),
        pytest.param(VWC, "webhooks/0/failurePolicy", "Ignore", id="an entry's failurePolicy"),
        pytest.param(VWC, "webhooks/0/timeoutSeconds", 10, id="an entry's timeoutSeconds"),
        pytest.param(
            VWC,
            "webhooks/1/failurePolicy",
            "Ignore",
            id="an entry left out of the values keeps the manifest's",
        ),
        pytest.param(
            VWC,
            "webhooks/0/namespaceSelector/matchExpressions/0/values",
            ["kube-system", "platform-system", NAMESPACE],
            id="excludedNamespaces and the release's namespace are never judged",
        ),
        pytest.param(
            ("PodDisruptionBudget", "feedbackstore-webhook"),
            "spec/maxUnavailable",
            1,
            id="the webhook's PDB takes maxUnavailable",
        ),
        pytest.param(
            ("ServiceMonitor", "feedbackstore-webhook"),
            "metadata/labels/release",
            "prometheus",
            id="serviceMonitor.labels",
        ),
        pytest.param(
            ("PrometheusRule", "feedbackstore-webhook"),
            "metadata/labels/release",
            "prometheus",
            id="prometheusRule.labels",
        ),
        pytest.param(
            ("PrometheusRule", "feedbackstore-webhook"),
            "spec/groups/0/rules/0/annotations/runbook_url",
            "https://runbooks.platform.example/feedbackstore/FeedbackStoreWebhookDown.md",
            id="prometheusRule.runbookBaseURL prefixes each alert's page",
        ),
    ],
)
def test_every_knob_reaches_its_field(
    knobs: list[dict[str, Any]], target: tuple[str, str], path: str, expected: Any
) -> None:
    assert _at(knobs, *target, path) == _set(expected)


def test_the_writer_pdb_can_be_left_out_and_the_crd_not_kept(knobs: list[dict[str, Any]]) -> None:
    assert ("PodDisruptionBudget", "feedbackstore-status-writer") not in _keyed(knobs)
    crd = find(knobs, "CustomResourceDefinition", CRD_NAME)
    assert "helm.sh/resource-policy" not in crd["metadata"].get("annotations") or {}


def test_tls_values_write_the_secret_and_every_entry_s_ca_bundle(
    knobs: list[dict[str, Any]], pki: pathlib.Path
) -> None:
    secret = find(knobs, "Secret", "feedbackstore-webhook-tls")
    assert secret["type"] == "kubernetes.io/tls"
    assert base64.b64decode(secret["data"]["tls.crt"]) == (pki / "tls.crt").read_bytes()
    bundle = base64.b64encode((pki / "ca.crt").read_bytes()).decode()
    entries = find(knobs, *VWC)["webhooks"]
    assert [e["clientConfig"]["caBundle"] for e in entries] == [bundle] * len(entries)


def test_an_existing_secret_of_your_own_is_mounted_and_checked_and_your_ca_fills_every_entry(
    pki: pathlib.Path,
) -> None:
    """tls.source existingSecret with tls.existingSecret: the pods mount that Secret, the
    ServiceMonitor verifies with its ca.crt, `helm test`'s doctor reads it (and may read only
    it), and tls.caBundle goes into every entry of the webhook configuration."""
    docs = template(
        "--set", "tls.existingSecret=platform-webhook-tls", "--set", "serviceMonitor.enabled=true",
        "--set-file", f"tls.caBundle={pki / 'ca.crt'}",
    )  # fmt: skip
    volumes = find(docs, *WEBHOOK)["spec"]["template"]["spec"]["volumes"]
    tls = next(volume for volume in volumes if volume["name"] == "tls")
    assert tls["secret"]["secretName"] == "platform-webhook-tls"
    monitor = find(docs, "ServiceMonitor", "feedbackstore-webhook")
    assert monitor["spec"]["endpoints"][0]["tlsConfig"]["ca"]["secret"]["name"] == (
        "platform-webhook-tls"
    )
    assert not [d for d in docs if d["kind"] == "Secret"], "the chart writes no Secret of its own"
    bundle = base64.b64encode((pki / "ca.crt").read_bytes()).decode()
    entries = find(docs, *VWC)["webhooks"]
    assert [e["clientConfig"]["caBundle"] for e in entries] == [bundle] * 3
    test = template(
        "--set", "tls.existingSecret=platform-webhook-tls",
        "--show-only", "templates/tests/doctor.yaml",
    )  # fmt: skip
    args = find(test, "Pod", "feedbackstore-webhook-test")["spec"]["containers"][0]["args"]
    assert args[-2:] == ["--secret", "platform-webhook-tls"]
    (role,) = [
        d for d in test if d["kind"] == "Role" and d["metadata"]["namespace"] == NAMESPACE
    ]  # the release's; the other is in the probe namespace
    assert role["rules"][0]["resourceNames"] == ["platform-webhook-tls"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["--set", "tls.source=values"],
            "tls.source values needs tls.certificate, tls.key and tls.caBundle",
            id="tls from values without the files says which to give",
        ),
        pytest.param(
            ["--set", "tls.existingSecret="],
            "tls.source existingSecret needs tls.existingSecret",
            id="an existing Secret without its name asks for it",
        ),
        pytest.param(
            ["--set", "tls.source=vault"],
            'tls.source "vault": use existingSecret',
            id="an unknown tls source names the three",
        ),
        pytest.param(
            ["--set", "admission.mode=gatekeeper"],
            'admission.mode "gatekeeper": use webhook, policy or both',
            id="an unknown admission mode names the three",
        ),
        pytest.param(
            ["--set", "webhook.podDisruptionBudget.maxUnavailable=1"],
            "webhook.podDisruptionBudget has both minAvailable and maxUnavailable",
            id="a budget given both bounds (one from the defaults) says what to do",
        ),
    ],
)
def test_values_that_cannot_work_are_refused_with_what_to_do(args: list[str], message: str) -> None:
    result = helm_binary.run("template", RELEASE, str(CHART), *args, check=False)
    assert result.returncode != 0
    assert message in result.stderr, result.stderr


@pytest.mark.parametrize("render", ["defaults", "knobs"])
def test_every_core_object_passes_the_strict_official_schema(
    request: pytest.FixtureRequest, render: str
) -> None:
    docs = request.getfixturevalue(render)
    from tests.webhook.manifests.test_validate import VERSIONS

    checked = 0
    for doc in docs:
        if doc["kind"] in CERT_MANAGER_KINDS | MONITORING_KINDS:
            continue
        for version in VERSIONS:
            kubernetes_validate.validate(doc, version, strict=True)
        checked += 1
    assert checked >= 12


def test_helm_test_runs_the_doctor_against_the_release() -> None:
    rendered = template("--show-only", "templates/tests/doctor.yaml")
    pod = find(rendered, "Pod", "feedbackstore-webhook-test")
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    assert pod["spec"]["containers"][0]["args"] == [
        "doctor",
        "--namespace",
        NAMESPACE,
        "--probe-namespace",
        "default",
        "--store-namespace",
        "default",
        "--secret",
        "feedbackstore-webhook-tls",
    ]
    for doc in rendered:
        policy = doc["metadata"]["annotations"]["helm.sh/hook-delete-policy"]
        assert "hook-succeeded" in policy, doc["kind"]


def test_uninstall_runs_manifests_cleanup_after_the_release_is_gone(
    defaults: list[dict[str, Any]],
) -> None:
    """`helm uninstall` runs manifests/cleanup/ once it deleted the release's objects, the status
    writer's Deployment among them: its RBAC first, then the Job; all gone once it succeeded."""
    hooks = [d for d in defaults if "helm.sh/hook" in (d["metadata"].get("annotations") or {})]
    cleanup = {
        key: doc for key, doc in ((_key(d), d) for d in hooks) if key[1] == "feedbackstore-cleanup"
    }
    shipped = {_key(d): d for d in kustomize(MANIFESTS / "cleanup")}
    assert set(cleanup) == set(shipped)
    for key, doc in cleanup.items():
        annotations = doc["metadata"]["annotations"]
        weight = "0" if key[0] == "Job" else "-1"
        assert annotations == {
            "helm.sh/hook": "post-delete",
            "helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded",
            "helm.sh/hook-weight": weight,
        }
        bare = _without_chart_marks({**doc, "metadata": {**doc["metadata"], "annotations": {}}})
        assert bare == shipped[key], key
    job = cleanup[("Job", "feedbackstore-cleanup")]
    assert job["spec"]["template"]["spec"]["containers"][0]["args"] == [
        "cleanup", "--lease-namespace", "$(POD_NAMESPACE)", "--wait-for-lease", "60"
    ]  # fmt: skip


def _key(doc: dict[str, Any]) -> tuple[str, str]:
    return doc["kind"], doc["metadata"]["name"]


def test_a_new_webhook_entry_in_manifests_reaches_the_chart_with_knobs_of_its_own(
    tmp_path: pathlib.Path,
) -> None:
    """What another change to manifests/ (say, an AgentDeployment entry with matchConditions)
    does to the chart once regenerated: the entry verbatim, its own failurePolicy and
    timeoutSeconds in values.yaml, its namespaceSelector on the shared excludedNamespaces."""
    copy_of = tmp_path / "manifests"
    shutil.copytree(MANIFESTS, copy_of, ignore=shutil.ignore_patterns("helm"))
    path = copy_of / "webhook" / "validatingwebhookconfiguration.yaml"
    registration = yaml.safe_load(path.read_text(encoding="utf-8"))
    entry = copy.deepcopy(registration["webhooks"][0])
    entry.update(
        name="validate.agentdeployments.agents.ctxmesh.ai",
        failurePolicy="Ignore",
        timeoutSeconds=3,
        matchConditions=[{"name": "has-feedback", "expression": "has(object.spec.feedback)"}],
    )
    registration["webhooks"].append(entry)
    path.write_text(yaml.safe_dump(registration), encoding="utf-8")
    files = chart_files(copy_of)
    values = yaml.safe_load(files["values.yaml"])
    assert values["webhookConfiguration"]["webhooks"][entry["name"]] == {
        "failurePolicy": "Ignore",
        "timeoutSeconds": 3,
    }
    template_text = files["templates/webhook/validatingwebhookconfiguration.yaml"]
    assert "expression: has(object.spec.feedback)" in template_text
    excluded = "append .Values.webhookConfiguration.excludedNamespaces"
    assert template_text.count(excluded) == len(registration["webhooks"])


def test_annotations_of_the_webhook_configuration_in_manifests_stay_beside_the_chart_s(
    tmp_path: pathlib.Path,
) -> None:
    copy_of = tmp_path / "manifests"
    shutil.copytree(MANIFESTS, copy_of, ignore=shutil.ignore_patterns("helm"))
    path = copy_of / "webhook" / "validatingwebhookconfiguration.yaml"
    registration = yaml.safe_load(path.read_text(encoding="utf-8"))
    registration["metadata"]["annotations"] = {"example.com/owner": "platform"}
    path.write_text(yaml.safe_dump(registration), encoding="utf-8")
    text = chart_files(copy_of)["templates/webhook/validatingwebhookconfiguration.yaml"]
    assert "    example.com/owner: platform\n" in text
    assert "cert-manager.io/inject-ca-from" in text
