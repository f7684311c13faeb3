"""manifests/ against a real kube-apiserver: accepted as shipped, and the status writer's RBAC
is exactly what it needs.

The shipped ValidatingWebhookConfiguration points at a Service, and this
kube-apiserver must never call a Service address. So while it exists no
FeedbackStore is written anywhere (not even a dry run): each test that applies
it deletes it again in `finally`, and the writer's tests install everything but
it. The Deployments never run (there is no kubelet); the status writer runs
here as the real console script with a token of its own ServiceAccount.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import signal
import subprocess
import sys
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
    eventually,
    feedbackstore,
    install_crd,
    new_namespace,
    platform_today_crd,
    shipped_crd,
)
from tests.kube.controlplane import ControlPlane
from tests.kube.inuse_support import (
    AGENT_GROUP,
    AGENT_PLURAL,
    FINALIZER,
    Agents,
    agent_crd_installed,
)
from tests.support.manifest_render import MANIFESTS, NAMESPACE, kustomize
from tests.support.stores import VALID

pytestmark = [pytest.mark.kube, pytest.mark.xdist_group("kube")]

WRITER = "feedbackstore-status-writer"
WRITER_USER = f"system:serviceaccount:{NAMESPACE}:{WRITER}"
WEBHOOK_USER = f"system:serviceaccount:{NAMESPACE}:feedbackstore-webhook"
WEBHOOK_CONFIGURATION = "feedbackstore-webhook"
FS = "feedbackstores.agents.ctxmesh.ai"
AGENTS = "agentdeployments.agents.ctxmesh.ai"
LEASES = "leases.coordination.k8s.io"
LEASE = f"{LEASES}/{WRITER}"
OTHER_LEASE = f"{LEASES}/another-lease"
ALL_NS, ANY_NS, INSTALL_NS = ["-A"], ["-n", "any"], ["-n", NAMESPACE]
STATUS = ["--subresource=status", *ANY_NS]
NAMESPACE_FILE = MANIFESTS / "base" / "namespace.yaml"
SCRIPT = pathlib.Path(sys.executable).parent / "feedbackstore-webhook"
# Two sources declaring one score name: valid to the schema, refused by the rules.
INVALID = {
    "human": {"scores": [{"name": "thumbs"}]},
    "external": [{"name": "crm", "score": {"name": "thumbs"}}],
}

# cert-manager's CRDs are not ours to vendor; these stand in for them with the same
# group, versions, kinds and scope, and accept any spec. They prove the variant's
# cert-manager objects reach the API and are stored as written, nothing about
# cert-manager's own schema.
CERT_MANAGER_KINDS = (("Issuer", "issuers"), ("Certificate", "certificates"))


@pytest.fixture(scope="module", autouse=True)
def _crd(control_plane: ControlPlane) -> None:
    install_crd(control_plane, shipped_crd())


# -- helpers ---------------------------------------------------------------


def rendered(directory: pathlib.Path) -> list[dict[str, Any]]:
    return kustomize(directory)


def namespaced(doc: dict[str, Any]) -> bool:
    return "namespace" in doc["metadata"]


def ref(doc: dict[str, Any]) -> str:
    """How `kubectl apply` names an object: `kind.group/name`, the core group left out."""
    group = doc["apiVersion"].rpartition("/")[0]
    kind = doc["kind"].lower() + (f".{group}" if group else "")
    return f"{kind}/{doc['metadata']['name']}"


# The tests' CRD fixture installs the CRD by server-side apply, so the first client-side
# `kubectl apply` of manifests/ finds it without kubectl's annotation and says so. Nothing
# else may be on stderr.
CRD_ADOPTED = (
    f"Warning: resource customresourcedefinitions/{FS} is missing the "
    "kubectl.kubernetes.io/last-applied-configuration annotation which is required by kubectl "
    "apply. kubectl apply should only be used on resources created declaratively by either "
    "kubectl create --save-config or kubectl apply. The missing annotation will be patched "
    "automatically."
)


def stderr_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in result.stderr.splitlines() if line != CRD_ADOPTED]


def exists(plane: ControlPlane, *args: str) -> bool:
    result = plane.kubectl("get", *args, "--ignore-not-found", "-o", "name")
    assert result.returncode == 0, result.stderr
    return result.stdout.strip() != ""


@contextlib.contextmanager
def shipped_webhook_configuration_removed_after(plane: ControlPlane) -> Iterator[None]:
    """Whatever happens, the Service-pointing webhook configuration is gone afterwards."""
    try:
        yield
    finally:
        plane.kubectl(
            "delete",
            "validatingwebhookconfiguration",
            WEBHOOK_CONFIGURATION,
            "--ignore-not-found",
            "--wait=true",
            check=True,
        )
        assert not exists(plane, "validatingwebhookconfiguration", WEBHOOK_CONFIGURATION)


def assert_no_shipped_webhook_configuration(plane: ControlPlane) -> None:
    assert not exists(plane, "validatingwebhookconfiguration", WEBHOOK_CONFIGURATION), (
        "the shipped webhook configuration (it points at a Service) is still registered"
    )


def stored(plane: ControlPlane, doc: dict[str, Any]) -> dict[str, Any]:
    args = ["get", ref(doc), "-o", "json"]
    if namespaced(doc):
        args += ["-n", doc["metadata"]["namespace"]]
    result: dict[str, Any] = json.loads(plane.kubectl(*args, check=True).stdout)
    return result


def contains(actual: Any, expected: Any) -> bool:
    """`expected` is `actual` with server defaults left out (dicts compared key by key)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            key in actual and contains(actual[key], value) for key, value in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(contains(a, e) for a, e in zip(actual, expected, strict=True))
        )
    return bool(actual == expected)


# -- the install -----------------------------------------------------------


def test_a_server_dry_run_of_a_fresh_install_is_refused_only_for_want_of_the_namespace(
    control_plane: ControlPlane,
) -> None:
    assert not exists(control_plane, "namespace", NAMESPACE), (
        f"{NAMESPACE} exists already: this test needs a cluster manifests/ was never applied to"
    )
    docs = rendered(MANIFESTS)
    result = control_plane.kubectl("apply", "-k", str(MANIFESTS), "--dry-run=server")
    assert result.returncode == 1
    assert stderr_lines(result) == [
        f'Error from server (NotFound): error when creating "{MANIFESTS}": '
        f'namespaces "{NAMESPACE}" not found'
    ] * sum(namespaced(doc) for doc in docs)
    for doc in docs:
        if not namespaced(doc) and doc["kind"] != "CustomResourceDefinition":
            assert f"{ref(doc)} created (server dry run)" in result.stdout.splitlines()
    assert not exists(control_plane, "namespace", NAMESPACE), "a dry run persisted something"
    assert not exists(control_plane, "clusterrole", WRITER), "a dry run persisted something"


def test_apply_k_manifests_is_accepted_as_shipped_dry_run_and_for_real(
    control_plane: ControlPlane,
) -> None:
    docs = rendered(MANIFESTS)
    control_plane.kubectl("apply", "-f", str(NAMESPACE_FILE), check=True)
    with shipped_webhook_configuration_removed_after(control_plane):
        dry = control_plane.kubectl("apply", "-k", str(MANIFESTS), "--dry-run=server")
        assert (dry.returncode, stderr_lines(dry)) == (0, [])
        assert len(dry.stdout.splitlines()) == len(docs)
        assert all(line.endswith(" (server dry run)") for line in dry.stdout.splitlines())
        assert not exists(control_plane, "clusterrole", WRITER), "a dry run persisted something"

        real = control_plane.kubectl("apply", "-k", str(MANIFESTS))
        # No warning at all: Pod Security admission would warn here about any pod
        # template that breaks the namespace's `restricted` level (proven below).
        assert (real.returncode, stderr_lines(real)) == (0, [])
        assert sorted(line.rsplit(" ", 1)[0] for line in real.stdout.splitlines()) == sorted(
            ref(doc) for doc in docs
        )
        for doc in docs:
            assert contains(stored(control_plane, doc), doc), f"{ref(doc)} not stored as written"

        # What the server defaulted is what the manifests say: nothing to diff, and a
        # later server-side apply takes over from client-side apply without a conflict.
        diff = control_plane.kubectl("diff", "-k", str(MANIFESTS))
        assert (diff.returncode, diff.stdout, diff.stderr) == (0, "", "")
        ssa = control_plane.kubectl("apply", "-k", str(MANIFESTS), "--server-side")
        assert (ssa.returncode, ssa.stderr) == (0, ""), ssa.stderr
        assert all(line.endswith(" serverside-applied") for line in ssa.stdout.splitlines())

        webhook = stored(
            control_plane,
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": WEBHOOK_CONFIGURATION},
            },
        )
        entry, delete_entry, agent_entry = webhook["webhooks"]
        assert (agent_entry["failurePolicy"], agent_entry["rules"][0]["resources"]) == (
            "Ignore",
            ["agentdeployments"],
        )
        assert (delete_entry["failurePolicy"], delete_entry["rules"][0]["operations"]) == (
            "Ignore",
            ["DELETE"],
        )
        assert entry["clientConfig"]["service"] == {
            "namespace": NAMESPACE,
            "name": "feedbackstore-webhook",
            "path": "/validate",
            "port": 443,
        }
        assert (entry["failurePolicy"], entry["sideEffects"], entry["matchPolicy"]) == (
            "Fail",
            "None",
            "Equivalent",
        )
        assert entry["rules"][0]["resources"] == ["feedbackstores"]
    assert_no_shipped_webhook_configuration(control_plane)


def test_pod_security_admission_is_on_and_would_warn_about_a_bad_pod_template(
    control_plane: ControlPlane,
) -> None:
    """The control for the test above: its empty stderr means the Deployments pass."""
    control_plane.kubectl("apply", "-f", str(NAMESPACE_FILE), check=True)
    unhardened = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "unhardened", "namespace": NAMESPACE},
        "spec": {
            "selector": {"matchLabels": {"app": "u"}},
            "template": {
                "metadata": {"labels": {"app": "u"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]},
            },
        },
    }
    result = control_plane.kubectl(
        "apply", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(unhardened)
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith(
        'Warning: would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != '
        'false (container "c" must set securityContext.allowPrivilegeEscalation=false)'
    )


def cert_manager_crd(kind: str, plural: str) -> dict[str, Any]:
    anything = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.cert-manager.io"},
        "spec": {
            "group": "cert-manager.io",
            "scope": "Namespaced",
            "names": {
                "kind": kind,
                "plural": plural,
                "singular": kind.lower(),
                "listKind": f"{kind}List",
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {"spec": anything, "status": anything},
                        }
                    },
                }
            ],
        },
    }


@contextlib.contextmanager
def stand_in_cert_manager_crds(plane: ControlPlane) -> Iterator[None]:
    crds = [cert_manager_crd(kind, plural) for kind, plural in CERT_MANAGER_KINDS]
    names = [f"crd/{crd['metadata']['name']}" for crd in crds]
    plane.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(crds), check=True)
    try:
        plane.kubectl("wait", "--for=condition=Established", *names, "--timeout=60s", check=True)
        yield
    finally:
        plane.kubectl("delete", *names, "--ignore-not-found", "--timeout=60s", check=True)


def test_the_cert_manager_variant_needs_cert_managers_crds_then_is_accepted(
    control_plane: ControlPlane,
) -> None:
    variant = MANIFESTS / "cert-manager"
    docs = rendered(variant)
    control_plane.kubectl("apply", "-f", str(NAMESPACE_FILE), check=True)
    with shipped_webhook_configuration_removed_after(control_plane):
        # docs/install.md, Path 2: what the first apply says when cert-manager is not installed.
        missing = control_plane.kubectl("apply", "-k", str(variant), "--dry-run=server")
        assert missing.returncode == 1
        assert (
            'no matches for kind "Issuer" in version "cert-manager.io/v1"\n'
            "ensure CRDs are installed first"
        ) in missing.stderr
        with stand_in_cert_manager_crds(control_plane):
            dry = control_plane.kubectl("apply", "-k", str(variant), "--dry-run=server")
            assert (dry.returncode, stderr_lines(dry)) == (0, [])
            real = control_plane.kubectl("apply", "-k", str(variant))
            assert (real.returncode, stderr_lines(real)) == (0, [])
            for doc in docs:
                assert contains(stored(control_plane, doc), doc), f"{ref(doc)} not as written"
            webhook = next(d for d in docs if d["kind"] == "ValidatingWebhookConfiguration")
            live = stored(control_plane, webhook)
            assert live["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == (
                f"{NAMESPACE}/feedbackstore-webhook-tls"
            )
            assert "caBundle" not in live["webhooks"][0]["clientConfig"]
    assert_no_shipped_webhook_configuration(control_plane)


# -- the status writer's identity ------------------------------------------


@pytest.fixture(scope="module")
def installed(control_plane: ControlPlane) -> list[dict[str, Any]]:
    """manifests/ applied without its webhook configuration (which points at a Service)."""
    docs = [d for d in rendered(MANIFESTS) if d["kind"] != "ValidatingWebhookConfiguration"]
    control_plane.kubectl("apply", "-f", str(NAMESPACE_FILE), check=True)
    control_plane.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(docs), check=True)
    assert_no_shipped_webhook_configuration(control_plane)
    return docs


def service_account_token(plane: ControlPlane, name: str) -> str:
    core = k8s.CoreV1Api(api_client(plane))
    request = {"spec": {"expirationSeconds": 3600}}
    token: str = core.create_namespaced_service_account_token(name, NAMESPACE, request).status.token
    return token


@pytest.fixture(scope="module")
def writer_kubeconfig(control_plane: ControlPlane, installed: list[dict[str, Any]]) -> pathlib.Path:
    return control_plane.write_kubeconfig(
        "status-writer-sa", token=service_account_token(control_plane, WRITER)
    )


def granted(docs: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """(apiGroup, resource[/subresource], verb) of every rule bound to the writer."""
    return {
        (group, resource, verb)
        for doc in docs
        if doc["kind"] in {"ClusterRole", "Role"} and doc["metadata"]["name"].startswith(WRITER)
        for rule in doc["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def audited_requests(plane: ControlPlane, offset: int, user: str) -> list[dict[str, Any]]:
    with plane.audit_log.open("rb") as log:
        log.seek(offset)
        events = [json.loads(line) for line in log.read().splitlines()]
    return [e for e in events if e["user"]["username"] == user]


def lease(plane: ControlPlane) -> dict[str, Any]:
    api = k8s.CustomObjectsApi(api_client(plane))
    found: dict[str, Any] = api.get_namespaced_custom_object(
        "coordination.k8s.io", "v1", NAMESPACE, "leases", WRITER
    )
    return found


def condition(plane: ControlPlane, namespace: str, name: str) -> dict[str, Any] | None:
    api = k8s.CustomObjectsApi(api_client(plane))
    obj = api.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
    for entry in obj.get("status", {}).get("conditions", []):
        if entry["type"] == "Validated":
            return dict(entry)
    return None


def held(plane: ControlPlane, namespace: str, name: str) -> list[str]:
    api = k8s.CustomObjectsApi(api_client(plane))
    obj = api.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
    return list(obj["metadata"].get("finalizers") or [])


def events_about(plane: ControlPlane, namespace: str, name: str) -> list[tuple[str, str]]:
    core = k8s.CoreV1Api(api_client(plane))
    items = core.list_namespaced_event(namespace).items
    return [(e.type, e.reason) for e in items if e.involved_object.name == name]


@contextlib.contextmanager
def status_writer(kubeconfig: pathlib.Path, log: pathlib.Path) -> Iterator[subprocess.Popen[bytes]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
    env["POD_NAME"] = "writer-under-test"
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [
                str(SCRIPT),
                "status-writer",
                "--kubeconfig",
                str(kubeconfig),
                "--lease-namespace",
                NAMESPACE,
                "--metrics-port",
                "0",
                "--metrics-host",
                "127.0.0.1",
                "--retry-period-seconds",
                "1",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)


def test_the_status_writer_does_its_whole_job_with_its_own_service_account_and_no_more(
    control_plane: ControlPlane,
    installed: list[dict[str, Any]],
    writer_kubeconfig: pathlib.Path,
    tmp_path: pathlib.Path,
) -> None:
    # An invalid store can only be stored under a CRD without the CEL rules (as before
    # the rules shipped); the writer's job is to flag exactly such objects.
    install_crd(control_plane, platform_today_crd())
    stack = contextlib.ExitStack()
    try:
        # In-use protection: the writer lists and watches AgentDeployments, and holds
        # its finalizer on a store in use (an SSA patch of feedbackstores).
        stack.enter_context(agent_crd_installed(control_plane))
        namespace = new_namespace(control_plane, "rbac")
        api = k8s.CustomObjectsApi(api_client(control_plane))
        for name, spec in (("valid", VALID), ("invalid", INVALID)):
            api.create_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, feedbackstore(name, spec)
            )
        control_plane.kubectl(
            "delete", "lease", WRITER, "-n", NAMESPACE, "--ignore-not-found", check=True
        )
        offset = control_plane.audit_log.stat().st_size
        with status_writer(writer_kubeconfig, tmp_path / "writer.log") as process:
            eventually(
                lambda: (
                    (condition(control_plane, namespace, "valid") or {}).get("status") == "True"
                ),
                what="Validated=True on the valid store",
            )
            eventually(
                lambda: (
                    (condition(control_plane, namespace, "invalid") or {}).get("status") == "False"
                ),
                what="Validated=False on the invalid store",
            )
            holder = lease(control_plane)["spec"]["holderIdentity"]
            assert holder.startswith("writer-under-test_")
            eventually(
                lambda: (
                    ("Warning", "InvalidSpec") in events_about(control_plane, namespace, "invalid")
                ),
                what="Warning InvalidSpec Event",
            )
            fixed = {"spec": {"external": None}}  # a merge patch: null removes the channels
            api.patch_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "invalid", fixed)
            eventually(
                lambda: (
                    ("Normal", "SpecCoherent") in events_about(control_plane, namespace, "invalid")
                ),
                what="Normal SpecCoherent Event",
            )
            agents = Agents(control_plane, namespace)
            agents.create("agent", "valid")
            eventually(
                lambda: FINALIZER in held(control_plane, namespace, "valid"),
                what="in-use finalizer added",
            )
            agents.delete("agent")
            eventually(
                lambda: held(control_plane, namespace, "valid") == [],
                what="in-use finalizer removed",
            )
            # Broken again the same way: a new verdict, so an Event of its own (events create).
            broken = {"spec": {"external": INVALID["external"]}}
            api.patch_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "invalid", broken)
            core = k8s.CoreV1Api(api_client(control_plane))
            eventually(
                lambda: (
                    [
                        e.count
                        for e in core.list_namespaced_event(namespace).items
                        if e.reason == "InvalidSpec"
                    ]
                    == [1, 1]
                ),
                what="a second InvalidSpec Event",
            )
            # An invalid inline declaration (spec.feedback) is told by an Event on the agent, in
            # the agent's namespace: the same `events create`; the agent is only listed.
            inline = {
                "apiVersion": f"{AGENT_GROUP}/v1beta1",
                "kind": "AgentDeployment",
                "metadata": {"name": "inline"},
                "spec": {"feedback": INVALID},
            }
            api.create_namespaced_custom_object(
                AGENT_GROUP, "v1beta1", namespace, AGENT_PLURAL, inline
            )
            eventually(
                lambda: (
                    ("Warning", "InvalidSpec") in events_about(control_plane, namespace, "inline")
                ),
                what="an Event on the agent",
            )
            process.send_signal(signal.SIGTERM)
            assert process.wait(30) == 0, (tmp_path / "writer.log").read_text()[-3000:]
        assert lease(control_plane)["spec"].get("holderIdentity", "") == "", "Lease not released"
    finally:
        stack.close()
        install_crd(control_plane, shipped_crd())

    requests = audited_requests(control_plane, offset, WRITER_USER)
    refused = [
        (r["verb"], r["requestURI"])
        for r in requests
        if r["annotations"].get("authorization.k8s.io/decision") != "allow"
    ]
    assert refused == [], "the RBAC in manifests/ is too narrow for the writer"
    used = set()
    for r in requests:
        obj = r["objectRef"]
        resource = obj["resource"] + (f"/{obj['subresource']}" if "subresource" in obj else "")
        used.add((obj.get("apiGroup", ""), resource, r["verb"]))
    assert used == granted(installed), "every permission granted is used, and nothing else"
    assert {r["userAgent"].split("/")[0] for r in requests} == {WRITER}


CAN_I = [
    # (who, verb, resource, flags, allowed)
    (WRITER_USER, "list", FS, ALL_NS, True),
    (WRITER_USER, "watch", FS, ALL_NS, True),
    (WRITER_USER, "patch", FS, STATUS, True),
    (WRITER_USER, "patch", FS, ANY_NS, True),  # its in-use finalizer, by server-side apply
    (WRITER_USER, "list", AGENTS, ALL_NS, True),
    (WRITER_USER, "watch", AGENTS, ALL_NS, True),
    (WRITER_USER, "get", AGENTS, ANY_NS, False),
    (WRITER_USER, "patch", AGENTS, ANY_NS, False),
    (WRITER_USER, "delete", AGENTS, ANY_NS, False),
    (WRITER_USER, "create", "events", ANY_NS, True),
    (WRITER_USER, "get", LEASE, INSTALL_NS, True),
    (WRITER_USER, "update", LEASE, INSTALL_NS, True),
    (WRITER_USER, "create", LEASES, INSTALL_NS, True),
    (WRITER_USER, "get", FS, ANY_NS, False),
    (WRITER_USER, "update", FS, ANY_NS, False),
    (WRITER_USER, "create", FS, ANY_NS, False),
    (WRITER_USER, "delete", FS, ANY_NS, False),
    (WRITER_USER, "update", FS, STATUS, False),
    (WRITER_USER, "get", FS, STATUS, False),
    (WRITER_USER, "patch", "events", ANY_NS, False),
    (WRITER_USER, "list", "events", ANY_NS, False),
    (WRITER_USER, "get", "secrets", INSTALL_NS, False),
    (WRITER_USER, "list", "secrets", ALL_NS, False),
    (WRITER_USER, "get", "configmaps", INSTALL_NS, False),
    (WRITER_USER, "list", "pods", INSTALL_NS, False),
    (WRITER_USER, "create", "serviceaccounts/token", INSTALL_NS, False),
    (WRITER_USER, "get", OTHER_LEASE, INSTALL_NS, False),
    (WRITER_USER, "update", OTHER_LEASE, INSTALL_NS, False),
    (WRITER_USER, "delete", LEASE, INSTALL_NS, False),
    (WRITER_USER, "list", LEASES, INSTALL_NS, False),
    (WRITER_USER, "create", LEASES, ["-n", "default"], False),
    (WRITER_USER, "get", LEASE, ["-n", "default"], False),
    (WRITER_USER, "update", "customresourcedefinitions.apiextensions.k8s.io", [], False),
    (WRITER_USER, "delete", "validatingwebhookconfigurations", [], False),
    (WRITER_USER, "impersonate", "serviceaccounts", INSTALL_NS, False),
    (WRITER_USER, "bind", "clusterroles.rbac.authorization.k8s.io", [], False),
    (WEBHOOK_USER, "list", FS, ALL_NS, False),
    (WEBHOOK_USER, "get", "secrets", INSTALL_NS, False),
    (WEBHOOK_USER, "create", "events", INSTALL_NS, False),
    (WEBHOOK_USER, "get", LEASE, INSTALL_NS, False),
]


@pytest.mark.parametrize(
    ("user", "verb", "resource", "flags", "allowed"),
    [
        pytest.param(
            *case,
            id=f"{case[0].rsplit(':', 1)[1]} {case[1]} {case[2]} "
            f"{' '.join(case[3])} -> {'yes' if case[4] else 'no'}",
        )
        for case in CAN_I
    ],
)
def test_auth_can_i(
    control_plane: ControlPlane,
    installed: list[dict[str, Any]],
    user: str,
    verb: str,
    resource: str,
    flags: list[str],
    allowed: bool,
) -> None:
    with contextlib.ExitStack() as stack:
        if resource == AGENTS:  # kubectl resolves the resource by discovery: served for it
            stack.enter_context(agent_crd_installed(control_plane))
        result = control_plane.kubectl("auth", "can-i", verb, resource, *flags, f"--as={user}")
    assert (result.returncode, result.stdout.strip()) == ((0, "yes") if allowed else (1, "no"))


def forbidden(verb: str, resource: str, group: str, namespace: str, what: str) -> str:
    return (
        f'Error from server (Forbidden): {what} is forbidden: User "{WRITER_USER}" cannot '
        f'{verb} resource "{resource}" in API group "{group}" in the namespace "{namespace}"'
    )


def test_its_token_is_refused_everything_outside_its_role(
    control_plane: ControlPlane, writer_kubeconfig: pathlib.Path
) -> None:
    namespace = new_namespace(control_plane, "rbac")
    api = k8s.CustomObjectsApi(api_client(control_plane))
    api.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, feedbackstore("store", VALID)
    )

    def as_writer(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return control_plane.kubectl(*args, stdin=stdin, kubeconfig=writer_kubeconfig)

    who = as_writer("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
    assert who.stdout == WRITER_USER

    # Its own view works: a list across namespaces.
    listed = as_writer("get", "feedbackstores", "-A", "-o", "name")
    assert listed.returncode == 0, listed.stderr
    assert "feedbackstore.agents.ctxmesh.ai/store" in listed.stdout.splitlines()

    # Writing spec: RBAC cannot narrow `patch` to metadata.finalizers, so since in-use
    # protection (its finalizer by server-side apply) this token may patch a store; shown
    # by a server dry run. What its own applies hold is checked in test_inuse_real.py
    # (managedFields: our finalizer entry and nothing else).
    changed = feedbackstore("store", {**VALID, "mode": "Monitor"})
    spec = as_writer(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--dry-run=server",
        "-n",
        namespace,
        "-f",
        "-",
        stdin=yaml.safe_dump(changed),
    )
    assert spec.returncode == 0, spec.stderr
    created = as_writer(
        "create", "-n", namespace, "-f", "-", stdin=yaml.safe_dump(feedbackstore("other", VALID))
    )
    assert created.returncode == 1
    assert created.stderr.strip() == (
        'Error from server (Forbidden): error when creating "STDIN": '
        + forbidden(
            "create", "feedbackstores", GROUP, namespace, "feedbackstores.agents.ctxmesh.ai"
        ).removeprefix("Error from server (Forbidden): ")
    )
    got = as_writer("get", "feedbackstore", "store", "-n", namespace)
    assert got.stderr.strip() == forbidden(
        "get", "feedbackstores", GROUP, namespace, 'feedbackstores.agents.ctxmesh.ai "store"'
    )

    secrets = as_writer("get", "secrets", "-n", NAMESPACE)
    assert secrets.returncode == 1
    assert secrets.stderr.strip() == forbidden("list", "secrets", "", NAMESPACE, "secrets")
    secret = as_writer("get", "secret", "feedbackstore-webhook-tls", "-n", NAMESPACE)
    assert secret.stderr.strip() == forbidden(
        "get", "secrets", "", NAMESPACE, 'secrets "feedbackstore-webhook-tls"'
    )
    events = as_writer("get", "events", "-n", namespace)
    assert events.stderr.strip() == forbidden("list", "events", "", namespace, "events")
    removed = as_writer("delete", "lease", WRITER, "-n", NAMESPACE)
    assert removed.stderr.strip() == forbidden(
        "delete",
        "leases",
        "coordination.k8s.io",
        NAMESPACE,
        f'leases.coordination.k8s.io "{WRITER}"',
    )
    token = as_writer("create", "token", WRITER, "-n", NAMESPACE)
    assert token.stderr.strip() == (
        f'error: failed to create token: serviceaccounts "{WRITER}" is forbidden: User '
        f'"{WRITER_USER}" cannot create resource "serviceaccounts/token" in API group "" in the '
        f'namespace "{NAMESPACE}"'
    )
    assert (
        api.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "store")["spec"].get(
            "mode", "Enforce"
        )
        == "Enforce"
    )


def test_a_writer_without_its_rbac_logs_the_permission_it_lacks_and_keeps_trying(
    control_plane: ControlPlane, installed: list[dict[str, Any]], tmp_path: pathlib.Path
) -> None:
    """Its ServiceAccount bound to nothing: the log says, in kube-apiserver's words, which
    verb on which resource is refused (what the admin must grant), and the writer retries
    instead of exiting."""
    name = "writer-without-rbac"
    core = k8s.CoreV1Api(api_client(control_plane))
    core.create_namespaced_service_account(NAMESPACE, {"metadata": {"name": name}})
    kubeconfig = control_plane.write_kubeconfig(
        name, token=service_account_token(control_plane, name)
    )
    user = f"system:serviceaccount:{NAMESPACE}:{name}"
    log = tmp_path / "writer.log"

    def lines() -> list[dict[str, Any]]:
        return [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]

    def said(msg: str) -> list[dict[str, Any]]:
        return [entry for entry in lines() if entry["msg"] == msg]

    with status_writer(kubeconfig, log) as process:
        eventually(
            lambda: said("list/watch failed") and said("lease request failed"),
            what="both refusals logged",
        )
        assert process.poll() is None, "a refusal is retried, never a crash"
    listed, leased = said("list/watch failed")[0], said("lease request failed")[0]
    assert (listed["status"], listed["error"]) == (
        403,
        (
            f'Forbidden: {FS} is forbidden: User "{user}" cannot list resource "feedbackstores" '
            'in API group "agents.ctxmesh.ai" at the cluster scope'
        ),
    )
    assert (leased["status"], leased["error"]) == (
        403,
        (
            f'Forbidden: {LEASES} "{WRITER}" is forbidden: User "{user}" cannot get resource '
            f'"leases" in API group "coordination.k8s.io" in the namespace "{NAMESPACE}"'
        ),
    )
    assert not [entry for entry in lines() if "exception" in entry], "no traceback"
