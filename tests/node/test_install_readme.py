"""docs/install.md "Path 1" and "Verify", verbatim, on a real node.

The commands are read out of docs/install.md's own blocks and run with bash in a copy
of the tree (so `certs/` is written there), with the `test` extra's kubectl
and this project's CLI on PATH and the test cluster's admin kubeconfig: the
shipped manifests become real pods of the image built from the Dockerfile,
scheduled by kube-scheduler, started by a kubelet through containerd, the
Service served by kube-proxy, the webhook called by kube-apiserver through it.
What the commands print is compared with the page's console blocks; `doctor`
must then be all green.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import pathlib
import re
import shutil
import subprocess
import sysconfig
import time
from typing import Any

import pytest

from tests.docs.pages import section as docs_section
from tests.kube.cluster import eventually
from tests.node.cluster import Node
from tests.node.image_support import ROOT
from tests.node.load_support import Load

pytestmark = [pytest.mark.node, pytest.mark.xdist_group("node"), pytest.mark.timeout(1200)]

PIP_LINE = "python -m pip install ."
# What `doctor` reports on a healthy install: every one of its checks ok (inline-declarations
# included: ok where no AgentDeployment is served, as on this node).
DOCTOR_CHECKS = 17
ALL_WELL = (
    f"{DOCTOR_CHECKS} checks: {DOCTOR_CHECKS} ok, 0 warnings, 0 failed, 0 skipped — all is well"
)


def section(title: str) -> str:
    """The section `title` of docs/install.md, whose commands a user runs."""
    return docs_section("install.md", f"## {title}")


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.DOTALL)


def commands(block: str) -> list[str]:
    """The block's commands, a backslash-continued line joined to the next."""
    joined = block.replace("\\\n", "")
    return [line.strip() for line in joined.splitlines() if line.strip()]


class Shell:
    """bash in a copy of the tree, as a user who followed the docs would be."""

    def __init__(self, node: Node, workdir: pathlib.Path) -> None:
        self.cwd = workdir / "tree"
        self.cwd.mkdir()
        for part in ("manifests", "examples"):
            shutil.copytree(ROOT / part, self.cwd / part)
        (self.cwd / "certs").mkdir()
        shutil.copy(ROOT / "certs/README.md", self.cwd / "certs/README.md")
        scripts = sysconfig.get_path("scripts")
        self.env = {
            "PATH": f"{scripts}:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": str(workdir),
            "KUBECONFIG": str(node.kubeconfig),
            "LANG": os.environ.get("LANG", "C.UTF-8"),
        }

    def run(self, command: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", command],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


@pytest.fixture(scope="module", name="shell")
def _shell(node: Node, tmp_path_factory: pytest.TempPathFactory) -> Shell:
    return Shell(node, tmp_path_factory.mktemp("readme"))


@pytest.fixture(scope="module", name="path1")
def _path1(shell: Shell, node: Node) -> list[tuple[str, subprocess.CompletedProcess[str], float]]:
    """docs/install.md Path 1, every command but the pip install (the test venv holds the CLI)."""
    done = []
    for command in commands(
        blocks(section("Path 1: without cert-manager (the `certs` command)"), "sh")[0]
    ):
        if command.startswith(PIP_LINE):
            assert shutil.which("feedbackstore-webhook", path=shell.env["PATH"])
            continue
        started = time.monotonic()
        result = shell.run(command)
        elapsed = time.monotonic() - started
        print(f"{elapsed:6.1f} s  {command}")
        done.append((command, result, elapsed))
        if result.returncode != 0:
            break
    return done


def test_path1_installs_and_both_rollouts_finish(
    path1: list[tuple[str, subprocess.CompletedProcess[str], float]], node: Node
) -> None:
    failed = [(c, r.returncode, r.stdout, r.stderr) for c, r, _ in path1 if r.returncode != 0]
    pods = node.kubectl("-n", "feedbackstore-system", "get", "pods", "-o", "wide").stdout
    assert not failed, f"{failed}\n{pods}\n{node.logs()}"
    ran = [c.split()[0:3] for c, _, _ in path1]
    assert ran == [
        ["feedbackstore-webhook", "certs", "--namespace"],
        ["kubectl", "apply", "-k"],
        ["kubectl", "-n", "feedbackstore-system"],
        ["kubectl", "-n", "feedbackstore-system"],
    ]
    apply = path1[1][1]
    # Pod Security `restricted` and everything else: not one warning.
    assert "Warning" not in apply.stderr, apply.stderr
    for name, (_, result, _) in zip(
        ("feedbackstore-webhook", "feedbackstore-status-writer"), path1[2:], strict=True
    ):
        assert f'deployment "{name}" successfully rolled out' in result.stdout, result.stdout
    ready = node.kubectl(
        "-n",
        "feedbackstore-system",
        "get",
        "pods",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name} {.status.containerStatuses[0].ready}"
        " {.spec.nodeName}{'\\n'}{end}",
    ).stdout.split("\n")
    rows = [line.split() for line in ready if line]
    assert len(rows) == 4, pods
    assert all(ready == "true" and where == "fsnode" for _, ready, where in rows), pods


def test_pods_start_cleanly(path1: object, node: Node) -> None:
    """No restart, no failed liveness probe, and no failed readiness probe once a pod is Ready.

    Two probes may fail while a pod starts, because that is what they are for: the startup probe
    until the process listens, and the readiness probe between the startup probe passing (the
    kubelet probes readiness at once) and the pod's first Ready; the status writer's /readyz is
    503 until its first list of FeedbackStores is loaded, and it is not ready before. So a
    readiness failure counts only if recorded after the pod's Ready condition turned True, and
    that condition must not move (no pod leaves Ready or comes back) while the test watches."""
    ready_since = _ready_since(node)
    time.sleep(15)  # a few liveness and readiness periods
    assert _ready_since(node) == ready_since
    restarts = node.kubectl(
        "-n",
        "feedbackstore-system",
        "get",
        "pods",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name} {.status.containerStatuses[0].restartCount}"
        "{'\\n'}{end}",
    ).stdout
    assert [line.split()[1] for line in restarts.splitlines()] == ["0"] * 4, restarts
    listed = node.kubectl(
        "-n",
        "feedbackstore-system",
        "get",
        "events",
        "--field-selector",
        "type=Warning",
        "-o",
        "json",
    ).stdout
    events = json.loads(listed)["items"]
    shown = [
        f"{_seen(e).isoformat()} {e['involvedObject']['name']} {e['reason']}: {e['message']}"
        for e in events
    ]
    unexpected = [
        line
        for line, event in zip(shown, events, strict=True)
        if not _while_starting(event, ready_since)
    ]
    assert not unexpected, "\n".join(shown) + f"\nReady since: {ready_since}"


def _ready_since(node: Node) -> dict[str, dt.datetime]:
    """When each pod's Ready condition last turned True (every pod must be Ready)."""
    listed = node.kubectl("-n", "feedbackstore-system", "get", "pods", "-o", "json").stdout
    pods = json.loads(listed)
    since = {}
    for pod in pods["items"]:
        ready = next(c for c in pod["status"]["conditions"] if c["type"] == "Ready")
        assert ready["status"] == "True", pod["status"]
        since[pod["metadata"]["name"]] = _time(ready["lastTransitionTime"])
    assert len(since) == 4, since
    return since


def _while_starting(event: dict[str, Any], ready_since: dict[str, dt.datetime]) -> bool:
    """A failed startup probe, or a failed readiness probe of a pod not yet Ready."""
    message = event["message"]
    if event["reason"] != "Unhealthy":
        return False
    if message.startswith("Startup probe failed"):
        return True
    pod = event["involvedObject"]["name"]
    return (
        message.startswith("Readiness probe failed")
        and event["involvedObject"]["kind"] == "Pod"
        and pod in ready_since
        and _seen(event) <= ready_since[pod]
    )


def _seen(event: dict[str, Any]) -> dt.datetime:
    """When the event last happened (the kubelet's Events are counted, with lastTimestamp)."""
    series = event.get("series") or {}
    when = event.get("lastTimestamp") or series.get("lastObservedTime") or event["eventTime"]
    return _time(when)


def _time(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def test_verify_prints_what_the_readme_shows(path1: object, shell: Shell, node: Node) -> None:
    text = section("Verify")
    steps = commands(blocks(text, "sh")[0])
    consoles = blocks(text, "console")
    outputs = {}
    for command in steps:
        result = shell.run(command)
        outputs[command] = result
        if "get fs" in command:
            # "VALIDATED: True within seconds": the status writer in its pod says so.
            deadline = time.monotonic() + 30
            while "True" not in _column(result.stdout, "VALIDATED") and time.monotonic() < deadline:
                time.sleep(0.5)
                result = shell.run(command)
            outputs[command] = result
    *good, refused = steps
    for command in good:
        assert outputs[command].returncode == 0, (command, outputs[command].stderr)
    get_fs = next(c for c in steps if "get fs" in c)
    header = outputs[get_fs].stdout.splitlines()[0]
    # The comment names every column kubectl prints, in order.
    commented = get_fs.split("#", 1)[1].split("(")[0]
    assert header.split() == commented.split(), header
    assert _column(outputs[get_fs].stdout, "VALIDATED") == ["True"], outputs[get_fs].stdout
    assert outputs[refused].returncode != 0
    assert outputs[refused].stderr == consoles[0]
    # The transcript: `$ command`, then what it printed (stderr's warning, stdout).
    transcript = consoles[1]
    first, *expected = transcript.splitlines()
    assert first.startswith("$ ")
    result = shell.run(first[2:])
    assert result.returncode == 0, result.stderr
    assert (result.stderr + result.stdout).splitlines() == expected


def _column(table: str, name: str) -> list[str]:
    lines = table.splitlines()
    if not lines or name not in lines[0]:
        return []
    start = lines[0].index(name)
    return [line[start:].split()[0] for line in lines[1:] if len(line) > start]


def test_doctor_is_all_green_on_the_healthy_install(
    path1: object, shell: Shell, node: Node
) -> None:
    result = shell.run("feedbackstore-webhook doctor")
    lines = result.stdout.splitlines()
    assert result.returncode == 0, result.stdout + result.stderr
    checks = [line for line in lines if re.match(r"^(ok|WARN|FAIL|skip)\s", line)]
    assert len(checks) == DOCTOR_CHECKS, result.stdout
    assert all(line.startswith("ok ") for line in checks), result.stdout
    assert lines[-1] == ALL_WELL
    answers = next(line for line in checks if line.split()[1] == "webhook-answers")
    assert "kube-apiserver called the webhook" in answers
    endpoints = next(line for line in checks if line.split()[1] == "service-endpoints")
    assert "2 ready" in endpoints, endpoints
    assert "unused" not in endpoints, endpoints


def doctor(shell: Shell) -> tuple[int, dict[str, str], str]:
    """(exit code, {check: ok/WARN/FAIL/skip}, the whole output) of a plain `doctor`."""
    result = shell.run("feedbackstore-webhook doctor")
    checks = {}
    for line in result.stdout.splitlines():
        found = re.match(r"^(ok|WARN|FAIL|skip)\s+(\S+)", line)
        if found:
            checks[found.group(2)] = found.group(1)
    return result.returncode, checks, result.stdout + result.stderr


def failed_checks(checks: dict[str, str]) -> set[str]:
    return {name for name, verdict in checks.items() if verdict == "FAIL"}


def until_healthy(shell: Shell, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while True:
        code, checks, output = doctor(shell)
        if code == 0 and not failed_checks(checks):
            return
        assert time.monotonic() < deadline, f"doctor never green again:\n{output}"
        time.sleep(1)


def _ok(shell: Shell, command: str) -> None:
    result = shell.run(command)
    assert result.returncode == 0, (command, result.stdout, result.stderr)


NS = "-n feedbackstore-system"
WEBHOOK_PODS = "-l app.kubernetes.io/component=webhook"
WRITER_PODS = "-l app.kubernetes.io/component=status-writer"
OTHER_CA = (
    "feedbackstore-webhook certs --namespace feedbackstore-system --service feedbackstore-webhook"
    " --out-dir other-ca/ >/dev/null"
)
# (what is broken, the commands that break it, the checks doctor must fail, those it may also
# fail while the kubelet refreshes a mounted Secret, the commands that repair it)
BREAKS = {
    "webhook-pods-down": (
        [
            f"kubectl {NS} scale deployment/feedbackstore-webhook --replicas=0",
            f"kubectl {NS} wait --for=delete pod {WEBHOOK_PODS} --timeout=90s",
        ],
        {"service-endpoints", "webhook-answers"},
        set(),
        [
            f"kubectl {NS} scale deployment/feedbackstore-webhook --replicas=2",
            f"kubectl {NS} rollout status deployment/feedbackstore-webhook",
        ],
    ),
    "writer-scaled-to-0": (
        [
            f"kubectl {NS} scale deployment/feedbackstore-status-writer --replicas=0",
            f"kubectl {NS} wait --for=delete pod {WRITER_PODS} --timeout=90s",
        ],
        {"status-writer-lease"},
        set(),
        [
            f"kubectl {NS} scale deployment/feedbackstore-status-writer --replicas=2",
            f"kubectl {NS} rollout status deployment/feedbackstore-status-writer",
        ],
    ),
    "cabundle-of-another-ca": (
        [
            OTHER_CA,
            "kubectl patch validatingwebhookconfiguration feedbackstore-webhook --type=json -p "
            '"[{\\"op\\": \\"replace\\", \\"path\\": \\"/webhooks/0/clientConfig/caBundle\\",'
            ' \\"value\\": \\"$(base64 -w0 < other-ca/ca.crt)\\"}]"',
        ],
        {"ca-bundle", "webhook-answers"},
        set(),
        ["kubectl apply -k certs/"],
    ),
    "secret-of-another-ca": (
        [
            OTHER_CA,
            f"kubectl {NS} create secret tls feedbackstore-webhook-tls --cert other-ca/tls.crt"
            " --key other-ca/tls.key --dry-run=client -o yaml | kubectl apply -f -",
        ],
        {"ca-bundle"},
        {"webhook-answers"},
        # The pods that reloaded the other pair would take the good one back only at the
        # kubelet's next refresh of the mount, and one that doctor's single probe does not
        # reach would fail the next test's calls: fresh pods instead.
        [
            "kubectl apply -k certs/",
            f"kubectl {NS} rollout restart deployment/feedbackstore-webhook",
            f"kubectl {NS} rollout status deployment/feedbackstore-webhook --timeout=180s",
        ],
    ),
}


@pytest.mark.parametrize("broken", list(BREAKS))
def test_doctor_names_what_is_broken(path1: object, shell: Shell, broken: str) -> None:
    breaking, must_fail, may_fail, repair = BREAKS[broken]
    until_healthy(shell)
    for command in breaking:
        _ok(shell, command)
    try:
        code, checks, output = doctor(shell)
        assert code == 1, output
        assert must_fail <= failed_checks(checks) <= must_fail | may_fail, output
        assert len(checks) == DOCTOR_CHECKS, output
    finally:
        for command in repair:
            _ok(shell, command)
        shell.run("rm -rf other-ca")
    until_healthy(shell)


def _restart_under_load(shell: Shell, node: Node, restart: str) -> tuple[int, int, list[str]]:
    """(requests from the restart on, failures, their messages) while `restart` rolls the
    webhook and the old pods go."""
    _ok(shell, "kubectl create namespace load")
    try:
        with Load(node.plane, "load", threads=4) as load:
            time.sleep(3)
            before = load.counts.requests
            started = time.monotonic()
            _ok(shell, restart)
            _ok(shell, f"kubectl {NS} rollout status deployment/feedbackstore-webhook")
            rolled = time.monotonic() - started
            # The old pods' endings under load too: until only the two new pods are left.
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and _webhook_pods(node) != 2:
                time.sleep(0.5)
            time.sleep(3)
            counts = load.stop()
    finally:
        shell.run("kubectl delete namespace load")
    during = counts.requests - before
    print(
        f"{restart}: rolled in {rolled:.1f} s; {counts.requests} requests "
        f"({during} from the restart on), {counts.failures} failed"
    )
    return during, counts.failures, counts.messages


# What the shipped webhook Deployment does so a rollout loses nothing, taken away: no
# startup or readiness probe (a pod counts as ready the moment its process starts,
# before Python listens), no shutdown delay (SIGTERM closes the listener at once, while
# kube-proxy still sends to it; the last --shutdown-delay given wins).
BROKEN_ROLLOUT = [
    {"op": "remove", "path": "/spec/template/spec/containers/0/startupProbe"},
    {"op": "remove", "path": "/spec/template/spec/containers/0/readinessProbe"},
    {"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": "--shutdown-delay"},
    {"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": "0"},
]


def test_the_load_catches_a_rollout_that_loses_requests(
    path1: object, shell: Shell, node: Node
) -> None:
    """The load test can fail: the same rollout restart, of a webhook Deployment stripped of
    its probes and shutdown delay, loses requests (kube-apiserver does not
    retry a refused connection, and the webhook fails closed)."""
    until_healthy(shell)
    patch = json.dumps(BROKEN_ROLLOUT)
    _ok(shell, f"kubectl {NS} patch deployment/feedbackstore-webhook --type=json -p '{patch}'")
    try:
        _ok(shell, f"kubectl {NS} rollout status deployment/feedbackstore-webhook")
        restart = f"kubectl {NS} rollout restart deployment/feedbackstore-webhook"
        # A loss needs a call in a window of about a second per pod: up to three rollouts.
        for attempt in range(1, 4):
            during, failures, messages = _restart_under_load(shell, node, restart)
            print(f"broken variant, rollout {attempt}: {failures} of {during} failed")
            assert during > 200
            if failures:
                break
        assert failures > 0
        print("\n".join(messages[:3]))
        assert all("failed calling webhook" in message for message in messages), messages
    finally:
        _ok(shell, "kubectl apply -k certs/")
        _ok(shell, f"kubectl {NS} rollout status deployment/feedbackstore-webhook --timeout=180s")
    shipped = node.kubectl(
        "-n",
        "feedbackstore-system",
        "get",
        "deployment/feedbackstore-webhook",
        "-o",
        "jsonpath={.spec.template.spec.containers[0].args}",
    ).stdout
    args = json.loads(shipped)
    assert args.count("--shutdown-delay") == 1, args
    assert args[args.index("--shutdown-delay") + 1] == "7", args
    until_healthy(shell)


def test_rollout_restart_of_the_webhook_loses_no_request(
    path1: object, shell: Shell, node: Node
) -> None:
    """`kubectl rollout restart` of the webhook under a client that creates, updates and
    deletes FeedbackStores without pause: not one request fails (the shipped readiness
    and shutdown delay at work, kube-proxy's endpoints in between)."""
    until_healthy(shell)
    restart = f"kubectl {NS} rollout restart deployment/feedbackstore-webhook"
    during, failures, messages = _restart_under_load(shell, node, restart)
    assert failures == 0, messages
    assert during > 200  # a load that matters: hundreds of webhook calls


def _pod_memory(node: Node) -> dict[str, float]:
    """Each feedbackstore-system pod's memory in MiB: its cgroup's usage (the kubelet's
    cgroupfs layout, cgroup v1), as the kubelet counts it against the pod's limit."""
    listed = node.kubectl(
        "-n",
        "feedbackstore-system",
        "get",
        "pods",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name} {.metadata.uid}{'\\n'}{end}",
    ).stdout
    memory = {}
    for line in listed.splitlines():
        name, uid = line.split()
        found = list(pathlib.Path("/sys/fs/cgroup/memory/kubepods").glob(f"**/pod{uid}"))
        if found:
            usage = int((found[0] / "memory.usage_in_bytes").read_text())
            memory[name] = usage / 2**20
    return memory


def test_pods_memory_under_load_stays_far_below_their_limits(
    path1: object, shell: Shell, node: Node
) -> None:
    """Under the continuous create/update/delete load (every create and update judged by
    the webhook, every store's condition written by the writer), each pod's peak memory
    stays under half its 256 MiB limit."""
    until_healthy(shell)
    idle = _pod_memory(node)
    _ok(shell, "kubectl create namespace load")
    peak: dict[str, float] = {}
    try:
        with Load(node.plane, "load", threads=4) as load:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                for pod, mib in _pod_memory(node).items():
                    peak[pod] = max(peak.get(pod, 0.0), mib)
                time.sleep(1)
            counts = load.stop()
    finally:
        shell.run("kubectl delete namespace load")
    for pod in sorted(peak):
        print(f"{pod}: idle {idle.get(pod, 0):.1f} MiB, peak under load {peak[pod]:.1f} MiB")
    print(f"{counts.requests} requests in 20 s, {counts.failures} failed")
    assert counts.failures == 0, counts.messages
    assert counts.requests > 1000
    assert len(peak) == 4, peak
    assert all(mib < 128 for mib in peak.values()), peak


def _webhook_pods(node: Node) -> int:
    listed = node.kubectl(
        "-n",
        "feedbackstore-system",
        "get",
        "pods",
        "-l",
        "app.kubernetes.io/component=webhook",
        "-o",
        "name",
    )
    return len(listed.stdout.split())


def _evict(node: Node, pod: str) -> tuple[int, str]:
    body = json.dumps(
        {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": pod, "namespace": "feedbackstore-system"},
        }
    ).encode()
    status, answer = node.plane.raw(
        "POST",
        f"/api/v1/namespaces/feedbackstore-system/pods/{pod}/eviction",
        body,
        "application/json",
    )
    return status, answer.decode(errors="replace")


def test_the_pdb_allows_one_webhook_eviction_and_refuses_the_second(
    path1: object, shell: Shell, node: Node
) -> None:
    """Under load: the first webhook pod's eviction is allowed, the second's refused by the
    PodDisruptionBudget while the first is replaced, and no request fails."""
    until_healthy(shell)
    pods = node.kubectl(
        "-n",
        "feedbackstore-system",
        "get",
        "pods",
        "-l",
        "app.kubernetes.io/component=webhook",
        "-o",
        "name",
    ).stdout.split()
    assert len(pods) == 2, pods
    _ok(shell, "kubectl create namespace load")
    try:
        with Load(node.plane, "load", threads=4) as load:
            time.sleep(2)
            first = _evict(node, pods[0].split("/")[1])
            second = _evict(node, pods[1].split("/")[1])
            _ok(shell, f"kubectl {NS} rollout status deployment/feedbackstore-webhook")
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and _webhook_pods(node) != 2:
                time.sleep(0.5)
            time.sleep(3)
            counts = load.stop()
    finally:
        shell.run("kubectl delete namespace load")
    print(
        f"evictions: {first[0]}, {second[0]}; {counts.requests} requests, {counts.failures} failed"
    )
    assert first[0] == 201, first
    assert second[0] == 429, second
    assert "disruption budget" in second[1], second
    assert counts.failures == 0, counts.messages


def test_the_standby_writer_leads_within_the_lease_when_the_leader_is_deleted(
    path1: object, shell: Shell, node: Node
) -> None:
    until_healthy(shell)
    lease = json.loads(
        node.kubectl(
            "-n",
            "feedbackstore-system",
            "get",
            "lease",
            "feedbackstore-status-writer",
            "-o",
            "json",
        ).stdout
    )
    leader = lease["spec"]["holderIdentity"].split("_")[0]
    duration = lease["spec"]["leaseDurationSeconds"]
    started = time.monotonic()
    _ok(shell, f"kubectl {NS} delete pod {leader} --wait=false")
    holder = leader
    while time.monotonic() - started < duration + 5:
        spec = json.loads(
            node.kubectl(
                "-n",
                "feedbackstore-system",
                "get",
                "lease",
                "feedbackstore-status-writer",
                "-o",
                "json",
            ).stdout
        )["spec"]
        holder = (spec.get("holderIdentity") or "").split("_")[0]
        if holder and holder != leader:
            break
        time.sleep(0.2)
    took = time.monotonic() - started
    print(f"leader {leader} deleted; {holder} leads after {took:.1f} s (lease {duration} s)")
    assert holder, spec
    assert holder != leader, holder
    assert took < duration, took
    # Conditions keep converging under the new leader.
    _ok(shell, "kubectl create namespace after-handover")
    _ok(
        shell,
        "sed 's/namespace: agents/namespace: after-handover/' examples/minimal.yaml"
        " | kubectl apply -f -",
    )
    deadline = time.monotonic() + 20
    status = ""
    while time.monotonic() < deadline and status != "True":
        status = node.kubectl(
            "-n",
            "after-handover",
            "get",
            "fs",
            "support-feedback",
            "-o",
            "jsonpath={.status.conditions[?(@.type=='Validated')].status}",
        ).stdout
        time.sleep(0.3)
    assert status == "True"
    _ok(shell, f"kubectl {NS} rollout status deployment/feedbackstore-status-writer")
    shell.run("kubectl delete namespace after-handover --wait=false")


def _reloads(node: Node) -> dict[str, int]:
    """Each webhook pod's count of "certificate reloaded" log lines."""
    names = node.kubectl(
        "-n",
        "feedbackstore-system",
        "get",
        "pods",
        "-l",
        "app.kubernetes.io/component=webhook",
        "-o",
        "name",
    ).stdout.split()
    counts = {}
    for name in names:
        log = node.kubectl("-n", "feedbackstore-system", "logs", name).stdout
        counts[name] = log.count('"certificate reloaded"')
    return counts


def _until_every_pod_reloaded(node: Node, before: dict[str, int], timeout: float = 120) -> float:
    started = time.monotonic()
    while True:
        now = _reloads(node)
        if now and all(now[name] > before.get(name, 0) for name in now):
            return time.monotonic() - started
        assert time.monotonic() - started < timeout, (before, now)
        time.sleep(1)


def test_rotation_with_a_new_ca_as_the_readme_says_loses_nothing(
    path1: object, shell: Shell, node: Node
) -> None:
    """docs/install.md "Rotate the CA", its commands verbatim, under load: both CAs trusted in
    every entry, the new pair served by fresh pods, the old CA dropped; no request fails."""
    until_healthy(shell)
    old_ca = (shell.cwd / "certs/ca.crt").read_bytes()
    steps = commands(blocks(section("Rotate the CA"), "sh")[0])
    _ok(shell, "kubectl create namespace load")
    try:
        with Load(node.plane, "load", threads=4) as load:
            time.sleep(2)
            started = time.monotonic()
            for command in steps:
                _ok(shell, command)
            rotated = time.monotonic() - started
            time.sleep(5)
            counts = load.stop()
    finally:
        shell.run("kubectl delete namespace load")
    print(
        f"new CA: rotated in {rotated:.1f} s; {counts.requests} requests, {counts.failures} failed"
    )
    assert counts.failures == 0, counts.messages
    assert counts.requests > 200
    new_ca = (shell.cwd / "certs/ca.crt").read_bytes()
    assert new_ca != old_ca
    assert not (shell.cwd / "certs/next").exists()
    until_healthy(shell, timeout=30)


def test_renewal_from_the_same_ca_loses_nothing(path1: object, shell: Shell, node: Node) -> None:
    """A renewal from the same CA (a new --host renews, docs/install.md Path 1), then `kubectl
    apply -k certs/`, under load: the caBundle stays valid, the pods reload, no request fails."""
    until_healthy(shell)
    ca_before = (shell.cwd / "certs/ca.crt").read_bytes()
    tls_before = (shell.cwd / "certs/tls.crt").read_bytes()
    _ok(shell, "kubectl create namespace load")
    try:
        with Load(node.plane, "load", threads=4) as load:
            time.sleep(2)
            before = _reloads(node)
            _ok(
                shell,
                "feedbackstore-webhook certs --namespace feedbackstore-system"
                " --service feedbackstore-webhook --out-dir certs/ --host renewed.example",
            )
            assert (shell.cwd / "certs/ca.crt").read_bytes() == ca_before
            assert (shell.cwd / "certs/tls.crt").read_bytes() != tls_before
            _ok(shell, "kubectl apply -k certs/")
            reloaded = _until_every_pod_reloaded(node, before)
            time.sleep(3)
            counts = load.stop()
    finally:
        shell.run("kubectl delete namespace load")
    print(
        f"renewal: every pod reloaded {reloaded:.1f} s after the apply; "
        f"{counts.requests} requests, {counts.failures} failed"
    )
    assert counts.failures == 0, counts.messages
    assert counts.requests > 200
    until_healthy(shell, timeout=30)


def test_roll_out_safely_as_the_readme_says(path1: object, shell: Shell, node: Node) -> None:
    """docs/install.md "Roll out safely": its check of what exists, its overlay and command verbatim
    (failing open, only the labelled namespace judged), then step 4 tightens again."""
    until_healthy(shell)
    text = section("Roll out safely")
    check = re.search(r"`(kubectl get fs -A -o yaml \|\s+feedbackstore-webhook validate -)`", text)
    assert check is not None
    _ok(shell, " ".join(check.group(1).split()))
    overlay = blocks(text, "yaml")[0]
    first_line, *_ = overlay.splitlines()
    assert first_line.strip() == "# rollout/kustomization.yaml"
    (shell.cwd / "rollout").mkdir()
    (shell.cwd / "rollout/kustomization.yaml").write_text(
        "\n".join(line[3:] if line.startswith("   ") else line for line in overlay.splitlines())
    )
    apply = re.search(r"`(kubectl apply -k rollout/ && kubectl label namespace [^`]+)`", text)
    assert apply is not None
    test_ns = apply.group(1).split("label namespace ")[1].split()[0]
    _ok(shell, f"kubectl create namespace {test_ns} && kubectl create namespace untouched")
    try:
        _ok(shell, apply.group(1))
        policy = node.kubectl(
            "get",
            "validatingwebhookconfiguration",
            "feedbackstore-webhook",
            "-o",
            "jsonpath={.webhooks[0].failurePolicy}",
        ).stdout
        assert policy == "Ignore"
        monitor = (
            '{"apiVersion": "agents.ctxmesh.ai/v1beta1", "kind": "FeedbackStore", "metadata":'
            ' {"name": "monitor"}, "spec": {"mode": "Monitor", "human": {"scores":'
            ' [{"name": "thumbs"}]}}}'
        )
        judged = shell.run(f"kubectl -n {test_ns} apply -f - <<<'{monitor}'")
        unjudged = shell.run(f"kubectl -n untouched apply -f - <<<'{monitor}'")
        assert judged.returncode == 0, judged.stderr
        assert unjudged.returncode == 0, unjudged.stderr
        # Only the webhook warns about Monitor: it is called for the labelled namespace alone.
        assert "Warning: spec.mode: Monitor" in judged.stderr, judged.stderr
        assert "Warning" not in unjudged.stderr, unjudged.stderr
    finally:
        # Step 4: tighten, by applying certs/ itself.
        _ok(shell, "kubectl apply -k certs/")
        shell.run(f"kubectl delete namespace {test_ns} untouched --wait=false")
    policy = node.kubectl(
        "get",
        "validatingwebhookconfiguration",
        "feedbackstore-webhook",
        "-o",
        "jsonpath={.webhooks[0].failurePolicy}",
    ).stdout
    assert policy == "Fail"
    until_healthy(shell, timeout=60)


def test_uninstall_removes_everything(path1: object, shell: Shell, node: Node) -> None:
    # The second block: the CRD deleted too, after `cleanup` (the first keeps it).
    steps = commands(blocks(section("Uninstall"), "sh")[1])
    assert len(steps) == 6, steps
    for command in steps:
        started = time.monotonic()
        result = shell.run(command)
        print(f"{time.monotonic() - started:6.1f} s  {command}")
        assert result.returncode == 0, (command, result.stdout, result.stderr)
    for kind, name in (
        ("validatingwebhookconfiguration", "feedbackstore-webhook"),
        ("clusterrole", "feedbackstore-status-writer"),
        ("clusterrolebinding", "feedbackstore-status-writer"),
        ("namespace", "feedbackstore-system"),
        ("crd", "feedbackstores.agents.ctxmesh.ai"),
    ):
        gone = node.kubectl("get", kind, name)
        assert gone.returncode != 0, gone.stdout
        assert "NotFound" in gone.stderr, gone.stderr
    # No pod of the install is left on the node.
    pods = node.kubectl("get", "pods", "-A", "-o", "name").stdout.split()
    assert not [p for p in pods if "feedbackstore" in p], pods


def test_path3_own_certificate_installs(path1: object, shell: Shell, node: Node) -> None:
    """docs/install.md Path 3 → certs/README.md "3. Bring your own", verbatim, on the cluster the
    Uninstall left empty: a CA and serving pair of the user's own (here from `certs` into
    another directory, copied where the commands expect them), installed by `certs --ca-bundle
    --cert --key`."""
    assert node.kubectl("get", "namespace", "feedbackstore-system").returncode != 0
    _ok(
        shell,
        "feedbackstore-webhook certs --namespace feedbackstore-system"
        " --service feedbackstore-webhook --out-dir byo/ >/dev/null"
        " && cp byo/tls.crt byo/tls.key byo/ca.crt .",
    )
    text = (ROOT / "certs/README.md").read_text(encoding="utf-8")
    own = text[text.index("## 3. Bring your own") :]
    steps = commands(blocks(own, "sh")[0])
    assert len(steps) == 2, steps
    for command in steps:
        result = shell.run(command)
        assert result.returncode == 0, (command, result.stdout, result.stderr)
    for name in ("feedbackstore-webhook", "feedbackstore-status-writer"):
        _ok(shell, f"kubectl {NS} rollout status deployment/{name} --timeout=120s")
    until_healthy(shell, timeout=60)
    code, checks, output = doctor(shell)
    assert code == 0, output
    assert set(checks.values()) == {"ok"}, output


# -- bad configurations fail clearly (after Path 3: the Secret made from byo/) -------------

# `generic` with the tls type: `create secret tls` would refuse a mismatched pair itself.
RECREATE_SECRET = (
    f"kubectl {NS} create secret generic feedbackstore-webhook-tls --type=kubernetes.io/tls"
    " --from-file=tls.crt={cert} --from-file=tls.key={key} --dry-run=client -o yaml"
    " | kubectl apply -f -"
)


def _new_webhook_pod(node: Node, before: set[str], timeout: float = 120) -> dict[str, Any]:
    """The first webhook pod not in `before`, as the API shows it, once it exists."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        listed = node.kubectl("get", "pods", *NS.split(), *WEBHOOK_PODS.split(), "-o", "json")
        pods = [
            p for p in json.loads(listed.stdout)["items"] if p["metadata"]["name"] not in before
        ]
        if pods:
            return dict(pods[0])
        time.sleep(0.5)
    raise AssertionError("no new webhook pod")


def _webhook_pod_names(node: Node) -> set[str]:
    listed = node.kubectl("get", "pods", *NS.split(), *WEBHOOK_PODS.split(), "-o", "name")
    return {line.removeprefix("pod/") for line in listed.stdout.split()}


def _restart_into(shell: Shell, node: Node) -> str:
    """Restart the webhook's rollout; the name of the first new pod (the old ones keep
    serving: maxUnavailable 0)."""
    before = _webhook_pod_names(node)
    _ok(shell, f"kubectl {NS} rollout restart deployment/feedbackstore-webhook")
    return str(_new_webhook_pod(node, before)["metadata"]["name"])


def _repair(shell: Shell, node: Node) -> None:
    """The good pair back, and fresh pods for it (not the crash loop's next backoff)."""
    _ok(shell, RECREATE_SECRET.format(cert="byo/tls.crt", key="byo/tls.key"))
    time.sleep(1.5)  # kubectl refuses a second restart within a second of the last
    _ok(shell, f"kubectl {NS} rollout restart deployment/feedbackstore-webhook")
    _ok(shell, f"kubectl {NS} rollout status deployment/feedbackstore-webhook --timeout=180s")
    until_healthy(shell, timeout=90)


def test_a_mismatched_pair_keeps_the_new_pod_unready_and_its_log_says_why(
    path1: object, shell: Shell, node: Node
) -> None:
    """The Secret holds a certificate and someone else's key: a new pod exits at once with
    one log line naming both files and the reason, restarts (CrashLoopBackOff), never goes
    Ready, and the old pods keep serving."""
    _ok(
        shell,
        "feedbackstore-webhook certs --namespace feedbackstore-system"
        " --service feedbackstore-webhook --out-dir other/ >/dev/null",
    )
    _ok(shell, RECREATE_SECRET.format(cert="byo/tls.crt", key="other/tls.key"))
    try:
        pod = _restart_into(shell, node)

        def crashed() -> str | None:
            logs = node.kubectl(*NS.split(), "logs", pod, "--previous")
            return logs.stdout if logs.returncode == 0 and logs.stdout else None

        log = eventually(crashed, timeout=120, what="the new pod's first exit")
        lines = [json.loads(line) for line in log.splitlines()]
        assert [(e["level"], e["msg"]) for e in lines if e["level"] == "error"] == [
            ("error", "cannot load the serving certificate")
        ], log
        error = next(e["error"] for e in lines if e["level"] == "error")
        assert error == (
            "cannot serve /tls/tls.crt with key /tls/tls.key: "
            "the private key does not match the certificate"
        )
        assert "Traceback" not in log
        shown = json.loads(node.kubectl(*NS.split(), "get", "pod", pod, "-o", "json").stdout)
        status = shown["status"]["containerStatuses"][0]
        assert status["ready"] is False
        assert status["lastState"]["terminated"]["exitCode"] == 1
        ready = node.kubectl(
            *NS.split(),
            "get",
            "deployment/feedbackstore-webhook",
            "-o",
            "jsonpath={.status.readyReplicas}",
        )
        assert ready.stdout == "2", "the old pods keep serving"
    finally:
        _repair(shell, node)
        shell.run("rm -rf other")


def test_a_missing_secret_keeps_the_new_pod_creating_and_says_which(
    path1: object, shell: Shell, node: Node
) -> None:
    _ok(shell, f"kubectl {NS} delete secret feedbackstore-webhook-tls")
    try:
        pod = _restart_into(shell, node)

        def mount_failed() -> str | None:
            events = node.kubectl(
                *NS.split(),
                "get",
                "events",
                "--field-selector",
                f"involvedObject.name={pod},reason=FailedMount",
                "-o",
                "jsonpath={.items[*].message}",
            )
            return events.stdout or None

        message = eventually(mount_failed, timeout=120, what="FailedMount on the new pod")
        assert 'secret "feedbackstore-webhook-tls" not found' in message, message
        shown = json.loads(node.kubectl(*NS.split(), "get", "pod", pod, "-o", "json").stdout)
        waiting = shown["status"]["containerStatuses"][0]["state"]["waiting"]
        assert waiting["reason"] == "ContainerCreating"
    finally:
        _repair(shell, node)
