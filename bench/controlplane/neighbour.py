"""The status writer beside the platform's reconciler: writes by each side, while they settle and
over a quiet window, against 247cc1d's writer, which always wrote its own
`Validated`, as the baseline (same run, same server).

On a fresh etcd + kube-apiserver: for each writer revision, a namespace of its own with the four
stores of tests/kube/test_platform_neighbour_real.py (valid, one problem, several problems, one
an AgentDeployment uses); the stand-in of the platform's reconciler
(tests/kube/platform_reconciler.py, its own ServiceAccount) and the writer (`--ref`, exported
from git, as bench/controlplane/writer.py runs it) started together. Counted from the audit log,
per side (user): the requests that can change a store (update and patch of `feedbackstores` and
`feedbackstores/status`) in the first phase, from the start until no store's resourceVersion
moved for 3 s after both sides' conditions were there (at most `--settle` seconds; the time
given is until the last move), then in a window of `--window` seconds after it.

    python bench/controlplane/neighbour.py [--ref HEAD] [--baseline 247cc1d] [--window 40]
"""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from plane import CONSOLE_SCRIPT, code_env, snapshot

from tests.kube.cluster import install_crd, new_namespace, shipped_crd
from tests.kube.controlplane import ControlPlane, binaries, running
from tests.kube.inuse_support import Agents, agent_crd_installed
from tests.kube.platform_reconciler import USER, PlatformProcess, install_identity
from tests.kube.status_writer_support import Audit, Stores, create_unguarded
from tests.kube.test_platform_neighbour_real import CASES, settled


def start_writer(
    plane: ControlPlane, workdir: pathlib.Path, namespace: str, env: dict[str, str]
) -> tuple[str, subprocess.Popen[bytes]]:
    user = f"status-writer-{uuid.uuid4().hex[:6]}"
    kubeconfig = plane.write_kubeconfig(user, plane.pki.client(user, "system:masters"))
    with (workdir / f"{user}.log").open("wb") as log:
        process = subprocess.Popen(
            [CONSOLE_SCRIPT, "status-writer", "--kubeconfig", str(kubeconfig),
             "--namespace", namespace, "--lease-namespace", namespace, "--metrics-port", "0",
             "--metrics-host", "127.0.0.1", "--workers", "2", "--log-level", "warning"],
            stderr=log, stdout=subprocess.DEVNULL, env={**env, "POD_NAME": user},
        )  # fmt: skip
    return user, process


def writes(audit: Audit, namespace: str, user: str) -> int:
    return sum(
        1
        for e in audit.events(namespace)
        if e.user == user and e.resource == "feedbackstores" and e.verb in ("update", "patch")
    )


def settle(stores: Stores, names: list[str], quiet: float, cap: float) -> float:
    """Seconds until every store carries both sides' conditions and then no store's
    resourceVersion moved for `quiet` seconds (at most `cap`)."""
    started = time.monotonic()
    while not all(settled(stores, n) for n in names):
        if time.monotonic() - started > cap:
            return cap
        time.sleep(0.1)
    versions: dict[str, str] = {}
    since = time.monotonic()
    while time.monotonic() - started < cap:
        now = {n: stores.get(n)["metadata"]["resourceVersion"] for n in names}
        if now != versions:
            versions, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return since - started
        time.sleep(0.25)
    return cap


def run(
    plane: ControlPlane, workdir: pathlib.Path, env: dict[str, str], window: float, cap: float
) -> dict[str, float]:
    namespace = new_namespace(plane, "bench-nb")
    stores, audit = Stores(plane, namespace), Audit(plane)
    names = list(CASES)
    Agents(plane, namespace).create("support-agent", "in-use")
    create_unguarded(plane, namespace, {n: CASES[n][0] for n in ("one-problem", "several")})
    for name in ("valid", "in-use"):
        stores.create(name, CASES[name][0])
    platform = PlatformProcess(install_identity(plane), namespace, workdir / f"{namespace}.log")
    user, writer = start_writer(plane, workdir, namespace, env)
    try:
        settled = settle(stores, names, 3.0, cap)
        audit.flush(namespace)
        first = Counter({"writer": writes(audit, namespace, user),
                         "platform": writes(audit, namespace, USER)})  # fmt: skip
        time.sleep(window)
        audit.flush(namespace)
        total = Counter({"writer": writes(audit, namespace, user),
                         "platform": writes(audit, namespace, USER)})  # fmt: skip
    finally:
        writer.kill()
        writer.wait(10)
        platform.kill()
    return {
        "settled_s": settled,
        "first_writer": first["writer"],
        "first_platform": first["platform"],
        "window_writer": total["writer"] - first["writer"],
        "window_platform": total["platform"] - first["platform"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="HEAD", help="the writer measured")
    parser.add_argument(
        "--baseline",
        default="247cc1d",
        help="the writer to compare with (247cc1d always wrote its own Validated)",
    )
    parser.add_argument("--window", type=float, default=40.0)
    parser.add_argument("--settle", type=float, default=30.0, help="longest first phase (s)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-neighbour-") as scratch:
        work = pathlib.Path(scratch)
        with running(binaries(), work / "plane") as plane:
            install_crd(plane, shipped_crd())
            with agent_crd_installed(plane):
                for label, ref in (("measured", args.ref), ("baseline", args.baseline)):
                    code = work / f"code-{label}"
                    commit = snapshot(code, ref)
                    result = run(plane, work, code_env(code), args.window, args.settle)
                    print(
                        f"{label} {commit}: " + ", ".join(f"{k}={v:g}" for k, v in result.items())
                    )


if __name__ == "__main__":
    main()
