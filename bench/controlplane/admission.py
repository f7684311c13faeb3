"""What the admission webhook and the admission policy cost a client: FeedbackStore creates
through the real kube-apiserver.

On a fresh etcd + kube-apiserver with the CRD as the platform ships it today
(no CEL, so the webhook is the only guard), `feedbackstore-webhook serve` runs
on 127.0.0.1 and is registered by `url:` from the shipped
ValidatingWebhookConfiguration (failurePolicy Fail, timeoutSeconds 5), matching
namespaces labelled for the tests only. One client sends creates one at a time
over one kept-alive TLS connection (the same small valid store each time,
`bench/admission/payloads.py`'s, under a new name), timing each from sending
the request to reading the whole answer; the server's own time for each
create is read from its audit log (`stageTimestamp - requestReceivedTimestamp`).

Phases, in this order, in one run:
1. no guard: half of the `--creates` into a labelled namespace;
2. the ValidatingAdmissionPolicies of `manifests policy` (Deny), no webhook: `--creates` into
   another namespace (kube-apiserver judges each store in CEL), then the policies deleted
   (and seen to be gone);
3. webhook registered: `--creates` into a labelled namespace (the webhook is
   called), alternating one by one with `--creates` into an unlabelled one
   (registered but not matched: the server checks the selector, calls nothing);
4. registration deleted (and seen to be gone): the other half of the baseline.
The baseline brackets the measured phase so drift on the shared machine hits
both alike. 20 creates per namespace before each phase are not counted.

    python bench/controlplane/admission.py [--creates 500]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time
import uuid
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "admission"))

import yaml
from kubernetes import client as k8s
from payloads import small_spec
from plane import (
    AuditTail,
    create_namespaces,
    load_average,
    percentile,
    server_seconds,
    snapshot,
)

from tests.kube.cluster import (
    API_VERSION,
    GROUP,
    PLURAL,
    TEST_LABEL,
    VERSION,
    api_client,
    eventually,
    install_crd,
    platform_today_crd,
    registered,
    registration,
    webhook_server,
)
from tests.kube.controlplane import ControlPlane, binaries, running
from webhook.manifests.policy import manifests as policy_manifests

ROOT = pathlib.Path(__file__).resolve().parents[2]
REGISTRATION = ROOT / "manifests" / "webhook" / "validatingwebhookconfiguration.yaml"

WARMUP = 20


class Client:
    """One kept-alive HTTPS connection to kube-apiserver as the admin, timing each create."""

    def __init__(self, plane: ControlPlane) -> None:
        self.connection = http.client.HTTPSConnection(
            "127.0.0.1", plane.apiserver_port, context=plane.ssl_context(), timeout=30
        )
        self.body = small_spec()

    def create(self, namespace: str, name: str) -> float:
        body = json.dumps({
            "apiVersion": API_VERSION, "kind": "FeedbackStore",
            "metadata": {"name": name, "namespace": namespace}, "spec": self.body,
        }).encode()  # fmt: skip
        path = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}"
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        started = time.perf_counter()
        self.connection.request("POST", path, body, headers)
        response = self.connection.getresponse()
        answer = response.read()
        seconds = time.perf_counter() - started
        if response.status != 201:
            raise RuntimeError(f"create {namespace}/{name}: {response.status} {answer[:500]!r}")
        return seconds

    def close(self) -> None:
        self.connection.close()


def names(prefix: str, count: int) -> list[str]:
    return [f"{prefix}-{i:04d}-{uuid.uuid4().hex[:6]}" for i in range(count)]


def run_creates(client: Client, plan: list[tuple[str, str]]) -> dict[str, list[float]]:
    """Send every (namespace, name) of `plan` in order; client seconds by namespace."""
    timings: dict[str, list[float]] = {}
    for namespace, name in plan:
        timings.setdefault(namespace, []).append(client.create(namespace, name))
    return timings


def warm_up(client: Client, *namespaces: str) -> None:
    run_creates(client, [(ns, n) for ns in namespaces for n in names("warmup", WARMUP)])


def server_timings(tail: AuditTail) -> dict[str, list[float]]:
    """The server's time for each counted create since the last call, by namespace."""
    timings: dict[str, list[float]] = {}
    for event in tail.new():
        ref = event.get("objectRef") or {}
        name = ref.get("name", "")
        if event["verb"] == "create" and ref.get("resource") == PLURAL and "warmup" not in name:
            timings.setdefault(ref["namespace"], []).append(server_seconds(event))
    return timings


def webhook_gone(plane: ControlPlane, namespace: str) -> bool:
    """A Monitor-mode dry run draws the webhook's warning only while it is still called."""
    probe = {"apiVersion": API_VERSION, "kind": "FeedbackStore",
             "metadata": {"name": "gone-probe"},
             "spec": {"mode": "Monitor", "human": {"scores": [{"name": "probe"}]}}}  # fmt: skip
    result = plane.kubectl("create", "--dry-run=server", "-n", namespace, "-f", "-",
                           stdin=yaml.safe_dump(probe))  # fmt: skip
    return result.returncode == 0 and "Monitor" not in result.stderr


def policy_judges(plane: ControlPlane, namespace: str) -> bool:
    """A store declaring no source is refused only while the policies judge (the CRD has no
    CEL and no webhook is registered)."""
    probe = {"apiVersion": API_VERSION, "kind": "FeedbackStore",
             "metadata": {"name": "policy-probe"}, "spec": {"mode": "Enforce"}}  # fmt: skip
    result = plane.kubectl("create", "--dry-run=server", "-n", namespace, "-f", "-",
                           stdin=yaml.safe_dump(probe))  # fmt: skip
    return result.returncode != 0 and "ValidatingAdmissionPolicy" in result.stderr


def run(bin_dir: pathlib.Path, creates: int) -> dict[str, Any]:
    half = creates // 2
    with tempfile.TemporaryDirectory(prefix="bench-admission-") as tmp:
        workdir = pathlib.Path(tmp)
        with running(bin_dir, workdir / "plane") as plane:
            install_crd(plane, platform_today_crd())
            base_ns, hooked_ns, unmatched_ns = "no-webhook", "webhook-called", "webhook-unmatched"
            policy_ns = "policy-judged"
            create_namespaces(plane, [base_ns, hooked_ns, policy_ns], **{TEST_LABEL: "on"})
            create_namespaces(plane, [unmatched_ns])
            tail = AuditTail(plane.audit_log)
            client = Client(plane)
            load_before = load_average()
            client_times: dict[str, list[float]] = {}
            server_times: dict[str, list[float]] = {}

            def phase(plan: list[tuple[str, str]]) -> None:
                tail.skip_to_end()
                for ns, values in run_creates(client, plan).items():
                    client_times.setdefault(ns, []).extend(values)
                for ns, values in server_timings(tail).items():
                    server_times.setdefault(ns, []).extend(values)

            warm_up(client, base_ns)
            phase([(base_ns, n) for n in names("before", half)])
            policies = "---\n".join(
                yaml.safe_dump(d)
                for d in policy_manifests(yaml.safe_load(REGISTRATION.read_text()))
            )
            plane.kubectl("apply", "-f", "-", stdin=policies, check=True)
            eventually(lambda: policy_judges(plane, policy_ns), timeout=60, what="policies judge")
            warm_up(client, policy_ns)
            phase([(policy_ns, n) for n in names("policy", creates)])
            plane.kubectl("delete", "-f", "-", stdin=policies, check=True)
            eventually(lambda: not policy_judges(plane, policy_ns), timeout=60,
                       what="policies no longer judge")  # fmt: skip
            with webhook_server(workdir / "webhook") as server:
                document = registration("bench-webhook", server.url, server.ca_pem)
                with registered(plane, document, hooked_ns):
                    warm_up(client, hooked_ns, unmatched_ns)
                    called, unmatched = names("called", creates), names("unmatched", creates)
                    phase([p for pair in zip(called, unmatched, strict=True) for p in
                           ((hooked_ns, pair[0]), (unmatched_ns, pair[1]))])  # fmt: skip
                eventually(lambda: webhook_gone(plane, hooked_ns), timeout=60,
                           what="webhook no longer called")  # fmt: skip
            warm_up(client, base_ns)
            phase([(base_ns, n) for n in names("after", creates - half)])
            client.close()
            api = k8s.CustomObjectsApi(api_client(plane))
            count = len(api.list_cluster_custom_object(GROUP, VERSION, PLURAL)["items"])
    return {
        "creates": creates,
        "client": client_times,
        "server": server_times,
        "stored": count,
        "load_before": load_before,
        "load_after": load_average(),
    }


def summary(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50": statistics.median(values) * 1000,
        "p90": percentile(values, 0.90) * 1000,
        "p99": percentile(values, 0.99) * 1000,
        "mean": statistics.fmean(values) * 1000,
    }


def report(result: dict[str, Any]) -> None:
    rows = [
        ("no guard", "no-webhook"),
        ("webhook registered, namespace not matched", "webhook-unmatched"),
        ("the policies (no webhook)", "policy-judged"),
        ("webhook registered and called", "webhook-called"),
    ]
    print(f"\n{result['creates']} creates per case; load average {result['load_before']} before,"
          f" {result['load_after']} after; {result['stored']} stores at the end\n")  # fmt: skip
    print("| case | n | client p50 | client p90 | client p99 | server p50 | server p99 |")
    print("|---|---|---|---|---|---|---|")
    stats = {}
    for label, ns in rows:
        c, s = summary(result["client"][ns]), summary(result["server"][ns])
        stats[ns] = (c, s)
        print(f"| {label} | {c['n']} | {c['p50']:.2f} ms | {c['p90']:.2f} ms | {c['p99']:.2f} ms"
              f" | {s['p50']:.2f} ms | {s['p99']:.2f} ms |")  # fmt: skip
    print()
    base_c, base_s = stats["no-webhook"]
    for label, ns in rows[2:]:
        called_c, called_s = stats[ns]
        print(f"{label} vs no guard: client p50 {called_c['p50'] - base_c['p50']:+.2f} ms"
              f" (×{called_c['p50'] / base_c['p50']:.2f}),"
              f" p99 {called_c['p99'] - base_c['p99']:+.2f}"
              f" ms (×{called_c['p99'] / base_c['p99']:.2f}); server p50"
              f" {called_s['p50'] - base_s['p50']:+.2f} ms"
              f" (×{called_s['p50'] / base_s['p50']:.2f}),"
              f" p99 {called_s['p99'] - base_s['p99']:+.2f} ms")  # fmt: skip
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--creates", type=int, default=500)
    parser.add_argument("--json", type=pathlib.Path, help="also write the raw timings here")
    parser.add_argument("--ref", default="HEAD", help="commit whose webhook is measured")
    parser.add_argument(
        "--working-tree", action="store_true", help="measure the working tree as it is instead"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-admission-code-") as code:
        commit = "working tree"
        if not args.working_tree:
            commit = snapshot(pathlib.Path(code), args.ref)
            # webhook_server() starts the console script with this process's environment.
            os.environ["PYTHONPATH"] = code
        print(f"webhook code: {commit}")
        result = run(binaries(), args.creates)
    result["code"] = commit
    report(result)
    if args.json:
        args.json.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
