"""The status writer against the real control plane: the console script as a child process,
what kube-apiserver's audit log says it did, and how invalid objects get into a cluster whose
CRD refuses them.

- Each writer runs as its own user (a client certificate for `status-writer-<tag>` in
  `system:masters`), so the audit log tells which replica made which request.
- The audit log (level Metadata, blocking mode) is the server's own account of every
  request; `Audit.flush` waits until a marker request of ours has been logged, so every
  request before it is in the file too, and "no write" can be asserted.
- Invalid objects: the shipped CRD's CEL rules refuse them, so `create_unguarded` swaps in
  the platform's CRD of today (no CEL), creates them, and puts the shipped CRD back — objects
  created before a CRD had its rules, which is the case the status writer exists for.
- Fixtures `stores`, `audit` and `writers` for a module that has a `namespace` fixture,
  imported by their function names.
"""

from __future__ import annotations

import contextlib
import json
import pathlib
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from tests.kube.cluster import (
    GROUP,
    PLURAL,
    VERSION,
    api_client,
    eventually,
    feedbackstore,
    install_crd,
    platform_today_crd,
    shipped_crd,
)
from tests.kube.controlplane import ControlPlane
from tests.support import writer_process
from tests.support.status_writer import LEASE_DURATION as LEASE_DURATION  # the kube tests' import
from tests.support.status_writer import RENEW_DEADLINE as RENEW_DEADLINE
from tests.support.status_writer import RETRY_PERIOD as RETRY_PERIOD
from tests.support.stores import INVALID as INVALID
from tests.support.stores import INVALID_MESSAGE as INVALID_MESSAGE
from tests.support.stores import VALID as VALID
from tests.support.writer_process import SCRIPT as SCRIPT

MANAGER = "feedbackstore-status-writer"
LEASE = "feedbackstore-status-writer"


# -- the writer as a process -----------------------------------------------------------


class WriterProcess(writer_process.WriterProcess):
    """The writer on the real server, as user `status-writer-<tag>` (or as a ServiceAccount bound
    as the shipped one), watching `namespace` only, at debug level."""

    def __init__(
        self,
        plane: ControlPlane,
        workdir: pathlib.Path,
        tag: str,
        namespace: str,
        *extra: str,
        resync_seconds: float = 30.0,
        shipped: bool = False,
    ) -> None:
        self.user = f"status-writer-{tag}-{uuid.uuid4().hex[:6]}"
        if shipped:
            kubeconfig, self.user = shipped_identity(plane, namespace, self.user)
        else:
            kubeconfig = plane.write_kubeconfig(
                self.user, plane.pki.client(self.user, "system:masters")
            )
        options = ["--namespace", namespace, "--resync-seconds", str(resync_seconds)]
        options += ["--workers", "2", "--log-level", "debug"]
        log_path = workdir / f"{self.user}.log"
        super().__init__(kubeconfig, log_path, self.user, namespace, *options, *extra)


RBAC = pathlib.Path(__file__).parents[2] / "manifests" / "status-writer" / "rbac.yaml"


def shipped_identity(plane: ControlPlane, namespace: str, name: str) -> tuple[pathlib.Path, str]:
    """A ServiceAccount bound as the shipped writer's: its ClusterRole as shipped, and its
    leader-election Role in `namespace`, where a test's Lease lives. A kubeconfig with its token,
    and the user name the audit log gives it."""
    docs = list(yaml.safe_load_all(RBAC.read_text(encoding="utf-8")))
    cluster_role = next(d for d in docs if d["kind"] == "ClusterRole")
    role = next(d for d in docs if d["kind"] == "Role")
    role = {**role, "metadata": {**role["metadata"], "namespace": namespace}}
    subject = {"kind": "ServiceAccount", "name": name, "namespace": namespace}
    group = "rbac.authorization.k8s.io"
    items = [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": name, "namespace": namespace},
        },
        cluster_role,
        role,
        {
            "apiVersion": f"{group}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{namespace}-{name}"},
            "roleRef": {
                "apiGroup": group,
                "kind": "ClusterRole",
                "name": cluster_role["metadata"]["name"],
            },
            "subjects": [subject],
        },
        {
            "apiVersion": f"{group}/v1",
            "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": namespace},
            "roleRef": {"apiGroup": group, "kind": "Role", "name": role["metadata"]["name"]},
            "subjects": [subject],
        },
    ]
    listed = {"apiVersion": "v1", "kind": "List", "items": items}
    plane.kubectl("apply", "-f", "-", stdin=json.dumps(listed), check=True)
    request = {"spec": {"expirationSeconds": 3600}}
    core = k8s.CoreV1Api(api_client(plane))
    token = core.create_namespaced_service_account_token(name, namespace, request).status.token
    return plane.write_kubeconfig(name, token=token), f"system:serviceaccount:{namespace}:{name}"


@dataclass
class Writers:
    """Writers started by one test, each killed at its end (only these, by their pid)."""

    plane: ControlPlane
    workdir: pathlib.Path
    namespace: str
    started: list[WriterProcess]

    def start(
        self, tag: str, *extra: str, resync_seconds: float = 30.0, shipped: bool = False
    ) -> WriterProcess:
        writer = WriterProcess(
            self.plane,
            self.workdir,
            tag,
            self.namespace,
            *extra,
            resync_seconds=resync_seconds,
            shipped=shipped,
        )
        self.started.append(writer)
        return writer.started()

    def close(self) -> None:
        for writer in self.started:
            writer.kill()

    def logs(self, lines: int = 40) -> str:
        """The last lines each writer logged, for a failing test's report."""
        parts = []
        for writer in self.started:
            tail = writer.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
            state = writer.process.poll()
            parts.append(f"--- {writer.user} (exit {state}), last {lines} lines ---")
            parts.extend(tail[-lines:])
        return "\n".join(parts)


# -- the audit log ---------------------------------------------------------------------


@dataclass(frozen=True)
class Audited:
    """One request as kube-apiserver logged it (stage ResponseComplete)."""

    verb: str
    user: str
    uri: str
    resource: str
    subresource: str
    namespace: str
    name: str
    code: int
    received: datetime
    user_agent: str


class Audit:
    def __init__(self, plane: ControlPlane) -> None:
        self.plane = plane

    def events(self, namespace: str, stage: str = "ResponseComplete") -> list[Audited]:
        """Completed requests about objects in `namespace` (or listing it); with
        `stage="ResponseStarted"`, long-running ones (watches) as they began."""
        found = []
        needle = f'"namespace":"{namespace}"'
        for line in _lines(self.plane.audit_log):
            if needle not in line:
                continue
            event = json.loads(line)
            if event.get("stage") != stage:
                continue
            ref = event.get("objectRef") or {}
            found.append(
                Audited(
                    verb=event["verb"],
                    user=event["user"]["username"],
                    uri=event["requestURI"],
                    resource=ref.get("resource", ""),
                    subresource=ref.get("subresource", ""),
                    namespace=ref.get("namespace", ""),
                    name=ref.get("name", ""),
                    code=int((event.get("responseStatus") or {}).get("code", 0)),
                    received=datetime.fromisoformat(event["requestReceivedTimestamp"]),
                    user_agent=event.get("userAgent", ""),
                )
            )
        return found

    def status_writes(self, namespace: str, user: str | None = None) -> list[Audited]:
        """Every request to `feedbackstores/status` that could change it (all verbs but get)."""
        return [
            e
            for e in self.events(namespace)
            if e.resource == PLURAL
            and e.subresource == "status"
            and e.verb != "get"
            and (user is None or e.user == user)
        ]

    def writes_by(self, namespace: str, user: str, resource: str) -> list[Audited]:
        verbs = {"create", "update", "patch", "delete"}
        return [
            e
            for e in self.events(namespace)
            if e.user == user and e.resource == resource and e.verb in verbs
        ]

    def flush(self, namespace: str) -> None:
        """Wait until a marker request is in the log: every earlier request is there too."""
        marker = f"audit-marker-{uuid.uuid4().hex[:10]}"
        core = k8s.CoreV1Api(api_client(self.plane))
        with contextlib.suppress(k8s.ApiException):  # 404: the marker does not exist
            core.read_namespaced_config_map(marker, namespace)
        eventually(
            lambda: any(e.name == marker for e in self.events(namespace)),
            what="audit marker logged",
        )


def _lines(path: pathlib.Path) -> Iterator[str]:
    with path.open(encoding="utf-8", errors="replace") as handle:
        yield from handle


# -- objects ---------------------------------------------------------------------------


class Stores:
    """FeedbackStores of one namespace, through the official client as the admin."""

    def __init__(self, plane: ControlPlane, namespace: str) -> None:
        self.plane = plane
        self.namespace = namespace
        self.api = k8s.CustomObjectsApi(api_client(plane))

    def create(self, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        body = feedbackstore(name, spec)
        created: dict[str, Any] = self.api.create_namespaced_custom_object(
            GROUP, VERSION, self.namespace, PLURAL, body
        )
        return created

    def get(self, name: str) -> dict[str, Any]:
        found: dict[str, Any] = self.api.get_namespaced_custom_object(
            GROUP, VERSION, self.namespace, PLURAL, name
        )
        return found

    def merge(self, name: str, patch: dict[str, Any]) -> dict[str, Any]:
        """A JSON merge patch on the main resource (spec or metadata)."""
        patched: dict[str, Any] = self.api.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            self.namespace,
            PLURAL,
            name,
            patch,
            _content_type="application/merge-patch+json",
        )
        return patched

    def set_spec(self, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        """Replace the spec whole (a merge patch would merge into the old one)."""
        current = self.get(name)
        current["spec"] = spec
        replaced: dict[str, Any] = self.api.replace_namespaced_custom_object(
            GROUP, VERSION, self.namespace, PLURAL, name, current
        )
        return replaced

    def delete(self, name: str) -> None:
        self.api.delete_namespaced_custom_object(GROUP, VERSION, self.namespace, PLURAL, name)

    def apply_status(self, name: str, manager: str, conditions: list[dict[str, Any]]) -> None:
        """Server-side apply of `status.conditions` as another controller would."""
        body = feedbackstore(name, None, namespace=self.namespace)
        body["status"] = {"conditions": conditions}
        self.api.patch_namespaced_custom_object_status(
            GROUP,
            VERSION,
            self.namespace,
            PLURAL,
            name,
            body,
            field_manager=manager,
            force=True,
            _content_type="application/apply-patch+yaml",
        )

    def condition(self, name: str, kind: str = "Validated") -> dict[str, Any] | None:
        return condition_of(self.get(name), kind)

    def wait_condition(
        self,
        name: str,
        matches: Callable[[dict[str, Any]], bool],
        *,
        timeout: float = 30.0,
        what: str = "condition",
    ) -> dict[str, Any]:
        """The object, once its `Validated` condition `matches`."""
        return self.wait_for(name, "Validated", matches, timeout=timeout, what=what)

    def wait_for(
        self,
        name: str,
        kind: str,
        matches: Callable[[dict[str, Any]], bool],
        *,
        timeout: float = 30.0,
        what: str = "",
    ) -> dict[str, Any]:
        """The object, once its `kind` condition `matches`."""

        def check() -> dict[str, Any] | None:
            obj = self.get(name)
            condition = condition_of(obj, kind)
            return obj if condition is not None and matches(condition) else None

        found: dict[str, Any] = eventually(check, timeout=timeout, what=f"{name}: {what or kind}")
        return found

    def wait_current(self, *names: str, timeout: float = 30.0) -> None:
        """Each object's `Validated` condition is for its current generation."""
        for name in names:

            def current(n: str = name) -> bool:
                obj = self.get(n)
                condition = condition_of(obj, "Validated") or {}
                return bool(condition.get("observedGeneration") == obj["metadata"]["generation"])

            eventually(current, timeout=timeout, what=f"{name}: condition for its generation")


def condition_of(obj: dict[str, Any], kind: str = "Validated") -> dict[str, Any] | None:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == kind), None)


def managed_by(obj: dict[str, Any], manager: str) -> list[dict[str, Any]]:
    return [e for e in obj["metadata"].get("managedFields") or [] if e["manager"] == manager]


def create_unguarded(
    plane: ControlPlane, namespace: str, objects: dict[str, dict[str, Any]]
) -> None:
    """Create objects the shipped CRD's CEL rules would refuse, then put the shipped CRD back.

    The platform's CRD of today has the same schema without CEL, so they get in; the
    shipped CRD is installed again before returning (other tests, and the writer's later
    writes, run against it).
    """
    install_crd(plane, platform_today_crd())
    try:
        stores = Stores(plane, namespace)
        for name, spec in objects.items():
            stores.create(name, spec)
    finally:
        install_crd(plane, shipped_crd())


def wall_seconds(entry: dict[str, Any]) -> float:
    """A writer log line's time as epoch seconds."""
    return datetime.fromisoformat(str(entry["time"])).timestamp()


def settle(seconds: float) -> None:
    """A quiet period the writer is given to do something it must not do."""
    time.sleep(seconds)


RECONCILES = "feedbackstore_status_reconciles_total"


def decided_to_leave_alone(
    writer: WriterProcess, change: Callable[[], object], decisions: int = 1
) -> None:
    """Make `change` and wait until the writer has reconciled it (`decisions` objects) and found
    nothing to write.

    A write it made instead is counted `written`, not `up_to_date`, and this times out; so a test
    that must see no write sees the writer's decision, where a quiet period of a guessed length
    may end before the writer has even read the change on a loaded machine. First the writer
    settles: each write it made has come back through the watch and been found up to date.
    """

    def settled() -> list[float]:
        up_to_date = writer.metric(RECONCILES, outcome="up_to_date")
        written = writer.metric("feedbackstore_status_writes_total", result="ok")
        return [up_to_date] if up_to_date >= written else []

    (before,) = eventually(settled, what="each write seen back through the watch")
    change()
    eventually(
        lambda: writer.metric(RECONCILES, outcome="up_to_date") >= before + decisions,
        what=f"{decisions} objects reconciled and found up to date",
    )


# -- fixtures, imported by their function names (the module defines `namespace`) --------


@pytest.fixture(name="stores")
def _stores(control_plane: ControlPlane, namespace: str) -> Stores:
    return Stores(control_plane, namespace)


@pytest.fixture(name="audit")
def _audit(control_plane: ControlPlane) -> Audit:
    return Audit(control_plane)


@pytest.fixture(name="writers")
def _writers(
    control_plane: ControlPlane, namespace: str, tmp_path: pathlib.Path
) -> Iterator[Writers]:
    started = Writers(control_plane, tmp_path, namespace, [])
    yield started
    started.close()
