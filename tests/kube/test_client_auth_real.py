"""Only kube-apiserver may call the webhook: the real kube-apiserver v1.37.2, given a client
certificate for the webhook through its AdmissionConfiguration, is judged; the session's plane,
which has none, is refused at TLS, as are direct clients without one or with another CA's; the
webhook re-reads its client CA without a restart.

The second control plane runs for this module only, with
`--admission-control-config-file` naming a WebhookAdmissionConfiguration whose
kubeconfig holds the client certificate under the user `127.0.0.1:<webhook port>`
(kube-apiserver picks a webhook's credentials by the host:port it calls).
"""

from __future__ import annotations

import asyncio
import pathlib
import re
import ssl
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from tests.docs.pages import section
from tests.kube import pki
from tests.kube.cluster import (
    WebhookServer,
    eventually,
    feedbackstore,
    install_crd,
    new_namespace,
    platform_today_crd,
    registered,
    registration,
    webhook_server,
)
from tests.kube.controlplane import ControlPlane, free_port, running
from tests.webhook.server.test_client_auth import first_bytes

pytestmark = [pytest.mark.kube, pytest.mark.xdist_group("kube")]

SERVED = b"HTTP/1.1 200 OK"
THUMBS_TWICE = {"mode": "Enforce", "human": {"scores": [{"name": "thumbs"}, {"name": "thumbs"}]}}
DOCS_SECTION = ("webhook.md", "## Only kube-apiserver may call it (client certificates)")
# The webhook closes idle connections after this long, so that kube-apiserver dials a new
# one (a new handshake, checked against the current client CA) for a call made later.
IDLE_SECONDS = 2


def denial(name: str) -> str:
    return (
        f'The FeedbackStore "{name}" is invalid: spec.human.scores[1].name: Duplicate value: '
        '"thumbs": human score names must be unique (first declared at spec.human.scores[0].name)\n'
    )


@dataclass
class Guarded:
    """The webhook requiring client certificates, and the plane configured to present one."""

    server: WebhookServer
    plane: ControlPlane
    namespace: str
    client_ca_file: pathlib.Path
    apiserver_ca: pki.Authority
    apiserver_pair: pki.Pair


def write_pem(path: pathlib.Path, data: bytes) -> pathlib.Path:
    path.write_bytes(data)
    path.chmod(0o600)
    return path


def docs_yaml(first_line: str) -> dict[str, Any]:
    """The YAML block of the docs' client-certificate section that opens with `first_line`."""
    blocks = [b.split("```", 1)[0] for b in section(*DOCS_SECTION).split("```yaml\n")[1:]]
    found = [b for b in blocks if b.splitlines()[0] == first_line]
    assert len(found) == 1, f"docs {DOCS_SECTION!r}: {len(found)} blocks open {first_line!r}"
    document: dict[str, Any] = yaml.safe_load(found[0])
    return document


def admission_configuration(directory: pathlib.Path, port: int, pair: pki.Pair) -> pathlib.Path:
    """kube-apiserver's side as the docs document it, with this test's files and webhook port."""
    kubeconfig = docs_yaml("apiVersion: v1")
    (user,) = kubeconfig["users"]
    user["name"] = f"127.0.0.1:{port}"  # registered by url:, not by the Service
    assert set(user["user"]) == {"client-certificate", "client-key"}
    user["user"]["client-certificate"] = str(write_pem(directory / "webhook-client.crt", pair.cert))
    user["user"]["client-key"] = str(write_pem(directory / "webhook-client.key", pair.key))
    kubeconfig_file = directory / "webhook-kubeconfig.yaml"
    kubeconfig_file.write_text(yaml.safe_dump(kubeconfig))
    configuration = docs_yaml("apiVersion: apiserver.config.k8s.io/v1")
    configuration["plugins"][0]["configuration"]["kubeConfigFile"] = str(kubeconfig_file)
    path = directory / "admission-configuration.yaml"
    path.write_text(yaml.safe_dump(configuration))
    return path


@pytest.fixture(scope="module", autouse=True)
def _platform_today_crd(control_plane: ControlPlane) -> None:
    # The session's plane (the one without a client certificate) calls the webhook too.
    install_crd(control_plane, platform_today_crd())


@pytest.fixture(scope="module", name="guarded")
def _guarded(
    control_plane_binaries: pathlib.Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Guarded]:
    directory = tmp_path_factory.mktemp("client-auth")
    apiserver_ca = pki.new_authority("webhook-client-ca")
    pair = pki.issue(apiserver_ca, "kube-apiserver", client=True)
    client_ca_file = write_pem(directory / "client-ca.crt", apiserver_ca.pem)
    # The webhook first: its port names kube-apiserver's credentials for it.
    with webhook_server(
        directory / "webhook",
        "--client-ca-file",
        str(client_ca_file),
        "--probe-port",
        str(free_port()),
        "--idle-timeout",
        str(IDLE_SECONDS),
    ) as server:
        configuration = admission_configuration(directory, server.port, pair)
        flag = f"--admission-control-config-file={configuration}"
        with running(
            control_plane_binaries, directory / "plane", extra_apiserver_args=[flag]
        ) as plane:
            install_crd(plane, platform_today_crd())
            namespace = new_namespace(plane, "mtls")
            document = registration(f"mtls-{uuid.uuid4().hex[:8]}", server.url, server.ca_pem)
            with registered(plane, document, namespace):
                yield Guarded(server, plane, namespace, client_ca_file, apiserver_ca, pair)


def create(plane: ControlPlane, namespace: str, name: str, spec: dict[str, Any]) -> tuple[int, str]:
    result = plane.kubectl(
        "create", "-n", namespace, "-f", "-", stdin=yaml.safe_dump(feedbackstore(name, spec))
    )
    return result.returncode, result.stdout + result.stderr


def refused_at_tls(server: WebhookServer, name: str) -> re.Pattern[str]:
    """What kubectl prints when kube-apiserver's call never got past the webhook's handshake.

    With TLS 1.3 the client's handshake completes before the server has checked
    its certificate, and asyncio closes the refused connection without an alert.
    The close reaches kube-apiserver as whichever of Go's errors for a closed
    peer its next read or write meets: the end of the stream (`EOF`), a reset
    (`connection reset by peer`), a write into the closed socket (`broken
    pipe`), its own connection closed under it meanwhile (`use of closed
    network connection`, bare or after the `write tcp A->B:` of the write it
    failed), or, when the close arrives before the request is written, a
    connection it counts as idle and closed by the server (`http: server closed
    idle connection`). All were seen on the real server; an HTTP answer may not
    appear.
    """
    prefix = (
        f'Error from server (InternalError): error when creating "STDIN": Internal error '
        f'occurred: failed calling webhook "validate.feedbackstores.agents.ctxmesh.ai": failed '
        f'to call webhook: Post "https://127.0.0.1:{server.port}/validate?timeout=5s": '
    )
    socket = rf"(read|write) tcp 127\.0\.0\.1:\d+->127\.0\.0\.1:{server.port}: "
    closed_peer = rf"{socket}(read|write): (connection reset by peer|broken pipe)"
    closed_here = rf"({socket})?use of closed network connection"
    closed_idle = r"http: server closed idle connection"
    return re.compile(re.escape(prefix) + rf"(EOF|{closed_peer}|{closed_here}|{closed_idle})\n")


def direct(server: WebhookServer, pair: pki.Pair | None, directory: pathlib.Path) -> bytes:
    """A GET straight to the webhook port, trusting its CA, presenting `pair` (or nothing)."""
    context = ssl.create_default_context(cadata=server.ca_pem.decode())
    if pair is not None:
        cert = write_pem(directory / f"direct-{uuid.uuid4().hex[:6]}.crt", pair.cert)
        key = write_pem(cert.with_suffix(".key"), pair.key)
        context.load_cert_chain(cert, key)
    return asyncio.run(first_bytes(server.port, context, "127.0.0.1"))


def test_kube_apiserver_with_the_client_certificate_is_judged(guarded: Guarded) -> None:
    plane, namespace = guarded.plane, guarded.namespace
    name = f"thumbs-{uuid.uuid4().hex[:6]}"
    assert create(plane, namespace, name, THUMBS_TWICE) == (1, denial(name))
    fine = {"mode": "Enforce", "human": {"scores": [{"name": "thumbs"}]}}
    assert create(plane, namespace, f"fine-{uuid.uuid4().hex[:6]}", fine)[0] == 0


def test_kube_apiserver_without_the_client_certificate_is_refused_at_tls(
    guarded: Guarded, control_plane: ControlPlane
) -> None:
    namespace = new_namespace(control_plane, "nocert")
    server = guarded.server
    document = registration(f"nocert-{uuid.uuid4().hex[:8]}", server.url, server.ca_pem)
    name = f"thumbs-{uuid.uuid4().hex[:6]}"
    with registered(control_plane, document, namespace, wait=False):

        def refused() -> str | None:
            code, printed = create(control_plane, namespace, name, THUMBS_TWICE)
            return printed if code == 1 and "failed calling webhook" in printed else None

        printed = eventually(refused, what="kube-apiserver's call refused")
    assert refused_at_tls(server, name).fullmatch(printed), printed
    assert not [e for e in server.process.logs if e.get("name") == name]


@pytest.mark.parametrize(
    "who", ["no certificate", "another CA's certificate", "kube-apiserver's certificate"]
)
def test_a_direct_client_needs_the_certificate_kube_apiserver_has(
    guarded: Guarded, tmp_path: pathlib.Path, who: str
) -> None:
    pair = {
        "no certificate": None,
        "another CA's certificate": pki.issue(
            pki.new_authority("other"), "kube-apiserver", client=True
        ),
        "kube-apiserver's certificate": guarded.apiserver_pair,
    }[who]
    answer = direct(guarded.server, pair, tmp_path)
    if who == "kube-apiserver's certificate":
        assert answer.startswith(SERVED)
    else:
        assert answer == b""


def test_the_probe_port_answers_the_kubelet_without_a_certificate(guarded: Guarded) -> None:
    entry = guarded.server.process.wait_log(lambda e: e.get("msg") == "serving")
    context = ssl.create_default_context(cadata=guarded.server.ca_pem.decode())
    assert entry["client_certificates"] is True
    answer = asyncio.run(first_bytes(entry["probe_port"], context, "127.0.0.1"))
    assert answer.startswith(SERVED)


def test_a_rotated_client_ca_is_read_without_a_restart(guarded: Guarded) -> None:
    """Another CA only: kube-apiserver's next connection is refused; back: judged again."""
    plane, namespace, server = guarded.plane, guarded.namespace, guarded.server
    pid = server.process.process.pid
    name = f"thumbs-{uuid.uuid4().hex[:6]}"
    guarded.client_ca_file.write_bytes(pki.new_authority("successor").pem)

    def printed_when(expected: str | re.Pattern[str]) -> bool:
        printed = create(plane, namespace, name, THUMBS_TWICE)[1]
        if isinstance(expected, re.Pattern):
            return expected.fullmatch(printed) is not None
        return printed == expected

    eventually(
        lambda: printed_when(refused_at_tls(server, name)),
        timeout=60,
        interval=IDLE_SECONDS + 1,
        what="calls refused under another client CA",
    )
    guarded.client_ca_file.write_bytes(guarded.apiserver_ca.pem)
    eventually(
        lambda: printed_when(denial(name)),
        timeout=60,
        interval=IDLE_SECONDS + 1,
        what="calls judged again under the right client CA",
    )
    assert server.process.process.pid == pid
    assert server.process.process.poll() is None

    # The server's log lines are written in batches, so the second reload's line may follow
    # the answer it made possible by a moment.
    def reloaded() -> list[dict[str, Any]]:
        found = [e for e in server.process.logs if e.get("msg") == "certificate reloaded"]
        return found if len(found) >= 2 else []

    reloads = eventually(reloaded, what="both reloads logged")
    assert len(reloads) == 2
    assert all(e["client_ca_file"] == str(guarded.client_ca_file) for e in reloads)
