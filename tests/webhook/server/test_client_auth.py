"""`--client-ca-file`: only a caller with a client certificate the CA signed gets past TLS on the
webhook port; the probe port answers the kubelet without one and judges nothing; a changed CA
bundle applies to the next handshake without a restart."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import pathlib
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiohttp
import pytest
import trustme

from tests.support.admission_apiserver import accepted_answer
from tests.support.pki import SERVICE_DNS, PlainFiles, client_context
from tests.support.reviews import create, duplicate_spec
from tests.support.servers import WebhookClient, config_for, running_webhook
from tests.support.waiting import eventually_async
from webhook.server.run import RunningServer
from webhook.server.tls import CertificateError

REQUEST = b"GET /healthz HTTP/1.1\r\nHost: webhook\r\n\r\n"


def with_client_cert(server_ca: trustme.CA, signer: trustme.CA | None) -> ssl.SSLContext:
    """A client trusting the serving CA, presenting a certificate `signer` issued (or none)."""
    context = client_context(server_ca)
    if signer is not None:
        signer.issue_cert("kube-apiserver").configure_cert(context)
    return context


async def first_bytes(
    port: int, context: ssl.SSLContext, server_hostname: str = SERVICE_DNS
) -> bytes:
    """What a GET on a new connection is answered with: b"" when the server hung up in TLS.

    The server refuses a client certificate inside the handshake. asyncio (and
    uvloop) close the connection without sending OpenSSL's fatal alert
    (CPython gh-98078), so the client sees a reset (TLS 1.2, the handshake
    fails) or end of file before any answer (TLS 1.3, where the client's side
    of the handshake is over before the server checks its certificate).
    """
    try:
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", port, ssl=context, server_hostname=server_hostname
        )
    except (ssl.SSLError, ConnectionError):
        return b""
    try:
        writer.write(REQUEST)
        return await reader.read(64)
    except (ssl.SSLError, ConnectionError):
        return b""
    finally:
        writer.close()
        with contextlib.suppress(ssl.SSLError, ConnectionError):
            await writer.wait_closed()


SERVED = b"HTTP/1.1 200 OK"


@dataclass
class Guarded:
    server: RunningServer
    ca: trustme.CA
    client_ca: trustme.CA
    client_ca_file: pathlib.Path

    def client(self, signer: trustme.CA | None, *, probe: bool = False) -> WebhookClient:
        port = self.server.probe_port if probe else self.server.port
        assert port is not None
        return WebhookClient(port, with_client_cert(self.ca, signer))


@pytest.fixture(name="guarded")
async def _guarded(
    tmp_path: pathlib.Path, ca: trustme.CA, serving_files: PlainFiles
) -> AsyncIterator[Guarded]:
    client_ca = trustme.CA()
    client_ca_file = tmp_path / "client-ca.crt"
    client_ca_file.write_bytes(client_ca.cert_pem.bytes())
    config = config_for(
        serving_files.cert, serving_files.key, client_ca_file=client_ca_file, probe_port=0
    )
    async with running_webhook(config) as server:
        yield Guarded(server, ca, client_ca, client_ca_file)


@pytest.mark.parametrize(
    "version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3], ids=["TLS 1.2", "TLS 1.3"]
)
@pytest.mark.parametrize(
    ("signed_by", "served"),
    [("client CA", True), ("nobody", False), ("another CA", False)],
    ids=[
        "a certificate the client CA signed is served",
        "no client certificate is refused in the handshake",
        "a certificate another CA signed is refused in the handshake",
    ],
)
async def test_the_webhook_port_serves_only_a_client_the_ca_signed(
    guarded: Guarded, version: ssl.TLSVersion, signed_by: str, served: bool
) -> None:
    signer = {"client CA": guarded.client_ca, "nobody": None, "another CA": trustme.CA()}
    context = with_client_cert(guarded.ca, signer[signed_by])
    context.minimum_version = context.maximum_version = version
    answer = await first_bytes(guarded.server.port, context)
    assert answer.startswith(SERVED) if served else answer == b""


async def test_a_review_from_the_signed_client_is_judged(guarded: Guarded) -> None:
    client = guarded.client(guarded.client_ca)
    try:
        sent = create(duplicate_spec())
        response = accepted_answer(sent, *await client.review(sent))
    finally:
        await client.close()
    assert response["allowed"] is False
    assert response["auditAnnotations"]["verdict"] == "denied"


async def test_an_unsigned_client_gets_no_answer_and_is_not_counted(guarded: Guarded) -> None:
    client = guarded.client(None)
    try:
        with pytest.raises(
            (aiohttp.ClientOSError, aiohttp.ServerDisconnectedError),
            match=r"Connection reset by peer|Server disconnected",
        ):
            await client.review(create(duplicate_spec()))
    finally:
        await client.close()
    probe = guarded.client(None, probe=True)
    try:
        reviews = (
            'feedbackstore_webhook_admission_requests_total{operation="CREATE",verdict="denied"}'
        )
        assert await probe.metric(reviews) == 0
    finally:
        await probe.close()


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics"])
async def test_the_probe_port_answers_without_a_client_certificate(
    guarded: Guarded, path: str
) -> None:
    probe = guarded.client(None, probe=True)
    try:
        status, _ = await probe.get(path)
    finally:
        await probe.close()
    assert status == 200


async def test_the_probe_port_judges_nothing(guarded: Guarded) -> None:
    probe = guarded.client(None, probe=True)
    try:
        status, body = await probe.review(create(duplicate_spec()))
    finally:
        await probe.close()
    assert status == 404
    assert b"no endpoint /validate" in body


async def test_the_probe_port_reports_not_ready_once_shutdown_begins(guarded: Guarded) -> None:
    probe = guarded.client(None, probe=True)
    try:
        guarded.server.lifecycle.shutting_down = True
        status, body = await probe.get("/readyz")
    finally:
        await probe.close()
    assert (status, body) == (503, b"shutting down\n")


async def test_a_changed_client_ca_applies_to_the_next_handshake(guarded: Guarded) -> None:
    """Rotating kube-apiserver's client CA: the new bundle is read without a restart."""
    successor = trustme.CA()
    old, new = guarded.client_ca, successor
    port = guarded.server.port
    assert (await first_bytes(port, with_client_cert(guarded.ca, new))) == b""
    # During a rotation the bundle holds both CAs, then only the new one.
    guarded.client_ca_file.write_bytes(old.cert_pem.bytes() + new.cert_pem.bytes())

    async def new_accepted() -> bool:
        return (await first_bytes(port, with_client_cert(guarded.ca, new))).startswith(SERVED)

    await eventually_async(new_accepted)
    assert (await first_bytes(port, with_client_cert(guarded.ca, old))).startswith(SERVED)
    guarded.client_ca_file.write_bytes(new.cert_pem.bytes())

    async def old_refused() -> bool:
        return await first_bytes(port, with_client_cert(guarded.ca, old)) == b""

    await eventually_async(old_refused)
    assert (await first_bytes(port, with_client_cert(guarded.ca, new))).startswith(SERVED)
    probe = guarded.client(None, probe=True)
    try:
        loaded = 'feedbackstore_webhook_certificate_reloads_total{result="loaded"}'
        assert await probe.metric(loaded) == 2
    finally:
        await probe.close()


async def test_a_broken_client_ca_is_refused_and_the_previous_one_kept(
    guarded: Guarded, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="feedbackstore")
    guarded.client_ca_file.write_bytes(b"not a certificate\n")
    probe = guarded.client(None, probe=True)
    try:
        refused = 'feedbackstore_webhook_certificate_reloads_total{result="refused"}'

        async def was_refused() -> bool:
            return await probe.metric(refused) >= 1

        await eventually_async(was_refused)
    finally:
        await probe.close()
    port = guarded.server.port
    assert (await first_bytes(port, with_client_cert(guarded.ca, guarded.client_ca))).startswith(
        SERVED
    )
    assert await first_bytes(port, with_client_cert(guarded.ca, None)) == b""
    errors = [getattr(r, "fields", {}).get("error", "") for r in caplog.records]
    assert any(f"cannot load client CA {guarded.client_ca_file}" in e for e in errors), errors


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "No such file"),
        (b"", "no PEM certificate in it"),
        (b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "PEM lib"),
    ],
    ids=["a missing file", "an empty file", "a broken PEM block"],
)
async def test_a_server_whose_client_ca_cannot_be_loaded_does_not_start(
    tmp_path: pathlib.Path, serving_files: PlainFiles, content: bytes | None, reason: str
) -> None:
    bundle = tmp_path / "client-ca.crt"
    if content is not None:
        bundle.write_bytes(content)
    config = config_for(serving_files.cert, serving_files.key, client_ca_file=bundle, probe_port=0)
    fragment = "cannot read certificate files" if content is None else f"client CA {bundle}"
    with pytest.raises(CertificateError, match=fragment) as raised:
        async with running_webhook(config):
            pass
    assert reason in str(raised.value)


async def test_without_a_client_ca_the_probe_port_serves_the_same_pair(
    ca: trustme.CA, serving_files: PlainFiles
) -> None:
    config = config_for(serving_files.cert, serving_files.key, probe_port=0)
    async with running_webhook(config) as server:
        assert server.probe_port not in (None, server.port)
        for port in (server.port, server.probe_port):
            assert port is not None
            assert (await first_bytes(port, client_context(ca))).startswith(SERVED)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--client-ca-file", "ca.crt"], "--client-ca-file needs --probe-port"),
        (["--port", "8443", "--probe-port", "8443"], "--probe-port must differ from --port"),
    ],
    ids=["a client CA without a probe port", "the probe port on the webhook port"],
)
def test_serve_refuses_flags_that_would_leave_the_probes_unanswered(
    serving_files: PlainFiles, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    from webhook.cli.main import main

    tls = [
        "--tls-cert-file",
        str(serving_files.cert),
        "--tls-private-key-file",
        str(serving_files.key),
    ]
    assert main(["serve", *tls, *flags]) == 2
    assert message in capsys.readouterr().err


def test_serve_refuses_a_probe_port_out_of_range(capsys: pytest.CaptureFixture[str]) -> None:
    from webhook.cli.main import main

    with pytest.raises(SystemExit) as exited:
        main(["serve", "--dev", "--probe-port", "70000"])
    assert exited.value.code == 2
    assert "must be a port number (0-65535), got 70000" in capsys.readouterr().err
