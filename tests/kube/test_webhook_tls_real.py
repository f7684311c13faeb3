"""The webhook's TLS as kube-apiserver checks it: certificates from the real `certs` command.

kube-apiserver calls the webhook here by `url:` (https://127.0.0.1:PORT), so the
serving certificate needs `--host 127.0.0.1`. Without it, or with a caBundle
from another CA, the real server refuses the call and, under `failurePolicy:
Fail`, the write. Rotating the serving files in place (a new pair from the same
CA, then a new CA announced in the caBundle beside the old one first) while
kube-apiserver keeps calling loses no request.
"""

from __future__ import annotations

import base64
import contextlib
import json
import pathlib
import socket
import ssl
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
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
    registered,
    registration,
    shipped_crd,
)
from tests.kube.controlplane import ControlPlane, free_port
from tests.support.manifest_render import MANIFESTS
from tests.support.servers import ConsoleServer
from webhook import install

pytestmark = [pytest.mark.kube, pytest.mark.xdist_group("kube")]

SCRIPT = pathlib.Path(sys.executable).parent / "feedbackstore-webhook"
WEBHOOK = "validate.feedbackstores.agents.ctxmesh.ai"
# A valid store only the webhook warns about: a call that carries the warning reached it.
MONITOR = {"mode": "Monitor", "human": {"scores": [{"name": "thumbs"}]}}
MONITOR_WARNING = "spec.mode: Monitor relays undeclared score names"
PROBE_LABEL = "feedbackstore-test/rotation-probe"
ROTATION_CALLS_MAX = 3000
ROTATION_SECONDS_MAX = 90.0


@pytest.fixture(scope="module", autouse=True)
def _crd(control_plane: ControlPlane) -> None:
    install_crd(control_plane, shipped_crd())


def certs(out_dir: pathlib.Path, *args: str) -> str:
    """`feedbackstore-webhook certs` as a user runs it; its first line (created/renewed/kept)."""
    result = subprocess.run(
        [str(SCRIPT), "certs", "--out-dir", str(out_dir), "--base", str(MANIFESTS), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()[0]


@contextlib.contextmanager
def serving(directory: pathlib.Path) -> Iterator[tuple[ConsoleServer, int]]:
    """`feedbackstore-webhook serve` on 127.0.0.1 with the files `certs` wrote to `directory`."""
    port = free_port()
    server = ConsoleServer(
        [
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--tls-cert-file",
            str(directory / "tls.crt"),
            "--tls-private-key-file",
            str(directory / "tls.key"),
        ],
        cwd=directory,
    )
    try:
        server.wait_log(lambda e: e.get("msg") == "serving", timeout=30)
        yield server, port
    finally:
        server.kill()


def url(port: int) -> str:
    return f"https://127.0.0.1:{port}/validate"


def dry_run_create(plane: ControlPlane, namespace: str) -> Any:
    store = feedbackstore(f"s-{uuid.uuid4().hex[:8]}", MONITOR)
    return plane.kubectl(
        "create", "--dry-run=server", "-n", namespace, "-f", "-", stdin=yaml.safe_dump(store)
    )


def refused_with(plane: ControlPlane, namespace: str, port: int, x509_error: str) -> None:
    """Under failurePolicy Fail, every create is refused with kube-apiserver's exact text."""
    expected = (
        'Error from server (InternalError): error when creating "STDIN": Internal error '
        f'occurred: failed calling webhook "{WEBHOOK}": failed to call webhook: Post '
        f'"https://127.0.0.1:{port}/validate?timeout=5s": tls: failed to verify certificate: '
        f"{x509_error}\n"
    )

    def refused() -> Any:
        result = dry_run_create(plane, namespace)
        return result if result.returncode == 1 else None

    result = eventually(refused, timeout=30, what="the registration refusing writes")
    assert result.stderr == expected
    assert result.stdout == ""


def accepted(plane: ControlPlane, namespace: str) -> None:
    result = dry_run_create(plane, namespace)
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith(f"Warning: {MONITOR_WARNING}")


# -- what kube-apiserver accepts and refuses -----------------------------------


def test_a_certificate_with_host_127_0_0_1_and_its_ca_in_the_cabundle_is_called(
    control_plane: ControlPlane, tmp_path: pathlib.Path
) -> None:
    assert certs(tmp_path, "--host", "127.0.0.1").startswith("created: ")
    namespace = new_namespace(control_plane, "tls")
    with serving(tmp_path) as (_, port):
        ca = (tmp_path / "ca.crt").read_bytes()
        doc = registration(f"tls-{uuid.uuid4().hex[:6]}", url(port), ca)
        with registered(control_plane, doc, namespace):
            accepted(control_plane, namespace)


@pytest.mark.parametrize(
    ("host_args", "x509_error"),
    [
        pytest.param(
            (),
            "x509: cannot validate certificate for 127.0.0.1 because it doesn't contain any "
            "IP SANs",
            id="the Service names only (no --host)",
        ),
        pytest.param(
            ("--host", "127.0.0.2", "--host", "localhost"),
            "x509: certificate is valid for 127.0.0.2, not 127.0.0.1",
            id="another address (--host 127.0.0.2)",
        ),
    ],
)
def test_a_certificate_without_the_called_address_is_refused_and_so_is_the_write(
    control_plane: ControlPlane,
    tmp_path: pathlib.Path,
    host_args: tuple[str, ...],
    x509_error: str,
) -> None:
    certs(tmp_path, *host_args)
    namespace = new_namespace(control_plane, "tls")
    with serving(tmp_path) as (_, port):
        ca = (tmp_path / "ca.crt").read_bytes()
        doc = registration(f"tls-{uuid.uuid4().hex[:6]}", url(port), ca)
        with registered(control_plane, doc, namespace, wait=False):
            refused_with(control_plane, namespace, port, x509_error)


def test_a_cabundle_of_another_ca_is_refused_and_so_is_the_write(
    control_plane: ControlPlane, tmp_path: pathlib.Path
) -> None:
    certs(tmp_path / "served", "--host", "127.0.0.1")
    certs(tmp_path / "other", "--host", "127.0.0.1")
    namespace = new_namespace(control_plane, "tls")
    with serving(tmp_path / "served") as (_, port):
        other_ca = (tmp_path / "other" / "ca.crt").read_bytes()
        doc = registration(f"tls-{uuid.uuid4().hex[:6]}", url(port), other_ca)
        with registered(control_plane, doc, namespace, wait=False):
            # Every CA `certs` makes has the same subject, so Go names the candidate it
            # tried before giving up.
            refused_with(
                control_plane,
                namespace,
                port,
                "x509: certificate signed by unknown authority (possibly because of "
                '"x509: ECDSA verification failure" while trying to verify candidate '
                'authority certificate "feedbackstore-webhook CA")',
            )


# -- rotation under load -------------------------------------------------------


@dataclass
class CallLoop:
    """Server dry-run creates through kube-apiserver, back to back, on a thread."""

    plane: ControlPlane
    namespace: str
    calls: int = 0
    failures: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        api = k8s.CustomObjectsApi(api_client(self.plane))
        deadline = time.monotonic() + ROTATION_SECONDS_MAX
        while not self.stop.is_set() and self.calls < ROTATION_CALLS_MAX:
            if time.monotonic() > deadline:
                self.failures.append(f"still running after {ROTATION_SECONDS_MAX} s")
                return
            body = feedbackstore(f"r-{self.calls}", MONITOR)
            try:
                _, status, headers = api.create_namespaced_custom_object_with_http_info(
                    GROUP, VERSION, self.namespace, PLURAL, body, dry_run="All"
                )
            except k8s.ApiException as error:
                self.failures.append(f"call {self.calls}: {error.status} {error.body}")
            else:
                if status != 201 or MONITOR_WARNING not in (headers.get("Warning") or ""):
                    self.failures.append(f"call {self.calls}: {status}, no webhook warning")
            self.calls += 1

    def calls_after(self, count: int, more: int) -> None:
        """Wait until `more` calls have completed after `count` (all of them, by then, judged)."""
        eventually(
            lambda: self.calls >= count + more or self.failures or self.stop.is_set(),
            timeout=30,
            what=f"{more} more calls",
        )


def served_certificate(port: int) -> bytes:
    """The DER certificate a new handshake with the webhook gets."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw) as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return der


def der(path: pathlib.Path) -> bytes:
    cert = x509.load_pem_x509_certificate(path.read_bytes())
    return cert.public_bytes(serialization.Encoding.DER)


def install_in_place(source: pathlib.Path, target: pathlib.Path) -> None:
    """Copy a serving pair over the served files, key first, each by an atomic rename."""
    for name in ("tls.key", "tls.crt"):
        staged = target / f".{name}.new"
        staged.write_bytes((source / name).read_bytes())
        staged.chmod(0o600 if name == "tls.key" else 0o644)
        staged.replace(target / name)


def set_ca_bundle(plane: ControlPlane, name: str, port: int, bundle: bytes) -> None:
    """Replace the caBundle, and wait until kube-apiserver calls the webhook with it.

    kube-apiserver keys its webhook clients by the whole client config, caBundle
    bytes included: a changed bundle means a new client, whose first call opens a
    new connection and so verifies whatever certificate the webhook serves now.
    It reads configurations through one informer, in order: once a configuration
    registered after the change is called, the change is in effect too.
    """
    patch = [
        {
            "op": "replace",
            "path": "/webhooks/0/clientConfig/caBundle",
            "value": base64.b64encode(bundle).decode(),
        }
    ]
    admission = k8s.AdmissionregistrationV1Api(api_client(plane))
    admission.patch_validating_webhook_configuration(name, patch)
    wait_for_bundle(plane, port, bundle)


def wait_for_bundle(plane: ControlPlane, port: int, bundle: bytes) -> None:
    """Until a registration made now with `bundle` is called: kube-apiserver reads them through
    one informer, in order, so a change made before is in effect too."""
    probe_namespace = f"probe-{uuid.uuid4().hex[:8]}"
    core = k8s.CoreV1Api(api_client(plane))
    labels = {PROBE_LABEL: "on"}
    core.create_namespace(
        k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=probe_namespace, labels=labels))
    )
    probe = registration(
        f"probe-{uuid.uuid4().hex[:6]}",
        url(port),
        bundle,
        namespaceSelector={"matchLabels": {PROBE_LABEL: "on"}},
    )
    with registered(plane, probe, probe_namespace):
        pass


def test_rotating_the_serving_files_and_the_ca_loses_no_request(
    control_plane: ControlPlane, tmp_path: pathlib.Path
) -> None:
    served, staged = tmp_path / "served", tmp_path / "staged"
    certs(served, "--host", "127.0.0.1")
    namespace = new_namespace(control_plane, "tls")
    with serving(served) as (server, port):
        name = f"tls-{uuid.uuid4().hex[:6]}"
        doc = registration(name, url(port), (served / "ca.crt").read_bytes())
        with registered(control_plane, doc, namespace):
            loop = CallLoop(control_plane, namespace)
            thread = threading.Thread(target=loop.run, daemon=True)
            thread.start()
            try:
                loop.calls_after(0, 20)
                first_ca = (served / "ca.crt").read_bytes()
                first = der(served / "tls.crt")

                # 1. A new pair from the same CA, written in place by `certs` itself (a new
                #    --host makes it renew rather than keep); then a new connection from
                #    kube-apiserver (the same CA, its bytes changed) verifies it.
                assert certs(served, "--host", "127.0.0.1", "--host", "localhost").startswith(
                    "renewed: "
                )
                assert (served / "ca.crt").read_bytes() == first_ca
                renewed = der(served / "tls.crt")
                assert renewed != first
                eventually(lambda: served_certificate(port) == renewed, what="renewed pair served")
                set_ca_bundle(control_plane, name, port, first_ca + b"\n")
                loop.calls_after(loop.calls, 20)

                # 2. A new CA: announced beside the old one first, then a pair it signed is
                #    served in place (verified on a new connection against both CAs), then
                #    the old CA is retired (the new pair alone must carry every call).
                assert certs(staged, "--host", "127.0.0.1").startswith("created: ")
                new_ca = (staged / "ca.crt").read_bytes()
                assert new_ca != first_ca
                set_ca_bundle(control_plane, name, port, first_ca + new_ca)
                loop.calls_after(loop.calls, 20)
                install_in_place(staged, served)
                rotated = der(staged / "tls.crt")
                eventually(lambda: served_certificate(port) == rotated, what="new CA's pair served")
                set_ca_bundle(control_plane, name, port, new_ca + first_ca)
                loop.calls_after(loop.calls, 20)
                set_ca_bundle(control_plane, name, port, new_ca)
                loop.calls_after(loop.calls, 20)
            finally:
                loop.stop.set()
                thread.join(30)
    assert loop.failures == []
    assert 100 <= loop.calls <= ROTATION_CALLS_MAX
    reloads = [e for e in server.logs if e.get("msg") == "certificate reloaded"]
    assert len(reloads) >= 2


# -- the documented CA rotation, with the certs command's own overlays ---------------


def overlay_bundle(plane: ControlPlane, name: str, out_dir: pathlib.Path) -> bytes:
    """Apply the overlay's caBundle patch (as kustomize does: a strategic merge, webhooks by
    name) to registration `name`; the one bundle every entry then holds."""
    patch = yaml.safe_load((out_dir / "cabundle-patch.yaml").read_text(encoding="utf-8"))
    patch["metadata"]["name"] = name
    plane.kubectl(
        "patch", "validatingwebhookconfiguration", name, "--type=strategic",
        "-p", json.dumps({"webhooks": patch["webhooks"]}),
    ).check_returncode()  # fmt: skip
    got = plane.kubectl("get", "validatingwebhookconfiguration", name, "-o", "json")
    webhooks = json.loads(got.stdout)["webhooks"]
    assert [entry["name"] for entry in webhooks] == list(install.ENTRIES)
    (bundle,) = {entry["clientConfig"]["caBundle"] for entry in webhooks}  # every entry's
    return base64.b64decode(bundle)


def secret_to_served(out_dir: pathlib.Path, served: pathlib.Path) -> bytes:
    """What the kubelet does with the overlay's Secret: its pair in the mounted files (key
    first, each by an atomic rename); the DER of the certificate now served."""
    data = yaml.safe_load((out_dir / "secret.yaml").read_text(encoding="utf-8"))["data"]
    staged = served.parent / f"{served.name}-from-secret"
    staged.mkdir(exist_ok=True)
    for name in ("tls.key", "tls.crt"):
        (staged / name).write_bytes(base64.b64decode(data[name]))
    install_in_place(staged, served)
    return der(staged / "tls.crt")


def test_the_ca_rotation_of_docs_install_md_loses_no_write(
    control_plane: ControlPlane, tmp_path: pathlib.Path
) -> None:
    """docs/install.md "Rotate the CA" step by step with `certs`' own overlays: both CAs in every
    entry, then the new CA's pair served, then the old CA dropped, while kube-apiserver calls
    the judging entry (failurePolicy Fail) back to back: not one write fails. A step out of
    order is refused by the command before it reaches the cluster."""
    certs_dir, next_dir, rotation = tmp_path / "certs", tmp_path / "next", tmp_path / "rotation"
    host = ("--host", "127.0.0.1")  # kube-apiserver calls the url: here, not the Service
    certs(certs_dir, *host)
    served = tmp_path / "served"
    served.mkdir()
    secret_to_served(certs_dir, served)
    namespace = new_namespace(control_plane, "rotate")
    with serving(served) as (_, port):
        name = f"rotate-{uuid.uuid4().hex[:6]}"
        doc = registration(name, url(port), (certs_dir / "ca.crt").read_bytes())
        with registered(control_plane, doc, namespace):
            old_ca = overlay_bundle(control_plane, name, certs_dir)
            assert old_ca == (certs_dir / "ca.crt").read_bytes()
            loop = CallLoop(control_plane, namespace)
            thread = threading.Thread(target=loop.run, daemon=True)
            thread.start()
            try:
                loop.calls_after(0, 20)
                # 0. a new CA and pair beside the old ones, not applied
                assert certs(next_dir, *host).startswith("created: ")
                both = tmp_path / "both-cas.crt"
                both.write_bytes(old_ca + (next_dir / "ca.crt").read_bytes())
                # out of order: the new CA alone does not verify what is served; refused
                early = subprocess.run(
                    [str(SCRIPT), "certs", "--out-dir", str(rotation), "--base", str(MANIFESTS),
                     *host, "--ca-bundle", str(next_dir / "ca.crt"),
                     "--cert", str(certs_dir / "tls.crt"), "--key", str(certs_dir / "tls.key")],
                    capture_output=True, text=True, timeout=60, check=False,
                )  # fmt: skip
                assert early.returncode == 2, early.stdout
                assert "does not verify to a CA of --ca-bundle" in early.stderr
                # 1. trust both CAs in every entry; the old pair still served
                own = ("--ca-bundle", str(both))
                certs(rotation, *host, *own, "--cert", str(certs_dir / "tls.crt"),
                      "--key", str(certs_dir / "tls.key"))  # fmt: skip
                assert overlay_bundle(control_plane, name, rotation) == both.read_bytes()
                wait_for_bundle(control_plane, port, both.read_bytes())
                loop.calls_after(loop.calls, 20)
                # 2. serve the new CA's pair, both still trusted
                certs(rotation, *host, *own, "--cert", str(next_dir / "tls.crt"),
                      "--key", str(next_dir / "tls.key"))  # fmt: skip
                rotated = secret_to_served(rotation, served)
                eventually(lambda: served_certificate(port) == rotated, what="new pair served")
                loop.calls_after(loop.calls, 20)
                # 3. drop the old CA: the new CA's own overlay
                assert certs(next_dir, *host).startswith("kept: ")
                new_ca = overlay_bundle(control_plane, name, next_dir)
                assert new_ca == (next_dir / "ca.crt").read_bytes() != old_ca
                wait_for_bundle(control_plane, port, new_ca)
                loop.calls_after(loop.calls, 20)
            finally:
                loop.stop.set()
                thread.join(30)
    assert loop.failures == []
    assert 80 <= loop.calls <= ROTATION_CALLS_MAX
