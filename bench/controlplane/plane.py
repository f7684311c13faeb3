"""What both control-plane benchmarks share: the plane, its audit log, bulk requests, percentiles.

The audit log is kube-apiserver's own record of every request (Metadata level,
written before the answer leaves, `--audit-log-mode=blocking`), so counting it
counts what the server saw, not what a client believes it sent.
"""

from __future__ import annotations

import io
import json
import os
import pathlib
import subprocess
import sys
import tarfile
from collections import Counter
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kubernetes import client as k8s  # noqa: E402

from tests.kube.cluster import GROUP, PLURAL, VERSION, api_client  # noqa: E402
from tests.kube.controlplane import ControlPlane  # noqa: E402

CONSOLE_SCRIPT = str(pathlib.Path(sys.executable).with_name("feedbackstore-webhook"))
WRITER_AGENT = "feedbackstore-status-writer/"


class AuditTail:
    """Reads the audit log from where the last call stopped; one entry per request (auditID).

    A watch is logged twice (ResponseStarted, then ResponseComplete when it
    ends); only the first line of an auditID is returned, so a watch that ends
    in a later phase is not counted again there.
    """

    def __init__(self, path: pathlib.Path) -> None:
        self.path = path
        self.offset = 0
        self._seen: set[str] = set()
        self._partial = b""

    def skip_to_end(self) -> None:
        """Forget everything logged so far (seeding, CRD install): count from now on."""
        for _ in self.new():
            pass

    def new(self) -> Iterator[dict[str, Any]]:
        with self.path.open("rb") as handle:
            handle.seek(self.offset)
            data = handle.read()
        self.offset += len(data)
        data = self._partial + data
        lines = data.split(b"\n")
        self._partial = lines.pop()
        for line in lines:
            if not line:
                continue
            event = json.loads(line)
            audit_id = event["auditID"]
            if audit_id in self._seen:
                continue
            self._seen.add(audit_id)
            yield event


def request_kind(event: dict[str, Any]) -> str:
    """A short name for what a request did, e.g. `patch feedbackstores/status`."""
    ref = event.get("objectRef") or {}
    resource = ref.get("resource", event.get("requestURI", "?"))
    if ref.get("subresource"):
        resource += "/" + ref["subresource"]
    return f"{event['verb']} {resource}"


def count_kinds(events: Iterable[dict[str, Any]]) -> dict[str, int]:
    return dict(sorted(Counter(request_kind(e) for e in events).items()))


def timestamp(text: str) -> float:
    """An audit timestamp (RFC 3339, microseconds) as seconds since the epoch."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def server_seconds(event: dict[str, Any]) -> float:
    """How long the server took over a request, from its own two timestamps."""
    return timestamp(event["stageTimestamp"]) - timestamp(event["requestReceivedTimestamp"])


def snapshot(directory: pathlib.Path, ref: str = "HEAD") -> str:
    """Export the `webhook` package at `ref` into `directory`; return the commit.

    Other work goes on in this checkout while a benchmark runs, and the package
    is installed editable: a process started from the working tree would run
    whatever half-made change is there at that moment. The measured processes
    run this export instead (first on PYTHONPATH), so a run measures one commit.
    """
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", ref],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit, "webhook"], capture_output=True, check=True
    ).stdout
    directory.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(directory, filter="data")
    return commit


def code_env(source: pathlib.Path | None) -> dict[str, str]:
    """The environment for a measured process: the snapshot first on its path, no KUBE* vars."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    if source is not None:
        env["PYTHONPATH"] = str(source)
    return env


def admin(plane: ControlPlane) -> k8s.ApiClient:
    return api_client(plane)


def create_namespaces(plane: ControlPlane, names: Iterable[str], **labels: str) -> None:
    core = k8s.CoreV1Api(admin(plane))
    for name in names:
        core.create_namespace({"metadata": {"name": name, "labels": labels}})


def create_all(plane: ControlPlane, bodies: list[dict[str, Any]], threads: int = 8) -> None:
    """Create every object, `threads` at a time (set-up, not measured)."""
    api = k8s.CustomObjectsApi(admin(plane))

    def create(body: dict[str, Any]) -> None:
        response = api.create_namespaced_custom_object(
            GROUP, VERSION, body["metadata"]["namespace"], PLURAL, body, _preload_content=False
        )
        response.drain_conn()
        response.release_conn()

    with ThreadPoolExecutor(threads) as pool:
        for _ in pool.map(create, bodies):
            pass


def list_body(plane: ControlPlane) -> bytes:
    """The raw body of a list of every FeedbackStore in the cluster."""
    api = k8s.CustomObjectsApi(admin(plane))
    response = api.list_cluster_custom_object(GROUP, VERSION, PLURAL, _preload_content=False)
    body: bytes = response.data
    response.drain_conn()
    response.release_conn()
    return body


def list_all(plane: ControlPlane) -> tuple[list[dict[str, Any]], int]:
    """Every FeedbackStore in the cluster, and the size of the list's body in bytes."""
    body = list_body(plane)
    items: list[dict[str, Any]] = json.loads(body)["items"]
    return items, len(body)


def proc_status(pid: int) -> dict[str, int]:
    """VmHWM (peak resident) and VmRSS of a process, in KiB."""
    values = {}
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmHWM", "VmRSS"):
            values[key] = int(rest.split()[0])
    return values


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def load_average() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.2f} (1 min), {five:.2f} (5 min)"
