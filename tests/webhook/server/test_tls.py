"""The TLS port: only TLS 1.2+ with modern ciphers, the Service name verified, and certificates
rotated from disk (in place and by a Secret volume's symlink swap) without failing a request."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import pathlib
import ssl
import time
from collections.abc import AsyncIterator, Callable

import pytest
import trustme

from tests.support.admission_apiserver import accepted_answer
from tests.support.pki import (
    SERVICE_DNS,
    Pair,
    PlainFiles,
    SecretVolume,
    client_context,
    fingerprint,
    issue,
)
from tests.support.reviews import create, duplicate_spec, valid_spec
from tests.support.servers import (
    Webhook,
    WebhookClient,
    config_for,
    running_webhook,
)
from tests.support.waiting import eventually_async
from webhook.server.tls import CertificateError

# The server answers an unacceptable ClientHello with an alert and closes: the client sees
# one or the other depending on timing.
HANDSHAKE_REFUSED = (ssl.SSLError, ConnectionResetError)
# What it says: the alert (a version or cipher it will not speak), or nothing for the reset;
# never a certificate the client did not trust.
REFUSAL = r"\A\Z|PROTOCOL_VERSION|UNSUPPORTED_PROTOCOL|HANDSHAKE_FAILURE|NO_SHARED_CIPHER"


async def served_fingerprint(
    port: int, context: ssl.SSLContext, server_hostname: str = SERVICE_DNS
) -> str:
    """The SHA-256 of the certificate a new connection is given."""
    _, writer = await asyncio.open_connection(
        "127.0.0.1", port, ssl=context, server_hostname=server_hostname
    )
    der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    writer.close()
    with contextlib.suppress(ConnectionError, ssl.SSLError):
        await writer.wait_closed()
    return fingerprint(der)


def legacy_client(ca: trustme.CA, version: ssl.TLSVersion) -> ssl.SSLContext:
    """A client that speaks only `version` (and is allowed to by its own security level)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = context.maximum_version = version
    context.set_ciphers("DEFAULT:@SECLEVEL=0")
    ca.configure_trust(context)
    return context


@contextlib.asynccontextmanager
async def permissive_server(ca: trustme.CA, tmp_path: pathlib.Path) -> AsyncIterator[int]:
    """A bare TLS server accepting TLS 1.0+, to prove the legacy clients can connect at all."""
    pair = issue(ca)
    files = PlainFiles(tmp_path / "permissive")
    files.write(pair)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1
    context.set_ciphers("DEFAULT:@SECLEVEL=0")
    context.load_cert_chain(files.cert, files.key)

    async def greet(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(greet, "127.0.0.1", 0, ssl=context)
    async with server:
        yield server.sockets[0].getsockname()[1]


@pytest.mark.filterwarnings("ignore:ssl.TLSVersion.TLSv1:DeprecationWarning")
@pytest.mark.parametrize(
    "version", [ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_1], ids=["TLS 1.0", "TLS 1.1"]
)
async def test_tls_before_1_2_is_refused(
    webhook: Webhook, tmp_path: pathlib.Path, version: ssl.TLSVersion
) -> None:
    context = legacy_client(webhook.ca, version)
    async with permissive_server(webhook.ca, tmp_path) as port:
        await served_fingerprint(port, context)  # the client itself can speak it
    with pytest.raises(HANDSHAKE_REFUSED, match=REFUSAL):
        await served_fingerprint(webhook.port, context)


@pytest.mark.parametrize(
    ("version", "cipher"),
    [
        (ssl.TLSVersion.TLSv1_2, "ECDHE-ECDSA-AES128-GCM-SHA256"),
        (ssl.TLSVersion.TLSv1_2, "ECDHE-ECDSA-CHACHA20-POLY1305"),
        (ssl.TLSVersion.TLSv1_3, None),
    ],
    ids=["TLS 1.2 with AES-GCM", "TLS 1.2 with ChaCha20", "TLS 1.3"],
)
async def test_tls_1_2_and_1_3_with_aead_ciphers_are_served(
    webhook: Webhook, version: ssl.TLSVersion, cipher: str | None
) -> None:
    context = client_context(webhook.ca)
    context.minimum_version = context.maximum_version = version
    if cipher:
        context.set_ciphers(cipher)
    _, writer = await asyncio.open_connection(
        "127.0.0.1", webhook.port, ssl=context, server_hostname=SERVICE_DNS
    )
    ssl_object = writer.get_extra_info("ssl_object")
    assert ssl_object.version() == {"TLSv1_2": "TLSv1.2", "TLSv1_3": "TLSv1.3"}[version.name]
    if cipher:
        assert ssl_object.cipher()[0] == cipher
    writer.close()


async def test_a_tls_1_2_cbc_cipher_is_refused(webhook: Webhook) -> None:
    context = client_context(webhook.ca)
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    context.set_ciphers("ECDHE-ECDSA-AES128-SHA:ECDHE-ECDSA-AES256-SHA384")
    with pytest.raises(HANDSHAKE_REFUSED, match=REFUSAL):
        await served_fingerprint(webhook.port, context)


async def test_the_service_name_is_verified_and_a_wrong_one_fails(webhook: Webhook) -> None:
    assert await served_fingerprint(webhook.port, client_context(webhook.ca))
    mismatch = "Hostname mismatch, certificate is not valid for 'other.feedbackstore-system.svc'"
    with pytest.raises(ssl.SSLCertVerificationError, match=mismatch):
        await served_fingerprint(
            webhook.port, client_context(webhook.ca), "other.feedbackstore-system.svc"
        )


async def test_a_client_trusting_another_ca_fails(webhook: Webhook) -> None:
    unknown_ca = "unable to get local issuer certificate"
    with pytest.raises(ssl.SSLCertVerificationError, match=unknown_ca):
        await served_fingerprint(webhook.port, client_context(trustme.CA()))


@pytest.mark.parametrize(
    "key_type", [trustme.KeyType.ECDSA, trustme.KeyType.RSA], ids=["ECDSA", "RSA"]
)
async def test_ecdsa_and_rsa_keys_are_both_served(
    tmp_path: pathlib.Path, ca: trustme.CA, key_type: trustme.KeyType
) -> None:
    files = PlainFiles(tmp_path / key_type.name)
    pair = issue(ca, key_type=key_type)
    files.write(pair)
    async with running_webhook(config_for(files.cert, files.key)) as server:
        assert await served_fingerprint(server.port, client_context(ca)) == pair.fingerprint


async def rotated(webhook: Webhook, write: Callable[[Pair], None], new: Pair) -> None:
    """Write `new` with `write` and wait until new connections are served it."""
    write(new)
    context = client_context(webhook.ca)

    async def serving_new() -> bool:
        return await served_fingerprint(webhook.port, context) == new.fingerprint

    await eventually_async(serving_new)


async def test_a_certificate_rewritten_in_place_is_served_to_new_connections(
    webhook: Webhook,
) -> None:
    old_client = webhook.client
    assert (await old_client.review(create(valid_spec())))[0] == 200  # a kept-alive connection
    new = issue(webhook.ca)
    await rotated(webhook, webhook.files.write, new)
    status, _ = await old_client.review(create(valid_spec()))
    assert status == 200
    assert (
        await old_client.metric('feedbackstore_webhook_certificate_reloads_total{result="loaded"}')
        >= 1
    )


async def test_a_secret_volume_symlink_swap_is_served_within_seconds(
    tmp_path: pathlib.Path, ca: trustme.CA
) -> None:
    volume = SecretVolume(tmp_path / "secret")
    first = issue(ca)
    volume.project(first)
    config = config_for(volume.cert, volume.key, cert_poll_interval=1.0)
    async with running_webhook(config) as server:
        context = client_context(ca)
        assert await served_fingerprint(server.port, context) == first.fingerprint
        second = issue(ca)
        swapped_at = time.monotonic()
        volume.project(second)

        async def serving_second() -> bool:
            return await served_fingerprint(server.port, context) == second.fingerprint

        await eventually_async(serving_second)
        assert time.monotonic() - swapped_at < 5.0


async def test_a_client_without_sni_is_given_the_rotated_certificate(webhook: Webhook) -> None:
    new = issue(webhook.ca)
    await rotated(webhook, webhook.files.write, new)
    # Python sends no SNI for an IP literal; the serving certificate has 127.0.0.1 as a SAN.
    assert await served_fingerprint(webhook.port, client_context(webhook.ca), "127.0.0.1") == (
        new.fingerprint
    )


@pytest.mark.parametrize(
    "broken",
    [
        pytest.param(lambda pair, other: (pair.cert, other.key), id="a key that does not match"),
        pytest.param(lambda pair, other: (pair.cert, b"garbage"), id="a key that is not PEM"),
        pytest.param(
            lambda pair, other: (b"-----BEGIN CERTIFICATE-----\nAAAA\n", pair.key),
            id="a certificate that is not PEM",
        ),
    ],
)
async def test_a_broken_new_pair_is_refused_and_the_old_one_keeps_serving(
    webhook: Webhook,
    caplog: pytest.LogCaptureFixture,
    broken: Callable[[Pair, Pair], tuple[bytes, bytes]],
) -> None:
    caplog.set_level(logging.ERROR, logger="feedbackstore")
    context = client_context(webhook.ca)
    old = await served_fingerprint(webhook.port, context)
    cert, key = broken(issue(webhook.ca), issue(webhook.ca))
    webhook.files.key.write_bytes(key)
    webhook.files.cert.write_bytes(cert)
    refused = 'feedbackstore_webhook_certificate_reloads_total{result="refused"}'

    async def was_refused() -> bool:
        return await webhook.client.metric(refused) >= 1

    await eventually_async(was_refused)
    assert await served_fingerprint(webhook.port, context) == old
    sent = create(duplicate_spec())
    assert accepted_answer(sent, *await webhook.client.review(sent))["allowed"] is False
    messages = [r.getMessage() for r in caplog.records]
    assert "new certificate refused; still serving the previous one" in messages
    good = issue(webhook.ca)
    await rotated(webhook, webhook.files.write, good)


async def test_an_encrypted_key_is_refused_without_prompting(
    tmp_path: pathlib.Path, ca: trustme.CA
) -> None:
    from cryptography.hazmat.primitives import serialization

    pair = issue(ca)
    key = serialization.load_pem_private_key(pair.key, password=None)
    encrypted = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret"),
    )
    files = PlainFiles(tmp_path / "enc")
    files.write(pair, key=encrypted)
    with pytest.raises(CertificateError, match="encrypted"):
        async with running_webhook(config_for(files.cert, files.key)):
            pass


@pytest.mark.parametrize(
    ("cert_name", "fragment"),
    [
        ("missing.crt", "cannot read certificate files.*missing.crt"),
        ("tls.key", "is not a PEM certificate"),
    ],
    ids=["a missing certificate file", "a key given as the certificate"],
)
async def test_a_server_that_cannot_load_its_pair_does_not_start(
    serving_files: PlainFiles, cert_name: str, fragment: str
) -> None:
    cert = serving_files.cert.with_name(cert_name)
    with pytest.raises(CertificateError, match=fragment):
        async with running_webhook(config_for(cert, serving_files.key)):
            pass


async def test_rotation_under_concurrent_load_fails_no_request(webhook: Webhook) -> None:
    """Keep-alive and new-connection clients hammer the server while the pair changes
    three times, both in place and half-written (cert first, key later)."""
    clients = [
        WebhookClient(webhook.port, client_context(webhook.ca), keepalive=keepalive)
        for keepalive in (True, True, False, False)
    ]
    failures: list[str] = []
    answered = 0
    stop = asyncio.Event()

    async def load(client: WebhookClient) -> None:
        nonlocal answered
        while not stop.is_set():
            sent = create(duplicate_spec())
            try:
                status, body = await client.review(sent)
                accepted_answer(sent, status, body)
                answered += 1
            except Exception as error:  # every failure is collected and reported
                failures.append(repr(error))

    workers = [asyncio.create_task(load(c)) for c in clients for _ in range(2)]
    try:
        for _ in range(3):
            pair = issue(webhook.ca)
            webhook.files.cert.write_bytes(pair.cert)  # a moment with a mismatched pair
            await asyncio.sleep(0.3)
            webhook.files.key.write_bytes(pair.key)
            await rotated(webhook, webhook.files.write, pair)
    finally:
        stop.set()
        await asyncio.gather(*workers)
        for client in clients:
            await client.close()
    assert failures == []
    assert answered > 20
