"""The names in webhook/install.py are the names the shipped manifests give their objects.

Read from the YAML under manifests/ itself (what `kubectl apply -k` sends), so a
rename on either side fails here rather than leaving `doctor` looking for an
object that is not there, `certs` issuing a certificate for another Service, or
the status writer asking for a Lease its Role does not grant.
"""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
import yaml

from webhook import install
from webhook.status.writer_settings import WriterSettings

MANIFESTS = pathlib.Path(__file__).resolve().parents[2] / "manifests"
# The kustomizations the install paths apply: the base with both components, cert-manager's
# path, and the monitoring component.
_ENTRY_POINTS = (MANIFESTS, MANIFESTS / "cert-manager", MANIFESTS / "monitoring")


def _resources(directory: pathlib.Path, seen: set[pathlib.Path]) -> list[pathlib.Path]:
    """The files a kustomization lists as `resources`, through the directories it lists."""
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    files = []
    for resource in kustomization.get("resources", ()):
        path = (directory / resource).resolve()
        if path in seen:
            continue
        seen.add(path)
        files += _resources(path, seen) if path.is_dir() else [path]
    return files


def _documents() -> list[dict[str, Any]]:
    seen: set[pathlib.Path] = set()
    files = [path for top in _ENTRY_POINTS for path in _resources(top, seen)]
    return [doc for path in files for doc in yaml.safe_load_all(path.read_text()) if doc]


DOCUMENTS = _documents()


def shipped(kind: str, name: str) -> dict[str, Any]:
    matches = [d for d in DOCUMENTS if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(matches) == 1, f"manifests/ ship no single {kind} {name}"
    return matches[0]


def _container(deployment: dict[str, Any]) -> dict[str, Any]:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def _port(container: dict[str, Any], name: str) -> int:
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    return ports[name]


def test_the_namespace_is_the_one_every_namespaced_object_is_in() -> None:
    shipped("Namespace", install.NAMESPACE)
    namespaces = {d["metadata"].get("namespace") for d in DOCUMENTS} - {None}
    assert namespaces == {install.NAMESPACE}


@pytest.mark.parametrize(
    "component", [install.WEBHOOK, install.STATUS_WRITER], ids=["the webhook", "the status writer"]
)
def test_each_component_is_named_and_labelled_as_shipped(component: install.Component) -> None:
    deployment = shipped("Deployment", component.name)
    assert deployment["metadata"]["labels"] == component.labels
    assert deployment["spec"]["template"]["metadata"]["labels"] == component.labels
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == component.name
    shipped("ServiceAccount", component.name)
    budget = shipped("PodDisruptionBudget", component.name)
    assert budget["spec"]["selector"]["matchLabels"].items() <= component.labels.items()
    key, _, value = component.selector.partition("=")
    assert component.labels[key] == value


def test_the_service_kube_apiserver_calls_forwards_to_the_webhooks_port() -> None:
    service = shipped("Service", install.SERVICE)
    assert service["spec"]["selector"].items() <= install.WEBHOOK.labels.items()
    (port,) = service["spec"]["ports"]
    assert port["port"] == install.SERVICE_PORT
    container = _container(shipped("Deployment", install.WEBHOOK.name))
    assert _port(container, port["targetPort"]) == install.PORT
    args = container.get("args", [])
    if "--port" in args:
        assert args[args.index("--port") + 1] == str(install.PORT)


def test_the_registration_calls_that_service_from_each_entry() -> None:
    registration = shipped("ValidatingWebhookConfiguration", install.WEBHOOK_CONFIGURATION)
    entries = registration["webhooks"]
    assert tuple(entry["name"] for entry in entries) == install.ENTRIES
    for entry in entries:
        service = entry["clientConfig"]["service"]
        assert (service["namespace"], service["name"], service.get("port", 443)) == (
            install.NAMESPACE,
            install.SERVICE,
            install.SERVICE_PORT,
        )


def test_the_secret_is_the_one_mounted_and_the_one_cert_manager_writes() -> None:
    pod = shipped("Deployment", install.WEBHOOK.name)["spec"]["template"]["spec"]
    secrets = [v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v]
    assert secrets == [install.SECRET]
    certificate = shipped("Certificate", install.SECRET)
    assert certificate["spec"]["secretName"] == install.SECRET
    assert f"{install.SERVICE}.{install.NAMESPACE}.svc" in certificate["spec"]["dnsNames"]


def test_the_lease_is_the_one_the_status_writers_role_grants() -> None:
    roles = [d for d in DOCUMENTS if d["kind"] == "Role"]
    granted = [
        name
        for role in roles
        for rule in role["rules"]
        if "leases" in rule.get("resources", ())
        for name in rule.get("resourceNames", ())
    ]
    assert granted == [install.LEASE]
    assert WriterSettings().lease_name == install.LEASE


def test_the_status_writers_metrics_port_is_the_one_shipped() -> None:
    container = _container(shipped("Deployment", install.STATUS_WRITER.name))
    assert _port(container, "metrics") == install.METRICS_PORT
    assert WriterSettings().metrics_port == install.METRICS_PORT
