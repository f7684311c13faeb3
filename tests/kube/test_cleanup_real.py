"""`feedbackstore-webhook cleanup` on the real kube-apiserver, beside the platform's reconciler.

An uninstall in a platform cluster keeps the CRD and the stores; `cleanup` takes back what the
status writer put on them. The platform's stand-in (tests/kube/platform_reconciler.py) writes
`Validated` first and the writer yields it; after `cleanup` (as its own user, so the audit log
tells its requests apart) the writer's finalizer and conditions are gone, the platform's
`Validated` is exactly as it was, a store that is still referenced deletes at once, and a second
run writes nothing. While the writer runs, `cleanup` refuses with exit 2 and names the holder.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from tests.kube.cluster import (
    GROUP,
    PLURAL,
    VERSION,
    api_client,
    install_crd,
    new_namespace,
    shipped_crd,
)
from tests.kube.controlplane import ControlPlane
from tests.kube.inuse_support import FINALIZER, Agents, agent_crd_installed
from tests.kube.platform_reconciler import MANAGER as PLATFORM
from tests.kube.platform_reconciler import PlatformProcess, install_identity
from tests.kube.status_writer_support import (  # noqa: F401 (fixtures)
    MANAGER,
    SCRIPT,
    VALID,
    Audit,
    Stores,
    Writers,
    _audit,
    _stores,
    _writers,
    condition_of,
    create_unguarded,
    eventually,
    managed_by,
)
from tests.support.manifest_render import MANIFESTS, kustomize
from tests.support.manifest_render import NAMESPACE as INSTALL_NAMESPACE
from tests.support.stores import INVALID

pytestmark = [pytest.mark.kube, pytest.mark.xdist_group("kube")]

STORES = ("in-use", "one-problem", "valid")


@pytest.fixture(scope="module", autouse=True)
def shipped(control_plane: ControlPlane) -> None:
    install_crd(control_plane, shipped_crd())


@pytest.fixture
def namespace(control_plane: ControlPlane) -> str:
    return new_namespace(control_plane, "cu")


class Cleanup:
    """The console script as a user of its own (`system:masters`), its requests in the audit."""

    def __init__(self, plane: ControlPlane, namespace: str) -> None:
        self.user = f"cleanup-{uuid.uuid4().hex[:6]}"
        self.kubeconfig = plane.write_kubeconfig(
            self.user, plane.pki.client(self.user, "system:masters")
        )
        self.namespace = namespace

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [SCRIPT, "cleanup", "--kubeconfig", str(self.kubeconfig), "--lease-namespace",
                   self.namespace, "--namespace", self.namespace, *args]  # fmt: skip
        return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def writes(audit: Audit, namespace: str, user: str) -> list[str]:
    """Every request of `user` that could change anything in `namespace`."""
    audit.flush(namespace)
    verbs = {"create", "update", "patch", "delete", "deletecollection"}
    return [f"{e.verb} {e.resource}/{e.subresource} {e.name}" for e in audit.events(namespace)
            if e.user == user and e.verb in verbs]  # fmt: skip


def versions(stores: Stores) -> dict[str, str]:
    return {name: stores.get(name)["metadata"]["resourceVersion"] for name in STORES}


def platform_wrote_validated(stores: Stores) -> bool:
    return all(managed_by(stores.get(name), PLATFORM) for name in STORES)


def test_cleanup_takes_back_the_writers_marks_and_leaves_the_platforms_validated(
    control_plane: ControlPlane,
    namespace: str,
    stores: Stores,
    writers: Writers,
    audit: Audit,
    tmp_path: pathlib.Path,
) -> None:
    cleanup = Cleanup(control_plane, namespace)
    with agent_crd_installed(control_plane):
        agents = Agents(control_plane, namespace)
        agents.create("support-agent", "in-use")
        create_unguarded(control_plane, namespace, {"one-problem": INVALID})
        stores.create("valid", VALID)
        stores.create("in-use", VALID)
        platform = PlatformProcess(
            install_identity(control_plane), namespace, tmp_path / "platform.log"
        )
        try:
            # The platform writes Validated first, as where it runs before the install.
            eventually(lambda: platform_wrote_validated(stores), timeout=60, what="platform")
            writer = writers.start("a")
            for name in STORES:
                stores.wait_for(name, "Stalled", lambda c: True, timeout=60)
                stores.wait_for(name, "InUse", lambda c: True, timeout=60)
            eventually(lambda: FINALIZER in (stores.get("in-use")["metadata"].get("finalizers")
                       or ()), what="finalizer")  # fmt: skip

            # While the writer leads: refused, its holder named, nothing written.
            refused = cleanup()
            assert refused.returncode == 2, refused
            assert refused.stdout == ""
            assert f"Lease {namespace}/feedbackstore-status-writer is held by " in refused.stderr
            assert writer.identity in refused.stderr
            assert writes(audit, namespace, cleanup.user) == []

            assert writer.stop() == 0  # SIGTERM: it releases the Lease
            before = {name: stores.get(name) for name in STORES}

            dry = cleanup("--dry-run")
            assert dry.returncode == 0, dry
            assert writes(audit, namespace, cleanup.user) == []
            assert versions(stores) == {
                n: o["metadata"]["resourceVersion"] for n, o in before.items()
            }

            done = cleanup()
            assert done.returncode == 0, done
            assert done.stderr == ""
            after = {name: stores.get(name) for name in STORES}
            assert platform.process.poll() is None, "the platform's reconciler exited"
        finally:
            platform.kill()

        expected = [
            f"{namespace}/in-use: removed finalizer {FINALIZER}; removed conditions InUse, Stalled",
            f"{namespace}/one-problem: removed conditions InUse, Stalled",
            f"{namespace}/valid: removed conditions InUse, Stalled",
            "3 of 3 FeedbackStores changed: 1 finalizers and 6 conditions removed; "
            "0 left to other field managers",
        ]
        assert done.stdout.splitlines() == expected
        assert dry.stdout.splitlines() == [
            *(line.replace(": removed", ": would remove").replace("; removed", "; would remove")
              for line in expected[:-1]),
            "dry run, nothing written: 3 of 3 FeedbackStores would change: 1 finalizers and 6 "
            "conditions to remove; 0 left to other field managers",
        ]  # fmt: skip
        # One status apply per store and one apply of the object for the finalizer; no more.
        assert sorted(writes(audit, namespace, cleanup.user)) == sorted(
            [f"patch feedbackstores/status {name}" for name in STORES]
            + ["patch feedbackstores/ in-use"]
        )
        for name in STORES:
            obj = after[name]
            # The platform's Validated exactly as it was; nothing of ours left anywhere.
            assert condition_of(obj) == condition_of(before[name])
            assert [c["type"] for c in obj["status"]["conditions"]] == ["Validated"]
            assert managed_by(obj, MANAGER) == []
            assert managed_by(obj, PLATFORM) == managed_by(before[name], PLATFORM)
            assert FINALIZER not in (obj["metadata"].get("finalizers") or ())
            assert obj["spec"] == before[name]["spec"]

        # Still referenced, and deleted at once: no finalizer holds it.
        assert agents.get("support-agent")["spec"]["feedbackStoreRef"] == "in-use"
        stores.delete("in-use")
        with pytest.raises(k8s.ApiException) as gone:
            stores.get("in-use")
        assert gone.value.status == 404

        # A second run finds nothing of ours and writes nothing.
        left = {n: after[n]["metadata"]["resourceVersion"] for n in STORES[1:]}
        again = cleanup()
        assert again.returncode == 0, again
        assert again.stdout.splitlines() == [
            "0 of 2 FeedbackStores changed: 0 finalizers and 0 conditions removed; "
            "0 left to other field managers"
        ]
        assert sorted(writes(audit, namespace, cleanup.user)) == sorted(
            [f"patch feedbackstores/status {name}" for name in STORES]
            + ["patch feedbackstores/ in-use"]
        )
        now = {n: stores.get(n)["metadata"]["resourceVersion"] for n in STORES[1:]}
        assert now == left


def apply(stores: Stores, manager: str, body: dict[str, Any], *, status: bool) -> None:
    """Server-side apply as `manager` (forced, as a controller's)."""
    api = stores.api
    call = (
        api.patch_namespaced_custom_object_status if status else api.patch_namespaced_custom_object
    )
    name = body["metadata"]["name"]
    content = "application/apply-patch+yaml"
    call(GROUP, VERSION, stores.namespace, PLURAL, name, body, field_manager=manager, force=True,
         _content_type=content)  # fmt: skip


def update_status(stores: Stores, manager: str, conditions: list[dict[str, Any]]) -> None:
    """A status UPDATE of the conditions as another controller's (the operator's way): the
    fields whose values it changes become its own, and only those."""
    body = stores.get("shared")
    body["status"] = {"conditions": conditions}
    stores.api.replace_namespaced_custom_object_status(
        GROUP, VERSION, stores.namespace, PLURAL, "shared", body, field_manager=manager
    )


@pytest.mark.parametrize(
    "how",
    [
        pytest.param(
            "update",
            id="an UPDATE that took Validated's message alone (the platform operator's way)",
        ),
        pytest.param("apply", id="an apply of the same Validated with its own message"),
    ],
)
def test_what_another_manager_owns_part_of_stays_whole(
    control_plane: ControlPlane, namespace: str, stores: Stores, audit: Audit, how: str
) -> None:
    """Another manager owns a field of our `Validated` (and holds our finalizer too): both stay,
    at their values. Where it owns the message alone (an UPDATE), an apply that left
    `Validated` out would remove the whole condition, its message with it."""
    stores.create("shared", VALID)
    ident = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "FeedbackStore",
             "metadata": {"name": "shared", "namespace": namespace}}  # fmt: skip

    def cond(kind: str, message: str) -> dict[str, Any]:
        return {"type": kind, "status": "True", "reason": "Because", "message": message,
                "lastTransitionTime": "2026-12-04T05:00:00Z"}  # fmt: skip

    ours = [cond("Validated", "ours"), cond("Stalled", "ours"), cond("InUse", "ours")]
    apply(stores, MANAGER, {**ident, "status": {"conditions": ours}}, status=True)
    if how == "update":
        update_status(stores, "other-controller", [cond("Validated", "theirs"), *ours[1:]])
        theirs = managed_by(stores.get("shared"), "other-controller")
        assert [e["fieldsV1"] for e in theirs] == [
            {"f:status": {"f:conditions": {'k:{"type":"Validated"}': {"f:message": {}}}}}
        ]
    else:
        theirs_only = {"conditions": [cond("Validated", "theirs")]}
        apply(stores, "other-controller", {**ident, "status": theirs_only}, status=True)
    held = {**ident, "metadata": {**ident["metadata"], "finalizers": [FINALIZER]}}
    apply(stores, MANAGER, held, status=False)
    apply(stores, "other-controller", held, status=False)
    before = stores.get("shared")
    cleanup = Cleanup(control_plane, namespace)

    done = cleanup()

    assert done.returncode == 0, done
    assert done.stdout.splitlines() == [
        f"{namespace}/shared: removed conditions InUse, Stalled; left Validated (also owned by "
        f"other-controller); left {FINALIZER} (also owned by other-controller)",
        "1 of 1 FeedbackStores changed: 0 finalizers and 2 conditions removed; "
        "2 left to other field managers",
    ]
    after = stores.get("shared")
    assert after["status"]["conditions"] == [cond("Validated", "theirs")]
    assert condition_of(after) == condition_of(before)
    assert after["metadata"]["finalizers"] == [FINALIZER]
    assert managed_by(after, "other-controller") == managed_by(before, "other-controller")
    # Ours: the fields of Validated we still own with the other controller, nothing more.
    ours_left = [e["fieldsV1"] for e in managed_by(after, MANAGER)]
    shared = {".": {}, "f:lastTransitionTime": {}, "f:reason": {}, "f:status": {}, "f:type": {}}
    assert ours_left == [{"f:status": {"f:conditions": {'k:{"type":"Validated"}': shared}}}]
    version = after["metadata"]["resourceVersion"]

    again = cleanup()
    assert again.returncode == 0, again
    assert again.stdout.splitlines() == [
        "0 of 1 FeedbackStores changed: 0 finalizers and 0 conditions removed; "
        "1 left to other field managers"
    ]
    assert stores.get("shared")["metadata"]["resourceVersion"] == version
    assert len(writes(audit, namespace, cleanup.user)) == 2


# -- its own ServiceAccount (manifests/cleanup/, what the chart's hook and the Job run as) -------

CLEANUP_SA = "feedbackstore-cleanup"
CLEANUP_USER = f"system:serviceaccount:{INSTALL_NAMESPACE}:{CLEANUP_SA}"


def granted(docs: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """(apiGroup, resource[/subresource], verb) of every rule manifests/cleanup/ grants."""
    return {
        (group, resource, verb)
        for doc in docs
        if doc["kind"] in {"ClusterRole", "Role"}
        for rule in doc["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


@pytest.fixture
def cleanup_rbac(control_plane: ControlPlane) -> Iterator[list[dict[str, Any]]]:
    """The install's namespace and the cleanup Job's ServiceAccount and RBAC, taken away again
    after the test: the cluster is shared, and the RBAC test of a fresh install needs one that
    manifests/ (namespace included) was never applied to."""
    docs = [d for d in kustomize(MANIFESTS / "cleanup") if d["kind"] != "Job"]
    namespace_file = str(MANIFESTS / "base" / "namespace.yaml")
    control_plane.kubectl("apply", "-f", namespace_file, check=True)
    control_plane.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(docs), check=True)
    try:
        yield docs
    finally:
        stdin = yaml.safe_dump_all(docs)
        control_plane.kubectl("delete", "-f", "-", "--ignore-not-found", stdin=stdin, check=True)
        control_plane.kubectl(
            "delete", "-f", namespace_file, "--wait=true", "--timeout=120s", check=True
        )


def test_its_own_service_account_does_the_whole_job_with_every_verb_granted_and_no_more(
    control_plane: ControlPlane, namespace: str, stores: Stores, cleanup_rbac: list[dict[str, Any]]
) -> None:
    docs = cleanup_rbac
    stores.create("marked", VALID)
    ident = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "FeedbackStore",
             "metadata": {"name": "marked", "namespace": namespace}}  # fmt: skip
    stalled = {"type": "Stalled", "status": "False", "reason": "SpecCoherent",
               "message": "feedback store spec is coherent",
               "lastTransitionTime": "2026-12-04T05:00:00Z"}  # fmt: skip
    apply(stores, MANAGER, {**ident, "status": {"conditions": [stalled]}}, status=True)
    held = {**ident, "metadata": {**ident["metadata"], "finalizers": [FINALIZER]}}
    apply(stores, MANAGER, held, status=False)
    core = k8s.CoreV1Api(api_client(control_plane))
    request = {"spec": {"expirationSeconds": 3600}}
    token = core.create_namespaced_service_account_token(CLEANUP_SA, INSTALL_NAMESPACE, request)
    kubeconfig = control_plane.write_kubeconfig("cleanup-sa", token=token.status.token)
    offset = control_plane.audit_log.stat().st_size

    # Every namespace and the shipped Lease name, as the Job runs it.
    result = subprocess.run(
        [SCRIPT, "cleanup", "--kubeconfig", str(kubeconfig)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip

    assert result.returncode == 0, result
    assert f"{namespace}/marked: removed finalizer {FINALIZER}; removed conditions Stalled" in (
        result.stdout.splitlines()
    )
    obj = stores.get("marked")
    assert "finalizers" not in obj["metadata"]
    assert "conditions" not in (obj.get("status") or {})
    Audit(control_plane).flush(namespace)
    with control_plane.audit_log.open("rb") as log:
        log.seek(offset)
        events = [json.loads(line) for line in log.read().splitlines()]
    mine = [e for e in events if e["user"]["username"] == CLEANUP_USER
            and e["stage"] == "ResponseComplete"]  # fmt: skip
    refused = [e for e in mine if e["responseStatus"]["code"] == 403]
    assert refused == []
    used = set()
    for event in mine:
        ref = event["objectRef"]
        resource = ref["resource"] + (f"/{ref['subresource']}" if ref.get("subresource") else "")
        used.add((ref.get("apiGroup", ""), resource, event["verb"]))
    assert used == granted(docs)

    def can(verb: str, resource: str, *flags: str) -> bool:
        answer = control_plane.kubectl("auth", "can-i", verb, resource, *flags,
                                       f"--as={CLEANUP_USER}")  # fmt: skip
        return answer.stdout.strip() == "yes"

    fs = "feedbackstores.agents.ctxmesh.ai"
    lease = "leases.coordination.k8s.io"
    asked = {
        ("patch", fs, "-A"): True,
        ("patch", fs, "--subresource=status", "-A"): True,
        ("list", fs, "-A"): True,
        ("get", f"{lease}/feedbackstore-status-writer", "-n", INSTALL_NAMESPACE): True,
        ("get", fs, "-n", namespace): False,
        ("watch", fs, "-A"): False,
        ("create", fs, "-n", namespace): False,
        ("delete", fs, "-n", namespace): False,
        ("update", fs, "-n", namespace): False,
        ("patch", "customresourcedefinitions.apiextensions.k8s.io"): False,
        ("create", "events", "-n", namespace): False,
        ("update", f"{lease}/feedbackstore-status-writer", "-n", INSTALL_NAMESPACE): False,
        ("get", f"{lease}/another", "-n", INSTALL_NAMESPACE): False,
        ("get", "secrets", "-n", INSTALL_NAMESPACE): False,
    }
    assert {question: can(*question) for question in asked} == asked
