"""The install's safety properties, asserted one by one on the rendered manifests.

Each test names one thing a cluster admin relies on: the webhook
configuration cannot block its own repair or the status writer, both
Deployments run hardened, RBAC grants only what each component uses.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.manifest_render import MANIFESTS, NAMESPACE, find, kustomize
from webhook import version

WEBHOOK = "feedbackstore-webhook"
WRITER = "feedbackstore-status-writer"


@pytest.fixture(scope="module")
def docs() -> list[dict[str, Any]]:
    return kustomize(MANIFESTS)


@pytest.fixture(scope="module")
def hook(docs: list[dict[str, Any]]) -> dict[str, Any]:
    configuration = find(docs, "ValidatingWebhookConfiguration", WEBHOOK)
    webhook, _, _ = configuration["webhooks"]
    result: dict[str, Any] = webhook
    return result


@pytest.fixture(scope="module")
def delete_hook(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """The second entry: warnings on DELETE only (who still uses the store)."""
    _, webhook, _ = find(docs, "ValidatingWebhookConfiguration", WEBHOOK)["webhooks"]
    result: dict[str, Any] = webhook
    return result


@pytest.fixture(scope="module")
def agent_hook(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """The third entry: the inline form, AgentDeployment.spec.feedback."""
    _, _, webhook = find(docs, "ValidatingWebhookConfiguration", WEBHOOK)["webhooks"]
    result: dict[str, Any] = webhook
    return result


def test_the_agent_entry_judges_writes_of_both_versions_and_fails_open(
    hook: dict[str, Any], agent_hook: dict[str, Any]
) -> None:
    """An agent's deploy must never wait on this webhook's outage: Ignore, a short timeout, and
    never the status subresource (the platform writes it)."""
    assert agent_hook["name"] == "validate.agentdeployments.agents.ctxmesh.ai"
    assert agent_hook["failurePolicy"] == "Ignore"
    assert agent_hook["rules"] == [
        {
            "apiGroups": ["agents.ctxmesh.ai"],
            "apiVersions": ["v1alpha1", "v1beta1"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["agentdeployments"],
            "scope": "Namespaced",
        }
    ]
    assert agent_hook["timeoutSeconds"] <= hook["timeoutSeconds"]
    assert [c["name"] for c in agent_hook["matchConditions"]] == [
        "feedback-set",
        "feedback-changed",
        "not-being-deleted",
    ]
    same = (
        "admissionReviewVersions",
        "sideEffects",
        "matchPolicy",
        "clientConfig",
        "namespaceSelector",
    )
    assert {k: agent_hook[k] for k in same} == {k: hook[k] for k in same}


def test_the_delete_entry_only_warns_and_never_blocks(
    hook: dict[str, Any], delete_hook: dict[str, Any]
) -> None:
    assert delete_hook["name"] == "warn-delete.feedbackstores.agents.ctxmesh.ai"
    assert delete_hook["failurePolicy"] == "Ignore"
    assert delete_hook["rules"] == [
        {
            "apiGroups": ["agents.ctxmesh.ai"],
            "apiVersions": ["v1beta1"],
            "operations": ["DELETE"],
            "resources": ["feedbackstores"],
            "scope": "Namespaced",
        }
    ]
    assert delete_hook["timeoutSeconds"] <= hook["timeoutSeconds"]
    same = (
        "admissionReviewVersions",
        "sideEffects",
        "matchPolicy",
        "clientConfig",
        "namespaceSelector",
    )
    assert {k: delete_hook[k] for k in same} == {k: hook[k] for k in same}


def pod(docs: list[dict[str, Any]], name: str) -> dict[str, Any]:
    spec: dict[str, Any] = find(docs, "Deployment", name)["spec"]["template"]["spec"]
    return spec


def container(docs: list[dict[str, Any]], name: str) -> dict[str, Any]:
    (only,) = pod(docs, name)["containers"]
    result: dict[str, Any] = only
    return result


# ---------------------------------------------------------------- webhook configuration


def test_the_webhook_has_a_fully_qualified_name(hook: dict[str, Any]) -> None:
    assert hook["name"] == "validate.feedbackstores.agents.ctxmesh.ai"


def test_the_webhook_fails_closed(hook: dict[str, Any]) -> None:
    assert hook["failurePolicy"] == "Fail"


def test_the_webhook_declares_no_side_effects(hook: dict[str, Any]) -> None:
    assert hook["sideEffects"] == "None"


def test_the_webhook_speaks_admission_v1_only(hook: dict[str, Any]) -> None:
    assert hook["admissionReviewVersions"] == ["v1"]


def test_the_webhook_times_out_after_five_seconds(hook: dict[str, Any]) -> None:
    assert hook["timeoutSeconds"] == 5


def test_the_webhook_matches_equivalent_versions(hook: dict[str, Any]) -> None:
    assert hook["matchPolicy"] == "Equivalent"


def test_the_webhook_matches_create_and_update_of_feedbackstores_only(
    hook: dict[str, Any],
) -> None:
    assert hook["rules"] == [
        {
            "apiGroups": ["agents.ctxmesh.ai"],
            "apiVersions": ["v1beta1"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["feedbackstores"],
            "scope": "Namespaced",
        }
    ]


def test_the_webhook_never_matches_the_status_subresource_or_delete(
    hook: dict[str, Any],
) -> None:
    (rule,) = hook["rules"]
    assert all("/" not in resource and "*" not in resource for resource in rule["resources"])
    assert "DELETE" not in rule["operations"]
    assert "*" not in rule["operations"]


def test_the_webhook_leaves_out_kube_system_and_its_own_namespace(hook: dict[str, Any]) -> None:
    assert hook["namespaceSelector"] == {
        "matchExpressions": [
            {
                "key": "kubernetes.io/metadata.name",
                "operator": "NotIn",
                "values": ["kube-system", NAMESPACE],
            }
        ]
    }


def test_the_webhook_calls_the_service_at_validate(hook: dict[str, Any]) -> None:
    assert hook["clientConfig"] == {
        "service": {"namespace": NAMESPACE, "name": WEBHOOK, "path": "/validate", "port": 443}
    }


def test_the_service_sends_443_to_the_webhook_port(docs: list[dict[str, Any]]) -> None:
    service = find(docs, "Service", WEBHOOK)
    assert service["metadata"]["namespace"] == NAMESPACE
    (port,) = service["spec"]["ports"]
    assert (port["port"], port["targetPort"], port["protocol"]) == (443, "https", "TCP")
    (container_port,) = container(docs, WEBHOOK)["ports"]
    assert (container_port["name"], container_port["containerPort"]) == ("https", 8443)
    deployment = find(docs, "Deployment", WEBHOOK)
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]


# ---------------------------------------------------------------- webhook Deployment


def test_the_webhook_runs_two_replicas_and_never_drops_below_them_while_rolling(
    docs: list[dict[str, Any]],
) -> None:
    deployment = find(docs, "Deployment", WEBHOOK)
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0


def test_the_webhook_replicas_spread_across_nodes(docs: list[dict[str, Any]]) -> None:
    spec = pod(docs, WEBHOOK)
    selector = find(docs, "Deployment", WEBHOOK)["spec"]["selector"]
    keys = {c["topologyKey"] for c in spec["topologySpreadConstraints"]}
    assert "kubernetes.io/hostname" in keys
    assert all(c["labelSelector"] == selector for c in spec["topologySpreadConstraints"])
    anti = spec["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert anti[0]["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"


def test_the_webhook_serves_with_the_spec_arguments(docs: list[dict[str, Any]]) -> None:
    assert container(docs, WEBHOOK)["args"] == [
        "serve",
        "--port",
        "8443",
        "--tls-cert-file",
        "/tls/tls.crt",
        "--tls-private-key-file",
        "/tls/tls.key",
        "--shutdown-delay",
        "7",
    ]


def test_no_hook_or_probe_execs_a_command_the_image_cannot_run(docs: list[dict[str, Any]]) -> None:
    # The runtime image has no shell, no sleep and no coreutils: an exec hook or probe
    # would fail at every pod's shutdown or probe.
    execs = [
        (doc["metadata"]["name"], path)
        for doc in docs
        if doc["kind"] in ("Deployment", "Job")
        for spec in [doc["spec"]["template"]["spec"]]
        for one in spec.get("containers", []) + spec.get("initContainers", [])
        for path, handler in [
            *((f"lifecycle.{k}", v) for k, v in one.get("lifecycle", {}).items()),
            *((k, one[k]) for k in ("startupProbe", "readinessProbe", "livenessProbe") if k in one),
        ]
        if "exec" in handler
    ]
    assert execs == []


@pytest.mark.parametrize(
    ("probe", "path"),
    [("readinessProbe", "/readyz"), ("livenessProbe", "/healthz"), ("startupProbe", "/healthz")],
)
def test_the_webhook_probes_over_https_on_the_tls_port(
    docs: list[dict[str, Any]], probe: str, path: str
) -> None:
    get = container(docs, WEBHOOK)[probe]["httpGet"]
    assert get == {"path": path, "port": "https", "scheme": "HTTPS"}


def test_the_webhook_mounts_the_certificate_secret_read_only(docs: list[dict[str, Any]]) -> None:
    mounts = {m["name"]: m for m in container(docs, WEBHOOK)["volumeMounts"]}
    assert mounts["tls"] == {"name": "tls", "mountPath": "/tls", "readOnly": True}
    volumes = {v["name"]: v for v in pod(docs, WEBHOOK)["volumes"]}
    assert volumes["tls"]["secret"]["secretName"] == "feedbackstore-webhook-tls"
    assert volumes["tls"]["secret"]["defaultMode"] == 0o440


def test_the_webhook_gets_no_service_account_token(docs: list[dict[str, Any]]) -> None:
    account = find(docs, "ServiceAccount", WEBHOOK)
    assert account["automountServiceAccountToken"] is False
    spec = pod(docs, WEBHOOK)
    assert spec["serviceAccountName"] == WEBHOOK
    assert spec["automountServiceAccountToken"] is False


def test_nothing_grants_the_webhook_account_any_permission(docs: list[dict[str, Any]]) -> None:
    for binding in docs:
        if binding["kind"] in {"RoleBinding", "ClusterRoleBinding"}:
            assert all(s["name"] != WEBHOOK for s in binding["subjects"]), binding


# ---------------------------------------------------------------- both Deployments

BOTH = pytest.mark.parametrize("name", [WEBHOOK, WRITER])


@BOTH
def test_the_pod_runs_as_a_numeric_non_root_user(docs: list[dict[str, Any]], name: str) -> None:
    security = pod(docs, name)["securityContext"]
    assert security["runAsNonRoot"] is True
    assert security["runAsUser"] == 65532
    assert security["runAsGroup"] == 65532


@BOTH
def test_the_pod_uses_the_runtime_default_seccomp_profile(
    docs: list[dict[str, Any]], name: str
) -> None:
    assert pod(docs, name)["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}


@BOTH
def test_the_container_cannot_escalate_privileges(docs: list[dict[str, Any]], name: str) -> None:
    security = container(docs, name)["securityContext"]
    assert security["allowPrivilegeEscalation"] is False
    assert security["privileged"] is False


@BOTH
def test_the_container_drops_all_capabilities(docs: list[dict[str, Any]], name: str) -> None:
    assert container(docs, name)["securityContext"]["capabilities"] == {"drop": ["ALL"]}


@BOTH
def test_the_container_root_filesystem_is_read_only(docs: list[dict[str, Any]], name: str) -> None:
    assert container(docs, name)["securityContext"]["readOnlyRootFilesystem"] is True


@BOTH
def test_the_container_runs_as_non_root_itself(docs: list[dict[str, Any]], name: str) -> None:
    security = container(docs, name)["securityContext"]
    assert security["runAsNonRoot"] is True
    assert security["runAsUser"] == 65532
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}


@BOTH
def test_the_container_has_cpu_and_memory_requests_and_limits(
    docs: list[dict[str, Any]], name: str
) -> None:
    resources = container(docs, name)["resources"]
    for kind in ("requests", "limits"):
        assert set(resources[kind]) == {"cpu", "memory"}, kind


@BOTH
def test_the_deployment_runs_at_least_two_replicas(docs: list[dict[str, Any]], name: str) -> None:
    assert find(docs, "Deployment", name)["spec"]["replicas"] >= 2


@BOTH
def test_a_disruption_budget_keeps_one_replica_through_drains(
    docs: list[dict[str, Any]], name: str
) -> None:
    budget = find(docs, "PodDisruptionBudget", name)["spec"]
    deployment = find(docs, "Deployment", name)["spec"]
    assert budget["selector"] == deployment["selector"]
    allowed_down = budget.get(
        "maxUnavailable", deployment["replicas"] - budget.get("minAvailable", 0)
    )
    assert 1 <= allowed_down < deployment["replicas"]


@BOTH
def test_the_image_is_the_one_placeholder_kustomize_can_override(
    docs: list[dict[str, Any]], name: str
) -> None:
    assert container(docs, name)["image"] == f"ghcr.io/ctxmesh/feedbackstore-webhook:{version()}"


@BOTH
def test_everything_lives_in_the_install_namespace(docs: list[dict[str, Any]], name: str) -> None:
    assert find(docs, "Deployment", name)["metadata"]["namespace"] == NAMESPACE


def test_the_install_namespace_enforces_the_restricted_pod_security_standard(
    docs: list[dict[str, Any]],
) -> None:
    labels = find(docs, "Namespace", NAMESPACE)["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"


# ---------------------------------------------------------------- status writer


def test_the_writer_learns_its_pod_name_and_namespace_from_the_downward_api(
    docs: list[dict[str, Any]],
) -> None:
    env = {
        e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in container(docs, WRITER)["env"]
    }
    assert env == {"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"}


def test_the_writer_holds_its_lease_in_its_own_namespace(docs: list[dict[str, Any]]) -> None:
    assert container(docs, WRITER)["args"] == [
        "status-writer",
        "--lease-namespace",
        "$(POD_NAMESPACE)",
    ]


def test_the_writer_probes_its_health_endpoint_on_its_metrics_port(
    docs: list[dict[str, Any]],
) -> None:
    writer = container(docs, WRITER)
    (port,) = writer["ports"]
    assert port["name"] == "metrics"
    assert writer["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert writer["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}


@pytest.mark.parametrize("name", [WEBHOOK, WRITER])
def test_the_container_args_are_accepted_by_the_real_cli_and_match_its_ports(
    docs: list[dict[str, Any]], name: str
) -> None:
    from webhook.cli.main import build_parser

    spec = container(docs, name)
    env = {"$(POD_NAMESPACE)": NAMESPACE}
    args = build_parser().parse_args([env.get(arg, arg) for arg in spec["args"]])
    (port,) = spec["ports"]
    if name == WEBHOOK:
        assert args.port == port["containerPort"]
        mount = next(m["mountPath"] for m in spec["volumeMounts"] if m["name"] == "tls")
        assert str(args.tls_cert_file) == f"{mount}/tls.crt"
        assert str(args.tls_private_key_file) == f"{mount}/tls.key"
    else:
        assert args.metrics_port == port["containerPort"]
        assert args.lease_namespace == NAMESPACE


def _rules(docs: list[dict[str, Any]], kind: str, name: str) -> set[tuple[str, str, str]]:
    role = find(docs, kind, name)
    return {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_the_writer_cluster_role_is_least_privilege(docs: list[dict[str, Any]]) -> None:
    assert _rules(docs, "ClusterRole", WRITER) == {
        ("agents.ctxmesh.ai", "feedbackstores", "list"),
        ("agents.ctxmesh.ai", "feedbackstores", "watch"),
        ("agents.ctxmesh.ai", "feedbackstores/status", "patch"),
        # in-use protection: its finalizer by server-side apply; who references which store
        ("agents.ctxmesh.ai", "feedbackstores", "patch"),
        ("agents.ctxmesh.ai", "agentdeployments", "list"),
        ("agents.ctxmesh.ai", "agentdeployments", "watch"),
        ("", "events", "create"),
    }


def test_the_writer_may_touch_leases_only_in_its_namespace(docs: list[dict[str, Any]]) -> None:
    name = f"{WRITER}-leader-election"
    assert find(docs, "Role", name)["metadata"]["namespace"] == NAMESPACE
    assert _rules(docs, "Role", name) == {
        ("coordination.k8s.io", "leases", "get"),
        ("coordination.k8s.io", "leases", "create"),
        ("coordination.k8s.io", "leases", "update"),
    }
    from webhook.cli.main import build_parser

    lease = build_parser().parse_args(["status-writer"]).lease_name
    for rule in find(docs, "Role", name)["rules"]:
        if set(rule["verbs"]) & {"get", "update"}:
            assert rule["resourceNames"] == [lease]
    binding = find(docs, "RoleBinding", name)
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": name,
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": WRITER, "namespace": NAMESPACE}
    ]


def test_the_writer_cluster_role_is_bound_to_the_writer_only(docs: list[dict[str, Any]]) -> None:
    binding = find(docs, "ClusterRoleBinding", WRITER)
    assert binding["roleRef"]["name"] == WRITER
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": WRITER, "namespace": NAMESPACE}
    ]
    assert pod(docs, WRITER)["serviceAccountName"] == WRITER


def test_no_role_uses_wildcards_or_secrets(docs: list[dict[str, Any]]) -> None:
    for role in docs:
        if role["kind"] in {"Role", "ClusterRole"}:
            for group, resource, verb in _rules(docs, role["kind"], role["metadata"]["name"]):
                assert "*" not in (group, resource, verb)
                assert resource != "secrets"


# ---------------------------------------------------------------- cert-manager variant


@pytest.fixture(scope="module")
def cert_manager() -> list[dict[str, Any]]:
    return kustomize(MANIFESTS / "cert-manager")


def test_cert_manager_injects_the_serving_certificate_ca_into_the_webhook(
    cert_manager: list[dict[str, Any]],
) -> None:
    configuration = find(cert_manager, "ValidatingWebhookConfiguration", WEBHOOK)
    annotations = configuration["metadata"]["annotations"]
    assert annotations["cert-manager.io/inject-ca-from"] == f"{NAMESPACE}/feedbackstore-webhook-tls"
    assert "caBundle" not in configuration["webhooks"][0]["clientConfig"]


def test_cert_manager_keeps_every_webhook_setting_of_the_base(
    cert_manager: list[dict[str, Any]],
    hook: dict[str, Any],
    delete_hook: dict[str, Any],
    agent_hook: dict[str, Any],
) -> None:
    patched = find(cert_manager, "ValidatingWebhookConfiguration", WEBHOOK)["webhooks"]
    assert patched == [hook, delete_hook, agent_hook]


def test_cert_manager_chain_is_self_signed_then_ca_then_serving(
    cert_manager: list[dict[str, Any]],
) -> None:
    assert find(cert_manager, "Issuer", "feedbackstore-selfsigned")["spec"] == {"selfSigned": {}}
    ca = find(cert_manager, "Certificate", "feedbackstore-ca")["spec"]
    assert ca["isCA"] is True
    assert ca["issuerRef"] == {"kind": "Issuer", "name": "feedbackstore-selfsigned"}
    issuer = find(cert_manager, "Issuer", "feedbackstore-ca")["spec"]
    assert issuer == {"ca": {"secretName": ca["secretName"]}}


def test_cert_manager_serving_certificate_fits_the_service_and_the_deployment(
    cert_manager: list[dict[str, Any]],
) -> None:
    serving = find(cert_manager, "Certificate", "feedbackstore-webhook-tls")
    spec = serving["spec"]
    assert serving["metadata"]["namespace"] == NAMESPACE
    assert spec["issuerRef"] == {"kind": "Issuer", "name": "feedbackstore-ca"}
    assert spec["secretName"] == "feedbackstore-webhook-tls"
    assert spec["dnsNames"] == [
        WEBHOOK,
        f"{WEBHOOK}.{NAMESPACE}",
        f"{WEBHOOK}.{NAMESPACE}.svc",
        f"{WEBHOOK}.{NAMESPACE}.svc.cluster.local",
    ]
    assert spec["usages"] == ["digital signature", "server auth"]
    assert spec["privateKey"] == {"algorithm": "ECDSA", "size": 256, "rotationPolicy": "Always"}
    volumes = {v["name"]: v for v in pod(cert_manager, WEBHOOK)["volumes"]}
    assert volumes["tls"]["secret"]["secretName"] == spec["secretName"]
