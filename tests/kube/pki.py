"""Throwaway PKI for the test control plane, made with `cryptography`.

kube-apiserver needs a serving pair, a CA that signs the client certificates
it accepts (the admin's `system:masters` one among them), and a key pair for
signing service-account tokens so TokenRequest works. Everything is ECDSA
P-256 and lives a day: it is made for one test session and thrown away.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import pathlib
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_LIFETIME = dt.timedelta(days=1)
_SKEW = dt.timedelta(minutes=5)


@dataclass(frozen=True)
class Authority:
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @property
    def pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)


@dataclass(frozen=True)
class Pair:
    cert: bytes
    key: bytes


def new_authority(common_name: str) -> Authority:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _SKEW)
        .not_valid_after(now + _LIFETIME)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return Authority(cert, key)


def issue(
    authority: Authority,
    common_name: str,
    *,
    organizations: tuple[str, ...] = (),
    dns_names: tuple[str, ...] = (),
    ip_addresses: tuple[str, ...] = (),
    client: bool = False,
) -> Pair:
    """A leaf signed by `authority`: a serving certificate, or a client one (`client=True`).

    A client certificate's CN is the user name and each O a group, which is how
    kube-apiserver's x509 authenticator reads it.
    """
    key = ec.generate_private_key(ec.SECP256R1())
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    now = dt.datetime.now(dt.UTC)
    usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(attributes))
        .issuer_name(authority.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _SKEW)
        .not_valid_after(now + _LIFETIME)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(authority.key.public_key()),
            critical=False,
        )
    )
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    names += [x509.IPAddress(ipaddress.ip_address(a)) for a in ip_addresses]
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    cert = builder.sign(authority.key, hashes.SHA256())
    return Pair(
        cert.public_bytes(serialization.Encoding.PEM) + authority.pem,
        _key_pem(key),
    )


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


@dataclass(frozen=True)
class ControlPlanePKI:
    """Files on disk for kube-apiserver's flags, plus the admin's client pair."""

    directory: pathlib.Path
    server_ca: Authority
    client_ca: Authority
    admin: Pair

    @property
    def server_ca_file(self) -> pathlib.Path:
        return self.directory / "server-ca.crt"

    @property
    def client_ca_file(self) -> pathlib.Path:
        return self.directory / "client-ca.crt"

    @property
    def serving_cert_file(self) -> pathlib.Path:
        return self.directory / "apiserver.crt"

    @property
    def serving_key_file(self) -> pathlib.Path:
        return self.directory / "apiserver.key"

    @property
    def service_account_key_file(self) -> pathlib.Path:
        return self.directory / "service-account.key"

    @property
    def service_account_pub_file(self) -> pathlib.Path:
        return self.directory / "service-account.pub"

    def client(self, user: str, *groups: str) -> Pair:
        """A client certificate for `user` in `groups`, accepted by this control plane."""
        return issue(self.client_ca, user, organizations=groups, client=True)


def make(directory: pathlib.Path, ip_addresses: tuple[str, ...] = ()) -> ControlPlanePKI:
    """A throwaway PKI; the serving certificate is for 127.0.0.1 and `ip_addresses` too."""
    directory.mkdir(parents=True, exist_ok=True)
    server_ca = new_authority("feedbackstore-test-apiserver-ca")
    client_ca = new_authority("feedbackstore-test-client-ca")
    serving = issue(
        server_ca,
        "kube-apiserver",
        dns_names=("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"),
        ip_addresses=("127.0.0.1", *ip_addresses),
    )
    admin = issue(
        client_ca, "feedbackstore-test-admin", organizations=("system:masters",), client=True
    )
    sa_key = ec.generate_private_key(ec.SECP256R1())
    pki = ControlPlanePKI(directory, server_ca, client_ca, admin)
    pki.server_ca_file.write_bytes(server_ca.pem)
    pki.client_ca_file.write_bytes(client_ca.pem)
    pki.serving_cert_file.write_bytes(serving.cert)
    pki.serving_key_file.write_bytes(serving.key)
    pki.service_account_key_file.write_bytes(_key_pem(sa_key))
    pki.service_account_pub_file.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    for path in directory.iterdir():
        path.chmod(0o600)
    return pki
