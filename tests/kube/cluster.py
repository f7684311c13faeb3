"""What the `kube` tests do to the real server, written once.

- CRDs: the shipped one (`manifests/crd/`, with its CEL rules) or the platform's
  as it ships today (`fixtures/feedbackstores-platform-today.yaml`: the same
  schema, no CEL), swapped in by server-side apply and waited on until the
  server really serves that variant.
- Namespaces: one fresh namespace per test, labelled so that only webhooks
  registered by the tests match it (never the shipped registration).
- Webhooks: `feedbackstore-webhook serve` as a child process on 127.0.0.1 with
  a certificate for 127.0.0.1, registered by `url:` from the shipped
  ValidatingWebhookConfiguration with only the client config changed.
"""

from __future__ import annotations

import contextlib
import copy
import pathlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from tests.kube.controlplane import ControlPlane, free_port
from tests.support.servers import ConsoleServer
from tests.support.waiting import eventually as eventually  # the kube tests' import
from webhook.certs.issue import issue_bundle

REPO = pathlib.Path(__file__).resolve().parents[2]
SHIPPED_CRD = REPO / "manifests" / "crd" / "feedbackstores.agents.ctxmesh.ai.yaml"
PLATFORM_TODAY_CRD = (
    pathlib.Path(__file__).parent / "fixtures" / "feedbackstores-platform-today.yaml"
)
SHIPPED_WEBHOOK = REPO / "manifests" / "webhook" / "validatingwebhookconfiguration.yaml"
GROUP, VERSION, PLURAL = "agents.ctxmesh.ai", "v1beta1", "feedbackstores"
API_VERSION = f"{GROUP}/{VERSION}"
# Test namespaces carry this label; the tests' webhook registrations select on it.
TEST_LABEL = "feedbackstore-test/webhook"
# Where the CRD variant is probed: never matched by any test webhook.
PROBE_NAMESPACE = "default"


def api_client(plane: ControlPlane, kubeconfig: pathlib.Path | None = None) -> k8s.ApiClient:
    return k8s_config.new_client_from_config(config_file=str(kubeconfig or plane.kubeconfig))


def load_yaml(path: pathlib.Path) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(path.read_text())
    return document


def feedbackstore(name: str, spec: dict[str, Any] | None, **metadata: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "FeedbackStore",
        "metadata": {"name": name, **metadata},
    }
    if spec is not None:
        body["spec"] = spec
    return body


# -- CRDs ------------------------------------------------------------------

_NO_SOURCE = {"mode": "Enforce"}


def install_crd(plane: ControlPlane, document: dict[str, Any]) -> None:
    """Apply `document` (either variant) and wait until the server serves exactly it.

    kube-apiserver rebuilds a CRD's handler asynchronously after an update; a
    dry-run of a store with no source tells the variants apart (the CEL rule
    refuses it, the schema alone accepts it), so the wait is on behaviour, not
    on a guess.
    """
    has_cel = "x-kubernetes-validations" in yaml.safe_dump(document)
    plane.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=kube-tests",
        "-f",
        "-",
        stdin=yaml.safe_dump(document),
        check=True,
    )
    name = document["metadata"]["name"]
    plane.kubectl("wait", "--for=condition=Established", f"crd/{name}", "--timeout=60s", check=True)
    api = k8s.CustomObjectsApi(api_client(plane))
    probe = feedbackstore(f"probe-{uuid.uuid4().hex[:8]}", _NO_SOURCE)

    def serves_variant() -> bool:
        try:
            api.create_namespaced_custom_object(
                GROUP, VERSION, PROBE_NAMESPACE, PLURAL, probe, dry_run="All"
            )
        except k8s.ApiException as error:
            if error.status == 404:  # not served yet
                return False
            return has_cel and error.status == 422
        return not has_cel

    eventually(serves_variant, timeout=60, what=f"CRD variant (CEL={has_cel}) served")


def delete_feedbackstore_crd(plane: ControlPlane) -> None:
    """Delete the FeedbackStore CRD, and with it every store left on this plane.

    Earlier modules on the same plane may leave stores carrying finalizers (our
    in-use protection, applied while their status writer ran): with that writer
    gone, nothing would ever release them, and the CRD's deletion would wait on
    them for good. An admin runs `feedbackstore-webhook cleanup` before deleting the CRD
    (docs/install.md, "Uninstall"); this removes whatever finalizer is left, anyone's. The
    deletion itself deletes every store one by one (a scale test leaves a thousand): minutes
    under load.
    """
    api = k8s.CustomObjectsApi(api_client(plane))
    for store in api.list_cluster_custom_object(GROUP, VERSION, PLURAL)["items"]:
        if store["metadata"].get("finalizers"):
            meta = store["metadata"]
            with contextlib.suppress(k8s.ApiException):  # gone meanwhile
                api.patch_namespaced_custom_object(
                    GROUP,
                    VERSION,
                    meta["namespace"],
                    PLURAL,
                    meta["name"],
                    {"metadata": {"finalizers": None}},
                )
    plane.kubectl(
        "delete",
        "crd",
        f"{PLURAL}.{GROUP}",
        "--wait=true",
        "--timeout=240s",
        check=True,
        timeout=250,
    )


def shipped_crd() -> dict[str, Any]:
    return load_yaml(SHIPPED_CRD)


def platform_today_crd() -> dict[str, Any]:
    return load_yaml(PLATFORM_TODAY_CRD)


def platform_today_text() -> str:
    """What PLATFORM_TODAY_CRD must hold: generated from the model, CEL rules left out."""
    from webhook.manifests.crd import crd_manifest
    from webhook.manifests.render import render_yaml

    return render_yaml(
        crd_manifest(cel=False),
        header=(
            "The FeedbackStore CRD as the ctxmesh platform ships it today: the same schema\n"
            "limits and enums as manifests/crd/, but no CEL rules, so the admission webhook\n"
            "is the only guard of the cross-field rules. Generated from the model\n"
            "(crd_manifest(cel=False)); regenerate it with write_platform_today()\n"
            "in tests/kube/cluster.py."
        ),
    )


def write_platform_today() -> None:
    PLATFORM_TODAY_CRD.write_text(platform_today_text())


# -- namespaces ------------------------------------------------------------


def new_namespace(plane: ControlPlane, prefix: str = "t") -> str:
    """A fresh namespace the tests' webhooks match (namespace deletion needs no cleanup here:
    there is no namespace controller, and every test has its own)."""
    name = f"{prefix}-{uuid.uuid4().hex[:10]}"
    body = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {TEST_LABEL: "on"}},
    }
    k8s.CoreV1Api(api_client(plane)).create_namespace(body)
    return name


# -- webhooks --------------------------------------------------------------


@dataclass
class WebhookServer:
    """`feedbackstore-webhook serve` on 127.0.0.1, with the CA that signed its certificate."""

    process: ConsoleServer
    port: int
    ca_pem: bytes
    cert_file: pathlib.Path
    key_file: pathlib.Path

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}/validate"


def serving_files(
    directory: pathlib.Path, hosts: tuple[str, ...] = ("127.0.0.1",)
) -> tuple[pathlib.Path, pathlib.Path, bytes]:
    """A CA and a serving pair for `hosts` from our own certs code; (cert, key, CA PEM)."""
    bundle = issue_bundle(hosts)
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / "tls.crt", directory / "tls.key"
    cert.write_bytes(bundle.cert)
    key.write_bytes(bundle.key)
    key.chmod(0o600)
    return cert, key, bundle.ca_cert


@contextlib.contextmanager
def webhook_server(directory: pathlib.Path, *extra: str) -> Iterator[WebhookServer]:
    cert, key, ca = serving_files(directory / "tls")
    port = free_port()
    process = ConsoleServer(
        [
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--tls-cert-file",
            str(cert),
            "--tls-private-key-file",
            str(key),
            *extra,
        ],
        cwd=directory,
    )
    try:
        process.wait_log(lambda e: e.get("msg") == "serving", timeout=30)
        yield WebhookServer(process, port, ca, cert, key)
    finally:
        process.kill()


def registration(name: str, url: str, ca_pem: bytes, **overrides: Any) -> dict[str, Any]:
    """The shipped ValidatingWebhookConfiguration, pointed at `url` and at test namespaces only.

    Everything else (rules, failurePolicy, sideEffects, timeoutSeconds,
    admissionReviewVersions, matchPolicy) is what a cluster admin installs;
    `overrides` change fields of the first (judging) entry for a test.
    """
    import base64

    document = copy.deepcopy(load_yaml(SHIPPED_WEBHOOK))
    document["metadata"] = {"name": name}
    # Every entry (the judging one, and the DELETE warning one) at `url`: never a Service.
    for each in document["webhooks"]:
        each["clientConfig"] = {"url": url, "caBundle": base64.b64encode(ca_pem).decode()}
        each["namespaceSelector"] = {"matchLabels": {TEST_LABEL: "on"}}
    entry = document["webhooks"][0]
    entry.update(overrides)
    return document


@contextlib.contextmanager
def registered(
    plane: ControlPlane, document: dict[str, Any], probe_namespace: str, *, wait: bool = True
) -> Iterator[dict[str, Any]]:
    """Register `document` for the duration; wait until kube-apiserver calls it.

    A Monitor-mode store draws a warning only the webhook gives; the first
    server dry-run that carries it proves the registration is live.
    """
    admission = k8s.AdmissionregistrationV1Api(api_client(plane))
    admission.create_validating_webhook_configuration(document)
    try:
        if wait:
            wait_webhook_live(plane, probe_namespace)
        yield document
    finally:
        admission.delete_validating_webhook_configuration(document["metadata"]["name"])


def wait_webhook_live(plane: ControlPlane, namespace: str) -> None:
    probe = feedbackstore(
        "webhook-probe", {"mode": "Monitor", "human": {"scores": [{"name": "probe"}]}}
    )

    def warned() -> bool:
        result = plane.kubectl(
            "create", "--dry-run=server", "-n", namespace, "-f", "-", stdin=yaml.safe_dump(probe)
        )
        return result.returncode == 0 and "Monitor" in result.stderr

    eventually(warned, timeout=30, what="webhook registration live")
