"""Real TLS handshakes with the issued certificates, on 127.0.0.1.

A client that trusts only the issued CA connects with each Service DNS name
as its server name and verifies chain and hostname, as kube-apiserver does:
first against a plain Python TLS server, then against the webhook's own
`serve` (its /readyz over the same handshake).
"""

from __future__ import annotations

import asyncio
import contextlib
import pathlib
import socket
import ssl
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from webhook.certs.defaults import KeyType
from webhook.certs.dev import ensure_dev_certificates
from webhook.certs.files import ServingFiles
from webhook.certs.issue import service_hosts
from webhook.certs.renewal import ensure_certificates
from webhook.server.config import ServerConfig
from webhook.server.run import start

SERVICE_HOSTS = service_hosts("feedbackstore-webhook", "feedbackstore-system")


def client_context(ca_file: pathlib.Path) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(ca_file))
    assert context.check_hostname
    assert context.verify_mode == ssl.CERT_REQUIRED
    return context


class TlsServer:
    """A thread accepting TLS connections on 127.0.0.1 with the given pair, answering b'ok'."""

    def __init__(self, files: ServingFiles) -> None:
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(files.cert, files.key)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(30)
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.stopping = False
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopping:
            try:
                raw, _ = self.listener.accept()
            except OSError:
                return
            with raw:
                raw.settimeout(30)
                try:
                    with self.context.wrap_socket(raw, server_side=True) as tls:
                        tls.sendall(b"ok")
                except (ssl.SSLError, OSError):
                    continue

    def close(self) -> None:
        """Wake the blocked accept() (close alone does not on Linux), then join."""
        self.stopping = True
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        self.thread.join(timeout=30)
        assert not self.thread.is_alive()


def handshake(port: int, context: ssl.SSLContext, server_name: str) -> tuple[bytes, Any]:
    with (
        socket.create_connection(("127.0.0.1", port), timeout=30) as raw,
        context.wrap_socket(raw, server_hostname=server_name) as tls,
    ):
        peer = tls.getpeercert()
        assert peer is not None
        return tls.recv(2), peer


@pytest.fixture(params=list(KeyType), ids=lambda k: f"{k.value} keys")
def service_files(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> ServingFiles:
    files, _ = ensure_certificates(tmp_path, SERVICE_HOSTS, key_type=request.param)
    return files


@pytest.fixture
def tls_server(service_files: ServingFiles) -> Iterator[TlsServer]:
    server = TlsServer(service_files)
    yield server
    server.close()


@pytest.mark.parametrize("name", SERVICE_HOSTS)
def test_a_verifying_client_completes_the_handshake_for_every_service_name(
    tls_server: TlsServer, service_files: ServingFiles, name: str
) -> None:
    answer, peer = handshake(tls_server.port, client_context(service_files.ca_cert), name)
    assert answer == b"ok"
    assert ("DNS", name) in peer["subjectAltName"]


@pytest.mark.parametrize("name", ["feedbackstore-webhook.default.svc", "localhost", "kubernetes"])
def test_a_verifying_client_refuses_a_name_the_certificate_lacks(
    tls_server: TlsServer, service_files: ServingFiles, name: str
) -> None:
    with pytest.raises(ssl.SSLCertVerificationError, match="Hostname mismatch"):
        handshake(tls_server.port, client_context(service_files.ca_cert), name)


def test_a_client_trusting_another_ca_refuses_the_server(
    tls_server: TlsServer, tmp_path_factory: pytest.TempPathFactory
) -> None:
    other, _ = ensure_certificates(tmp_path_factory.mktemp("other"), SERVICE_HOSTS)
    with pytest.raises(ssl.SSLCertVerificationError, match="unable to get local issuer"):
        handshake(tls_server.port, client_context(other.ca_cert), SERVICE_HOSTS[2])


@pytest.mark.parametrize("name", ["localhost", "127.0.0.1"])
def test_the_dev_certificate_serves_loopback_names_and_addresses(
    tmp_path: pathlib.Path, name: str
) -> None:
    files = ensure_dev_certificates(tmp_path)
    server = TlsServer(files)
    try:
        answer, _ = handshake(server.port, client_context(files.ca_cert), name)
    finally:
        server.close()
    assert answer == b"ok"


async def _readyz(port: int, context: ssl.SSLContext, name: str) -> bytes:
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", port, ssl=context, server_hostname=name
    )
    try:
        writer.write(f"GET /readyz HTTP/1.1\r\nHost: {name}\r\nConnection: close\r\n\r\n".encode())
        await writer.drain()
        return await asyncio.wait_for(reader.readline(), 30)
    finally:
        writer.close()


async def test_serve_presents_the_issued_certificate_to_a_verifying_client(
    service_files: ServingFiles,
) -> None:
    running = await start(
        ServerConfig(
            cert_file=service_files.cert, key_file=service_files.key, host="127.0.0.1", port=0
        )
    )
    try:
        context = client_context(service_files.ca_cert)
        for name in SERVICE_HOSTS:
            status_line = await _readyz(running.port, context, name)
            assert status_line.startswith(b"HTTP/1.1 200"), (name, status_line)
        mismatch = "Hostname mismatch, certificate is not valid for 'feedbackstore-webhook.default"
        with pytest.raises(ssl.SSLCertVerificationError, match=mismatch):
            await _readyz(running.port, context, "feedbackstore-webhook.default.svc")
    finally:
        await running.stop()
