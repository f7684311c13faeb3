"""TLS material for the tests: a trustme CA, serving pairs on disk, and verifying clients.

The client trusts only the test CA and checks the Service DNS name, exactly as
kube-apiserver does when it calls `https://<service>.<namespace>.svc:<port>`.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import ssl
import time
from dataclasses import dataclass

import trustme

SERVICE_DNS = "feedbackstore-webhook.feedbackstore-system.svc"
SERVING_NAMES = (SERVICE_DNS, "localhost", "127.0.0.1")


@dataclass(frozen=True)
class Pair:
    """PEM bytes of a serving certificate chain and its key, plus the leaf's DER fingerprint."""

    cert: bytes
    key: bytes
    fingerprint: str


def issue(ca: trustme.CA, *, key_type: trustme.KeyType = trustme.KeyType.ECDSA) -> Pair:
    leaf = ca.issue_cert(*SERVING_NAMES, key_type=key_type)
    chain = b"".join(blob.bytes() for blob in leaf.cert_chain_pems)
    der = ssl.PEM_cert_to_DER_cert(leaf.cert_chain_pems[0].bytes().decode())
    return Pair(chain, leaf.private_key_pem.bytes(), hashlib.sha256(der).hexdigest())


def fingerprint(der: bytes) -> str:
    return hashlib.sha256(der).hexdigest()


def client_context(ca: trustme.CA) -> ssl.SSLContext:
    """Verify the chain against `ca` and the host name, TLS 1.2+ (what kube-apiserver does)."""
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    ca.configure_trust(context)
    return context


class PlainFiles:
    """`tls.crt` and `tls.key` written in place, as a hand-managed deployment would."""

    def __init__(self, directory: pathlib.Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.cert = directory / "tls.crt"
        self.key = directory / "tls.key"

    def write(self, pair: Pair, *, key: bytes | None = None) -> None:
        self.key.write_bytes(pair.key if key is None else key)
        self.cert.write_bytes(pair.cert)


class SecretVolume:
    """A Secret volume as the kubelet projects it (its AtomicWriter).

    Files live in a timestamped directory, `..data` points at it and
    `tls.crt`/`tls.key` point through `..data`; an update writes a new
    directory and swaps `..data` with one rename, so a reader sees the old pair
    or the new pair, never a mix.
    """

    def __init__(self, directory: pathlib.Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.cert = directory / "tls.crt"
        self.key = directory / "tls.key"

    def project(self, pair: Pair, *, key: bytes | None = None) -> None:
        stamp = directory_name = f"..{time.strftime('%Y_%m_%d_%H_%M_%S')}.{time.monotonic_ns()}"
        target = self.directory / directory_name
        target.mkdir()
        (target / "tls.crt").write_bytes(pair.cert)
        (target / "tls.key").write_bytes(pair.key if key is None else key)
        data = self.directory / "..data"
        previous = os.readlink(data) if data.is_symlink() else None
        staging = self.directory / "..data_tmp"
        os.symlink(stamp, staging)
        os.rename(staging, data)
        for name in ("tls.crt", "tls.key"):
            link = self.directory / name
            if not link.is_symlink():
                os.symlink(f"..data/{name}", link)
        if previous:
            for leftover in (self.directory / previous).iterdir():
                leftover.unlink()
            (self.directory / previous).rmdir()
