"""The chart's renders, put through a real kube-apiserver v1.37 with strict field validation.

`helm template` (the real helm v4) with the default values and with every knob set
(tests/helm/values-every-knob.yaml), then `kubectl apply --server-side --dry-run=server
--validate=strict`: kube-apiserver decodes, defaults, validates and admits each object as it
would on `helm install`, persisting nothing. The kinds of cert-manager and the Prometheus
Operator have no CRD here and are left out (tests/webhook/manifests/test_chart.py checks them
against manifests/; promtool checks the rules).
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest
import yaml

from tests.kube.cluster import install_crd, new_namespace, shipped_crd
from tests.kube.controlplane import ControlPlane
from tests.support import helm_binary
from tests.support.helm_binary import CHART
from tests.support.manifest_render import MANIFESTS

pytestmark = [pytest.mark.kube, pytest.mark.xdist_group("kube")]

EVERY_KNOB = pathlib.Path(__file__).resolve().parents[1] / "helm" / "values-every-knob.yaml"
NOT_HERE = {"Issuer", "Certificate", "ServiceMonitor", "PrometheusRule"}


def _pki(directory: pathlib.Path) -> list[str]:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "webhook.cli.main",
            "certs",
            "--out-dir",
            str(directory),
            "--base",
            str(MANIFESTS),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    files = f"tls.certificate={directory / 'tls.crt'},tls.key={directory / 'tls.key'}"
    return ["--set-file", f"{files},tls.caBundle={directory / 'ca.crt'}"]


@pytest.mark.parametrize(
    "every_knob",
    [pytest.param(False, id="the default values"), pytest.param(True, id="every knob set")],
)
def test_kube_apiserver_accepts_every_object_of_the_render_strictly(
    control_plane: ControlPlane, tmp_path: pathlib.Path, every_knob: bool
) -> None:
    install_crd(control_plane, shipped_crd())
    namespace = new_namespace(control_plane, "helm")
    probe = new_namespace(control_plane, "probe")
    args = ["--namespace", namespace, "--set", f"test.probeNamespace={probe}"]
    if every_knob:
        args += ["-f", str(EVERY_KNOB), *_pki(tmp_path)]
    rendered = helm_binary.run("template", "fbw", str(CHART), *args).stdout
    docs = [d for d in yaml.safe_load_all(rendered) if d is not None]
    kept = [d for d in docs if d["kind"] not in NOT_HERE]
    assert len(kept) >= 14
    # The `helm test` pod names its ServiceAccount, which a dry run does not create.
    control_plane.kubectl(
        "-n", namespace, "create", "serviceaccount", "feedbackstore-webhook-test", check=True
    )
    result = control_plane.kubectl(
        "apply",
        "--server-side",
        "--dry-run=server",
        "--validate=strict",
        "--force-conflicts",
        "--field-manager=helm",
        "-f",
        "-",
        stdin=yaml.safe_dump_all(kept),
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == "", result.stderr
    applied = [line for line in result.stdout.splitlines() if line.endswith("(server dry run)")]
    assert len(applied) == len(kept), result.stdout


def test_a_typo_in_a_rendered_object_is_refused_by_the_strict_server(
    control_plane: ControlPlane,
) -> None:
    """The check can fail: a misspelt field in the rendered webhook Deployment is refused."""
    namespace = new_namespace(control_plane, "helm")
    shown = ("--show-only", "templates/webhook/deployment.yaml")
    rendered = helm_binary.run("template", "fbw", str(CHART), "-n", namespace, *shown).stdout
    deployment = yaml.safe_load(rendered)
    deployment["spec"]["template"]["spec"]["containers"][0]["readOnlyRootFS"] = True
    result = control_plane.kubectl(
        "apply",
        "--server-side",
        "--dry-run=server",
        "--validate=strict",
        "--field-manager=helm",
        "-f",
        "-",
        stdin=yaml.safe_dump(deployment),
    )
    assert result.returncode != 0
    field = '.spec.template.spec.containers[name="webhook"].readOnlyRootFS'
    assert f"{field}: field not declared in schema" in result.stderr
