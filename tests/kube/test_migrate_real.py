"""`feedbackstore-webhook migrate` against a real kube-apiserver v1.37.2: a GitOps directory of
FeedbackStores and the AgentDeployments naming them (both served versions) is applied, migrated
in place, and applied again with kubectl, the way a repository is migrated (under the tests'
AgentDeployment CRD with and without the platform's four CEL rules); every agent then holds
its store's declaration as the server stored the store (defaults included), and the directory
equals the cluster (`kubectl diff` finds nothing). The "Migrate to the inline form" transcript of
docs/validate.md is this run.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s

from tests.kube.agents_crd import NO_CEL_AGENT_CRD, PLATFORM_AGENT_CRD
from tests.kube.cluster import install_crd, shipped_crd
from tests.kube.controlplane import ControlPlane
from tests.kube.inuse_support import AGENT_GROUP, AGENT_PLURAL, agent_crd_installed
from tests.kube.kubectl_support import Step, User, _user, console, matches_docs
from tests.kube.status_writer_support import Stores

pytestmark = [pytest.mark.kube, pytest.mark.xdist_group("kube")]
__all__ = ["_user"]  # the `user` fixture, imported by its function name

SCRIPT = str(pathlib.Path(sys.executable).with_name("feedbackstore-webhook"))
SECTION = ("validate.md", "## Migrate to the inline form (`spec.feedback`)")
OPENING = "# a repository with two FeedbackStores and three agents naming them, applied as it was"

STORES = """\
# one store per team
apiVersion: agents.ctxmesh.ai/v1beta1
kind: FeedbackStore
metadata:
  name: support-feedback
spec:
  mode: Enforce
  human:
    scores:
      - name: thumbs
        dataType: BOOLEAN
  external:
    - name: csat-webhook
      score: {name: csat, dataType: NUMERIC}
---
apiVersion: agents.ctxmesh.ai/v1beta1
kind: FeedbackStore
metadata:
  name: sales-feedback
spec:
  mode: Monitor
  human:
    scores:
      - name: tone
        dataType: CATEGORICAL
        categories: [friendly, pushy]
"""
AGENTS = """\
apiVersion: agents.ctxmesh.ai/v1beta1
kind: AgentDeployment
metadata:
  name: support-bot
spec:
  feedbackStoreRef: support-feedback  # shared with triage-bot
  replicas: 2
---
# still on the deprecated version
apiVersion: agents.ctxmesh.ai/v1alpha1
kind: AgentDeployment
metadata:
  name: triage-bot
spec: {replicas: 1, feedbackStoreRef: support-feedback}
---
apiVersion: agents.ctxmesh.ai/v1beta1
kind: AgentDeployment
metadata:
  name: sales-bot
spec:
  replicas: 1
  feedbackStoreRef: sales-feedback
"""
AGENT_STORES = {
    "support-bot": "support-feedback",
    "triage-bot": "support-feedback",
    "sales-bot": "sales-feedback",
}
# kube-apiserver's own warning for the version the CRD marks deprecated (migrate keeps versions)
DEPRECATED = (
    "Warning: agents.ctxmesh.ai/v1alpha1 AgentDeployment is deprecated; "
    "use agents.ctxmesh.ai/v1beta1 AgentDeployment\n"
)
REPLICAS = {"support-bot": 2, "triage-bot": 1, "sales-bot": 1}


@pytest.fixture(
    scope="module",
    autouse=True,
    params=[
        pytest.param(NO_CEL_AGENT_CRD, id="an AgentDeployment CRD without CEL"),
        pytest.param(PLATFORM_AGENT_CRD, id="the platform's AgentDeployment CRD with CEL"),
    ],
)
def crds(control_plane: ControlPlane, request: pytest.FixtureRequest) -> Iterator[None]:
    install_crd(control_plane, shipped_crd())
    with agent_crd_installed(control_plane, request.param):
        yield


def migrate(user: User, *args: str) -> Step:
    """`feedbackstore-webhook migrate` run from the user's directory, shown as a step."""
    result = subprocess.run(
        [SCRIPT, "migrate", *args],
        cwd=user.workdir,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    command = user.normalise("feedbackstore-webhook migrate " + " ".join(args))
    return Step(
        command, result.returncode, user.normalise(result.stdout), user.normalise(result.stderr)
    )


def agents_api(user: User) -> k8s.CustomObjectsApi:
    return Stores(user.plane, user.namespace).api


def agent_of(user: User, name: str) -> dict[str, Any]:
    found: dict[str, Any] = agents_api(user).get_namespaced_custom_object(
        AGENT_GROUP, "v1beta1", user.namespace, AGENT_PLURAL, name
    )
    return found


@pytest.mark.parametrize(
    "server_side",
    [pytest.param(False, id="kubectl apply"), pytest.param(True, id="kubectl apply --server-side")],
)
def test_a_migrated_directory_applies_cleanly_and_every_agent_keeps_its_declaration(
    user: User, server_side: bool
) -> None:
    deploy = user.workdir / "deploy"
    deploy.mkdir()
    (deploy / "stores.yaml").write_text(STORES)
    (deploy / "agents.yaml").write_text(AGENTS)
    apply = "kubectl apply --server-side -f deploy/" if server_side else "kubectl apply -f deploy/"
    before = user.run(apply.replace("deploy/", str(deploy)))
    assert before.returncode == 0, before.stderr

    migrated = migrate(user, "--in-place", "-n", user.namespace, "deploy/")
    assert migrated.returncode == 0, migrated.stderr
    after = user.run(apply.replace("deploy/", str(deploy)))
    assert (after.returncode, after.stderr) == (0, DEPRECATED), "no error, no other warning"
    after = Step(apply, after.returncode, after.stdout, after.stderr)

    stores = Stores(user.plane, user.namespace)
    for name, store in AGENT_STORES.items():
        stored = agent_of(user, name)
        assert stored["spec"] == {"feedback": stores.get(store)["spec"], "replicas": REPLICAS[name]}
    diff = user.run(f"kubectl diff -f {deploy}")
    assert (diff.returncode, diff.stdout, diff.stderr) == (0, "", DEPRECATED), "files = cluster"

    shown = console(
        [
            OPENING,
            migrated,
            f"$ cat {deploy.name}/agents.yaml",
            *(deploy / "agents.yaml").read_text().splitlines(),
            after,
        ]
    )
    if not server_side:
        assert matches_docs(shown, SECTION), f"docs block differs; the run printed:\n{shown}"
