"""docs/install.md "Helm", verbatim, with the real helm v4 on a real node.

The chart's release becomes real pods of the image built from the Dockerfile; `helm test`
runs the doctor in a pod of its own; then, under a client creating, updating and deleting
FeedbackStores without pause, `helm upgrade` rolls both Deployments and `helm uninstall`
removes everything, the webhook configuration first: not one request may fail, and nothing
of the release is left. The CRD is applied beforehand, as the platform's chart would, and
removed afterwards with the namespace, so the modules after this one find the node empty.
"""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from tests.node.cluster import Node
from tests.node.load_support import Counts, Load
from tests.node.test_install_readme import ALL_WELL, Shell, blocks, commands, section
from tests.support import helm_binary

pytestmark = [pytest.mark.node, pytest.mark.xdist_group("node"), pytest.mark.timeout(900)]

NS = "-n feedbackstore-system"
RELEASE = "feedbackstore-webhook"
CHART = "manifests/helm/feedbackstore-webhook"
PART_OF = "app.kubernetes.io/part-of=feedbackstore-webhook"
CRD = "manifests/crd/feedbackstores.agents.ctxmesh.ai.yaml"


@pytest.fixture(scope="module", name="shell")
def _shell(node: Node, tmp_path_factory: pytest.TempPathFactory) -> Shell:
    shell = Shell(node, tmp_path_factory.mktemp("helm"))
    helm_dir = os.path.dirname(helm_binary.helm())
    shell.env["PATH"] = f"{helm_dir}:{shell.env['PATH']}"
    for part in ("HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"):
        shell.env[part] = str(shell.cwd.parent / part.lower())
    return shell


def _ok(shell: Shell, command: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    started = time.monotonic()
    result = shell.run(command, timeout=timeout)
    print(f"{time.monotonic() - started:6.1f} s  {command}")
    assert result.returncode == 0, (command, result.stdout, result.stderr)
    return result


@pytest.fixture(scope="module", name="installed")
def _installed(shell: Shell, node: Node) -> dict[str, subprocess.CompletedProcess[str]]:
    """The platform's CRD, then the docs' Helm block, every command."""
    _ok(shell, f"kubectl apply -f {CRD}")
    _ok(shell, "kubectl wait --for=condition=Established crd/feedbackstores.agents.ctxmesh.ai")
    done = {}
    for command in commands(blocks(section("Helm"), "sh")[0]):
        done[command.split()[0] + " " + command.split()[1]] = _ok(shell, command)
    return done


def test_readme_helm_install_brings_every_pod_up_and_helm_test_passes(
    installed: dict[str, subprocess.CompletedProcess[str]], node: Node
) -> None:
    assert list(installed) == [
        "feedbackstore-webhook certs",
        "kubectl create",
        "kubectl label",
        "helm install",
        "helm test",
    ]
    assert "STATUS: deployed" in installed["helm install"].stdout
    ready = node.kubectl(
        "-n",
        "feedbackstore-system",
        "get",
        "pods",
        "-l",
        PART_OF,
        "-o",
        "jsonpath={range .items[*]}{.metadata.name} {.status.containerStatuses[0].ready}"
        "{'\\n'}{end}",
    ).stdout.split("\n")
    tested = installed["helm test"].stdout
    print(tested)
    rows = [line.split() for line in ready if line]
    assert len(rows) == 4, ready
    assert all(flag == "true" for _, flag in rows), ready
    assert "Phase:          Succeeded" in tested, tested
    assert ALL_WELL in tested, tested
    assert "kube-apiserver called the webhook" in tested, tested
    # A passed test leaves none of its objects.
    left = node.kubectl("get", "clusterrole,clusterrolebinding", "feedbackstore-webhook-test")
    assert "NotFound" in left.stderr, left.stdout


def _under_load(shell: Shell, node: Node, command: str) -> tuple[int, Counts, float]:
    """(requests from `command` on, the counts, seconds it took) with the load running
    throughout, and 3 s past the release's old pods being gone."""
    _ok(shell, "kubectl create namespace load")
    try:
        with Load(node.plane, "load", threads=4) as load:
            time.sleep(3)
            before = load.counts.requests
            started = time.monotonic()
            _ok(shell, command)
            took = time.monotonic() - started
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and _terminating(node):
                time.sleep(0.5)
            time.sleep(3)
            counts = load.stop()
    finally:
        shell.run("kubectl delete namespace load --wait=true --timeout=120s", timeout=180)
    print(
        f"{command}: {took:.1f} s; {counts.requests} requests "
        f"({counts.requests - before} from it on), {counts.failures} failed"
    )
    return counts.requests - before, counts, took


def _condition_types(node: Node) -> str:
    """The condition types of the store in namespace `kept`, as kubectl prints them."""
    path = "jsonpath={.items[*].status.conditions[*].type}"
    return node.kubectl("-n", "kept", "get", "fs", "-o", path).stdout


def _terminating(node: Node) -> bool:
    listed = node.kubectl(
        "-n",
        "feedbackstore-system",
        "get",
        "pods",
        "-o",
        "jsonpath={.items[*].metadata.deletionTimestamp}",
    ).stdout
    return bool(listed.strip())


def test_helm_upgrade_rolls_both_deployments_under_load_losing_no_request(
    installed: object, shell: Shell, node: Node
) -> None:
    before = _pod_names(node)
    upgrade = (
        f"helm upgrade {RELEASE} {CHART} {NS} --reuse-values --wait"
        " --set-string webhook.podAnnotations.rollout=2,statusWriter.podAnnotations.rollout=2"
    )
    during, counts, _ = _under_load(shell, node, upgrade)
    assert counts.failures == 0, counts.messages
    assert during > 200
    after = _pod_names(node)
    assert len(after) == 4
    assert not (after & before), (before, after)
    revision = _ok(shell, f"helm status {RELEASE} {NS}").stdout
    assert "REVISION: 2" in revision, revision


def _pod_names(node: Node) -> set[str]:
    return set(
        node.kubectl(
            "-n", "feedbackstore-system", "get", "pods", "-o", "jsonpath={.items[*].metadata.name}"
        ).stdout.split()
    )


def test_helm_uninstall_under_load_loses_no_request_and_leaves_nothing(
    installed: object, shell: Shell, node: Node
) -> None:
    # A store the writer marked, kept across the uninstall: its post-delete hook (`cleanup`)
    # takes the marks back.
    store = (
        '{"apiVersion": "agents.ctxmesh.ai/v1beta1", "kind": "FeedbackStore", "metadata": '
        '{"name": "kept"}, "spec": {"human": {"scores": [{"name": "thumbs"}]}}}'
    )
    _ok(shell, f"kubectl create namespace kept && kubectl -n kept apply -f - <<<'{store}'")
    deadline = time.monotonic() + 60
    while "Stalled" not in _condition_types(node) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert "Stalled" in _condition_types(node)
    during, counts, _ = _under_load(shell, node, f"helm uninstall {RELEASE} {NS} --wait")
    assert counts.failures == 0, counts.messages
    assert during > 100
    kept = json.loads(node.kubectl("-n", "kept", "get", "fs", "-o", "json").stdout)["items"]
    assert len(kept) == 1
    assert [c["type"] for c in kept[0].get("status", {}).get("conditions", [])] == []
    managers = {e["manager"] for e in kept[0]["metadata"].get("managedFields", [])}
    assert "feedbackstore-status-writer" not in managers, managers
    _ok(shell, "kubectl delete namespace kept --wait=true --timeout=120s")
    for kind, name in (
        ("validatingwebhookconfiguration", "feedbackstore-webhook"),
        ("clusterrole", "feedbackstore-status-writer"),
        ("clusterrolebinding", "feedbackstore-status-writer"),
        ("clusterrole", "feedbackstore-webhook-test"),
    ):
        gone = node.kubectl("get", kind, name)
        assert "NotFound" in gone.stderr, (kind, gone.stdout)
    left = node.kubectl(
        "-n",
        "feedbackstore-system",
        "get",
        "all,secret,lease,pdb,sa,role",
        "-l",
        "app.kubernetes.io/managed-by=Helm",
        "-o",
        "name",
    ).stdout
    assert left.strip() == "", left
    # The CRD is the platform's: the release never owned it.
    assert node.kubectl("get", "crd", "feedbackstores.agents.ctxmesh.ai").returncode == 0


def test_a_plain_install_under_load_refuses_writes_until_a_webhook_pod_is_ready(
    installed: object, shell: Shell, node: Node
) -> None:
    """Why the docs give a second way to install into a busy cluster: the registration is
    created with the Deployments, and with failurePolicy Fail every write before a webhook
    pod is Ready fails."""
    install = next(c for c in commands(blocks(section("Helm"), "sh")[0]) if "helm install" in c)
    _, counts, _ = _under_load(shell, node, install)
    try:
        assert counts.failures > 0
        print("\n".join(counts.messages[:2]))
        assert all("failed calling webhook" in m for m in counts.messages), counts.messages
    finally:
        _ok(shell, f"helm uninstall {RELEASE} {NS} --wait")


def test_installing_failing_open_then_closing_loses_no_request_under_load(
    installed: object, shell: Shell, node: Node
) -> None:
    """The docs' way into a cluster that already writes FeedbackStores, verbatim."""
    steps = commands(blocks(section("Helm"), "sh")[1])
    assert [s.split()[:2] for s in steps] == [["helm", "install"], ["helm", "upgrade"]]
    _, counts, _ = _under_load(shell, node, " && ".join(steps))
    assert counts.failures == 0, counts.messages
    judging = "jsonpath={.webhooks[0].name} {.webhooks[0].failurePolicy}"
    policy = node.kubectl(
        "get", "validatingwebhookconfiguration", "feedbackstore-webhook", "-o", judging
    ).stdout
    assert policy == "validate.feedbackstores.agents.ctxmesh.ai Fail"
    _ok(shell, f"helm uninstall {RELEASE} {NS} --wait")


def test_cleanup_leaves_the_node_as_the_next_module_expects(shell: Shell, node: Node) -> None:
    """Not a check of the chart: the namespace, the CRD and the certificates go, as after
    the docs' Uninstall, for tests/node/test_install_readme.py."""
    shell.run(f"helm uninstall {RELEASE} {NS} --wait")
    _ok(
        shell,
        "kubectl delete namespace feedbackstore-system --ignore-not-found --wait=true",
        timeout=180,
    )
    _ok(shell, f"kubectl delete -f {CRD} --ignore-not-found --wait=true", timeout=180)
    _ok(shell, "kubectl wait --for=delete namespace/load --timeout=120s || true", timeout=180)
    assert node.kubectl("get", "validatingwebhookconfigurations", "-o", "name").stdout == ""
