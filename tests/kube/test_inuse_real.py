"""In-use protection (no store deleted while an agent uses it) on a real kube-apiserver v1.37.2: the
status writer as a console script, the webhook registered by `url:`, and a minimal AgentDeployment
CRD.

The test control plane runs kube-controller-manager's namespace controller (and no
other controller), so a deleted namespace is emptied and removed as in a cluster: the
namespace test only deletes the namespace and watches the agents go, the store wait for
our finalizer, and the namespace go once the writer has released it.
"""

from __future__ import annotations

import json
import pathlib
import tempfile
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import watch as k8s_watch

from tests.kube.cluster import (
    GROUP,
    PLURAL,
    VERSION,
    api_client,
    eventually,
    install_crd,
    new_namespace,
    registered,
    registration,
    shipped_crd,
    webhook_server,
)
from tests.kube.controlplane import CONTROLLER_MANAGER_USER, ControlPlane
from tests.kube.inuse_support import AGENT_PLURAL, FINALIZER, Agents, agent_crd_installed
from tests.kube.status_writer_support import VALID, Audit, Stores, WriterProcess
from webhook.status.usage import finalizer_removal_patch

pytestmark = [pytest.mark.kube, pytest.mark.xdist_group("kube")]


@pytest.fixture(scope="module", autouse=True)
def crds(control_plane: ControlPlane) -> Iterator[None]:
    install_crd(control_plane, shipped_crd())
    with agent_crd_installed(control_plane):
        yield


@pytest.fixture(scope="module", autouse=True)
def webhook(control_plane: ControlPlane, crds: None) -> Iterator[None]:
    probe = new_namespace(control_plane, "inuse-probe")
    with (
        tempfile.TemporaryDirectory() as directory,
        webhook_server(pathlib.Path(directory)) as server,
    ):
        document = registration(f"inuse-{uuid.uuid4().hex[:6]}", server.url, server.ca_pem)
        with registered(control_plane, document, probe):
            yield


@pytest.fixture
def namespace(control_plane: ControlPlane) -> str:
    return new_namespace(control_plane, "inuse")


@pytest.fixture
def started(control_plane: ControlPlane, tmp_path: pathlib.Path) -> Iterator[list[WriterProcess]]:
    writers: list[WriterProcess] = []
    yield writers
    for writer in writers:
        writer.kill()


def start_writer(
    plane: ControlPlane,
    tmp_path: pathlib.Path,
    namespace: str,
    started: list[WriterProcess],
    lease_namespace: str | None = None,
) -> WriterProcess:
    extra = ("--lease-namespace", lease_namespace) if lease_namespace else ()
    writer = WriterProcess(plane, tmp_path, "inuse", namespace, *extra, resync_seconds=30)
    started.append(writer)
    writer.started().wait_log("in-use protection on: watching AgentDeployments")
    return writer


def in_use(stores: Stores, name: str) -> dict[str, Any] | None:
    return stores.condition(name, "InUse")


def finalizers(stores: Stores, name: str) -> list[str]:
    return list(stores.get(name)["metadata"].get("finalizers") or [])


def gone(objects: Stores | Agents, name: str) -> bool:
    try:
        objects.get(name)
    except k8s.ApiException as error:
        return error.status == 404
    return False


def events(plane: ControlPlane, namespace: str, name: str) -> list[tuple[str, str, str]]:
    items = k8s.CoreV1Api(api_client(plane)).list_namespaced_event(namespace).items
    return [(e.type, e.reason, e.message) for e in items if e.involved_object.name == name]


def test_a_store_in_use_stays_terminating_with_a_warning_until_its_agents_let_go(
    control_plane: ControlPlane,
    namespace: str,
    tmp_path: pathlib.Path,
    started: list[WriterProcess],
) -> None:
    stores, agents = Stores(control_plane, namespace), Agents(control_plane, namespace)
    stores.create("support-feedback", VALID)
    start_writer(control_plane, tmp_path, namespace, started)
    agents.create("support-agent", "support-feedback")
    agents.create("triage-agent", "support-feedback", version="v1alpha1")  # deprecated version

    used = eventually(
        lambda: (c := in_use(stores, "support-feedback")) and "triage-agent" in c["message"] and c,
        what="InUse names both agents",
    )
    assert (used["status"], used["reason"], used["message"]) == (
        "True",
        "Referenced",
        "in use by 2 AgentDeployments: support-agent, triage-agent",
    )
    eventually(
        lambda: FINALIZER in finalizers(stores, "support-feedback"),
        what="our finalizer added",
    )
    # The writer's apply on the main resource owns our finalizer entry and nothing else.
    (owned,) = [
        m
        for m in stores.get("support-feedback")["metadata"]["managedFields"]
        if m["manager"] == "feedbackstore-status-writer" and "subresource" not in m
    ]
    assert (owned["operation"], owned["fieldsV1"]) == (
        "Apply",
        {"f:metadata": {"f:finalizers": {f'v:"{FINALIZER}"': {}}}},
    )
    listed = control_plane.kubectl("get", "fs", "-n", namespace, check=True).stdout
    header, row = listed.splitlines()
    assert header.split() == ["NAME", "MODE", "VALIDATED", "IN", "USE", "AGE"]
    assert row.split()[:4] == ["support-feedback", "Enforce", "True", "True"]
    wide = control_plane.kubectl("get", "fs", "-n", namespace, "-o", "wide", check=True).stdout
    assert wide.splitlines()[0].split()[:7] == [
        "NAME",
        "MODE",
        "VALIDATED",
        "REASON",
        "IN",
        "USE",
        "AGENTS",
    ]
    assert "in use by 2 AgentDeployments: support-agent, triage-agent" in wide
    print(listed, wide, sep="\n")

    deleted = control_plane.kubectl(
        "delete", "fs", "support-feedback", "-n", namespace, "--wait=false", check=True
    )
    assert deleted.stderr.splitlines() == [
        'Warning: FeedbackStore "support-feedback" is in use by 2 AgentDeployments: '
        "support-agent, triage-agent",
        "Warning: it stays Terminating until no AgentDeployment references it, then it is deleted",
    ]
    assert deleted.stdout.strip() == (
        f'feedbackstore.agents.ctxmesh.ai "support-feedback" deleted from {namespace} namespace'
    )
    print(deleted.stderr, deleted.stdout)
    eventually(
        lambda: (in_use(stores, "support-feedback") or {}).get("reason") == "DeletionDeferred",
        what="InUse DeletionDeferred",
    )
    assert stores.get("support-feedback")["metadata"]["deletionTimestamp"]
    described = control_plane.kubectl(
        "describe", "fs", "support-feedback", "-n", namespace, check=True
    ).stdout
    print(described)
    print(control_plane.kubectl("get", "fs", "-n", namespace).stdout)
    assert "DeletionDeferred" in described
    eventually(
        lambda: any(
            r == "DeletionDeferred"
            for _, r, _ in events(control_plane, namespace, "support-feedback")
        ),
        what="Event DeletionDeferred",
    )

    agents.point("support-agent", None)  # one reference removed: still held by the other
    eventually(
        lambda: (
            "1 AgentDeployment: triage-agent"
            in (in_use(stores, "support-feedback") or {}).get("message", "")
        ),
        what="InUse names the last agent",
    )
    assert not gone(stores, "support-feedback")
    agents.delete("triage-agent")
    eventually(lambda: gone(stores, "support-feedback"), what="store gone")
    assert (
        "Normal",
        "DeletionReleased",
        "no AgentDeployment references it any more: finalizer "
        "agents.ctxmesh.ai/in-use-protection removed, deletion goes on",
    ) in events(control_plane, namespace, "support-feedback")


def test_a_store_is_held_before_it_is_said_to_be_in_use(
    control_plane: ControlPlane,
    namespace: str,
    tmp_path: pathlib.Path,
    started: list[WriterProcess],
) -> None:
    """Every version of the store the server keeps (a watch sees each one) that says `InUse=True`
    already carries our finalizer: whoever reads "in use" (a user about to delete, a GitOps tool)
    may rely on the deletion waiting."""
    stores, agents = Stores(control_plane, namespace), Agents(control_plane, namespace)
    created = stores.create("held-feedback", VALID)
    start_writer(control_plane, tmp_path, namespace, started)
    agents.create("held-agent", "held-feedback")
    versions: list[tuple[bool, bool]] = []  # (InUse True, finalizer held), in the server's order
    stream = k8s_watch.Watch().stream(
        stores.api.list_namespaced_custom_object,
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        field_selector="metadata.name=held-feedback",
        resource_version=created["metadata"]["resourceVersion"],
        timeout_seconds=15,
    )
    for event in stream:
        obj = event["object"]
        said = any(
            c.get("type") == "InUse" and c.get("status") == "True"
            for c in (obj.get("status") or {}).get("conditions") or []
        )
        versions.append((said, FINALIZER in (obj["metadata"].get("finalizers") or [])))
        if said:
            break
    assert versions, "the watch saw no version of the store"
    assert versions[-1][0], f"InUse never turned True: {versions}"
    assert [held for said, held in versions if said] == [True], versions
    assert (False, True) in versions, f"not held first: {versions}"


def test_a_store_never_referenced_is_deleted_at_once(
    control_plane: ControlPlane,
    namespace: str,
    tmp_path: pathlib.Path,
    started: list[WriterProcess],
) -> None:
    stores, agents = Stores(control_plane, namespace), Agents(control_plane, namespace)
    stores.create("spare", VALID)
    agents.create("other-agent", "another-store")  # references something else
    start_writer(control_plane, tmp_path, namespace, started)
    free = eventually(lambda: in_use(stores, "spare"), what="InUse written")
    assert (free["status"], free["reason"]) == ("False", "NotReferenced")
    assert finalizers(stores, "spare") == []
    deleted = control_plane.kubectl(
        "delete", "fs", "spare", "-n", namespace, "--timeout=10s", check=True
    )
    assert deleted.stderr == ""  # no warning
    assert gone(stores, "spare")


def test_namespace_deletion_completes_across_a_writer_restart(
    control_plane: ControlPlane,
    namespace: str,
    tmp_path: pathlib.Path,
    started: list[WriterProcess],
) -> None:
    # The Lease lives elsewhere: nothing can be created in a namespace being deleted.
    leases = new_namespace(control_plane, "inuse-lease")
    stores, agents = Stores(control_plane, namespace), Agents(control_plane, namespace)
    stores.create("store", VALID)
    agents.create("agent", "store")
    first = start_writer(control_plane, tmp_path, namespace, started, leases)
    eventually(lambda: FINALIZER in finalizers(stores, "store"), what="our finalizer added")
    assert first.stop() == 0

    core = k8s.CoreV1Api(api_client(control_plane))
    core.delete_namespace(namespace)

    def namespace_gone() -> bool:
        try:
            core.read_namespace(namespace)
        except k8s.ApiException as error:
            return error.status == 404
        return False

    # The namespace controller deletes the namespace's objects: the agents go, and the
    # store waits for our finalizer, which no writer is running to release...
    eventually(lambda: gone(agents, "agent"), timeout=30, what="agents deleted")
    # ...and it is the namespace controller that deleted them, not this test.
    audited = Audit(control_plane).events(namespace)
    removals = {
        (e.user, e.verb)
        for e in audited
        if e.resource == AGENT_PLURAL and e.verb.startswith("delete")
    }
    assert removals == {(CONTROLLER_MANAGER_USER, "deletecollection")}
    eventually(
        lambda: bool(stores.get("store")["metadata"].get("deletionTimestamp")),
        timeout=30,
        what="store being deleted",
    )
    assert FINALIZER in finalizers(stores, "store")
    assert not namespace_gone()
    assert core.read_namespace(namespace).status.phase == "Terminating"

    # ...until a writer runs again: it releases the store, and the namespace goes.
    start_writer(control_plane, tmp_path, namespace, started, leases)
    eventually(lambda: gone(stores, "store"), what="store released and gone")
    eventually(namespace_gone, timeout=30, what="namespace deleted")


def test_a_finalizer_a_kubectl_apply_lists_too_is_released_on_the_servers_word(
    control_plane: ControlPlane,
    namespace: str,
    tmp_path: pathlib.Path,
    started: list[WriterProcess],
) -> None:
    """A manifest applied with our finalizer in it (exported from a live store, say) co-owns the
    entry: the writer's server-side apply then only drops its own ownership, and the finalizer
    stays. The writer reads that in the apply's answer and takes it off by a JSON patch whose
    `test` ops hold it to the object it read; the real server refuses such a patch (422) once
    the finalizers changed."""
    stores, agents = Stores(control_plane, namespace), Agents(control_plane, namespace)
    stores.create("shared-feedback", VALID)
    writer = start_writer(control_plane, tmp_path, namespace, started)
    agents.create("support-agent", "shared-feedback")
    eventually(
        lambda: FINALIZER in finalizers(stores, "shared-feedback"),
        what="our finalizer added",
    )
    manifest = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "FeedbackStore",
        "metadata": {"name": "shared-feedback", "namespace": namespace, "finalizers": [FINALIZER]},
    }
    control_plane.kubectl(
        "apply", "--server-side", "-f", "-", stdin=json.dumps(manifest), check=True
    )
    owners = [
        m["manager"]
        for m in stores.get("shared-feedback")["metadata"]["managedFields"]
        if "f:finalizers" in m["fieldsV1"].get("f:metadata", {})
    ]
    assert sorted(owners) == ["feedbackstore-status-writer", "kubectl"]

    # The guard, as the real server judges it: a patch built before the finalizers changed.
    stale = finalizer_removal_patch(stores.get("shared-feedback"))
    assert stale is not None
    stores.merge("shared-feedback", {"metadata": {"finalizers": [FINALIZER, "example.com/keep"]}})
    with pytest.raises(k8s.ApiException) as refused:
        stores.api.patch_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, "shared-feedback", stale,
            _content_type="application/json-patch+json",
        )  # fmt: skip
    assert refused.value.status == 422
    assert finalizers(stores, "shared-feedback") == [FINALIZER, "example.com/keep"]
    stores.merge("shared-feedback", {"metadata": {"finalizers": [FINALIZER]}})

    control_plane.kubectl("delete", "fs", "shared-feedback", "-n", namespace, "--wait=false")
    agents.delete("support-agent")
    eventually(lambda: gone(stores, "shared-feedback"), what="store released")
    released = [
        e for e in events(control_plane, namespace, "shared-feedback") if e[1] == "DeletionReleased"
    ]
    assert len(released) == 1
    assert len(writer.messages("finalizer removed")) == 1
    (shared,) = writer.messages(
        "finalizer also listed by another field manager; removing it by a guarded JSON patch"
    )
    assert shared["name"] == "shared-feedback"
    audit = Audit(control_plane)
    audit.flush(namespace)
    patches = [
        e.uri
        for e in audit.events(namespace)
        if (e.user, e.resource, e.subresource, e.verb) == (writer.user, PLURAL, "", "patch")
    ]
    # Held (apply), let go by apply (which left it), then by the guarded patch (no force).
    assert ["force=true" in uri for uri in patches] == [True, True, False]
