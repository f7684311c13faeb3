"""Issue a CA and a serving certificate signed by it, in memory. ECDSA P-256 by default: a full TLS
handshake costs about half of an RSA-2048 one, and kube-apiserver opens new connections to
webhooks whenever its pool turns over."""

from __future__ import annotations

import contextlib
import datetime as dt
import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from webhook.certs.defaults import CA_DAYS, DEFAULT_KEY_TYPE, SERVING_DAYS, KeyType

RSA_BITS = 2048
# Back-date notBefore so a node whose clock lags a little still accepts a fresh certificate.
_CLOCK_SKEW = dt.timedelta(minutes=5)

PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


@dataclass(frozen=True, slots=True)
class Bundle:
    """PEM bytes of a CA certificate and key, and of a serving certificate and key it signed."""

    ca_cert: bytes
    ca_key: bytes
    cert: bytes
    key: bytes


@dataclass(frozen=True, slots=True)
class Authority:
    """A CA that can sign serving certificates (kept so renewals keep the same caBundle)."""

    cert: x509.Certificate
    key: PrivateKey


_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_HOST_LABEL = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?")
_MAX_HOST_LENGTH = 253


def is_dns_label(text: str) -> bool:
    """An RFC 1123 label as Kubernetes names namespaces and Services: a-z, 0-9, '-', <= 63."""
    return _LABEL.fullmatch(text) is not None


def check_host(host: str) -> None:
    """Refuse what no TLS client could match: an IP literal or an ASCII DNS name (`*.` allowed)."""
    with contextlib.suppress(ValueError):
        ipaddress.ip_address(host)
        return
    labels = host.removeprefix("*.").split(".")
    if len(host) > _MAX_HOST_LENGTH or not all(_HOST_LABEL.fullmatch(label) for label in labels):
        raise ValueError(
            f"{host!r} is not a DNS name or IP address (ASCII letters, digits, '-' and '.'; "
            "internationalised names in their xn-- form)"
        )


def service_hosts(service: str, namespace: str) -> tuple[str, ...]:
    """The DNS names kube-apiserver may use to reach a Service (it uses NAME.NS.svc)."""
    svc = f"{service}.{namespace}.svc"
    return service, f"{service}.{namespace}", svc, f"{svc}.cluster.local"


def _san(host: str) -> x509.GeneralName:
    """An IP literal is an IP SAN, anything else a DNS SAN: TLS clients check them apart."""
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def new_private_key(key_type: KeyType) -> PrivateKey:
    if key_type is KeyType.RSA:
        return rsa.generate_private_key(public_exponent=65537, key_size=RSA_BITS)
    return ec.generate_private_key(ec.SECP256R1())


def issue_bundle(
    hosts: Sequence[str],
    *,
    key_type: KeyType = DEFAULT_KEY_TYPE,
    days: int = SERVING_DAYS,
    ca_days: int = CA_DAYS,
    common_name: str | None = None,
    now: dt.datetime | None = None,
) -> Bundle:
    """A fresh CA and a serving certificate for `hosts`; the CA key is returned, never reused."""
    if ca_days < days:
        raise ValueError("the CA must outlive the serving certificate")
    authority = issue_authority(key_type=key_type, days=ca_days, now=now)
    return issue_serving(
        authority, hosts, key_type=key_type, days=days, common_name=common_name, now=now
    )


def issue_authority(
    *, key_type: KeyType = DEFAULT_KEY_TYPE, days: int = CA_DAYS, now: dt.datetime | None = None
) -> Authority:
    """A fresh self-signed CA allowed to sign leaf certificates only (path length 0)."""
    _check_days(days)
    key = new_private_key(key_type)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "feedbackstore-webhook CA")])
    start = _start(now)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(ca=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .sign(key, hashes.SHA256())
    )
    return Authority(cert, key)


def issue_serving(
    authority: Authority,
    hosts: Sequence[str],
    *,
    key_type: KeyType = DEFAULT_KEY_TYPE,
    days: int = SERVING_DAYS,
    common_name: str | None = None,
    now: dt.datetime | None = None,
) -> Bundle:
    if not hosts:
        raise ValueError("a serving certificate needs at least one host name")
    for host in hosts:
        check_host(host)
    _check_days(days)
    start = _start(now)
    end = min(start + dt.timedelta(days=days), authority.cert.not_valid_after_utc)
    key = new_private_key(key_type)
    ca_ski = authority.cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    # CN is capped at 64 characters by X.509; hostname checks use the SANs anyway.
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, (common_name or hosts[0])[:64])])
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(authority.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(ca=False, rsa_key=isinstance(key, rsa.RSAPrivateKey)), True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName([_san(h) for h in hosts]), False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False
        )
        .sign(authority.key, hashes.SHA256())
    )
    return Bundle(
        ca_cert=authority.cert.public_bytes(Encoding.PEM),
        ca_key=_pem_key(authority.key),
        cert=cert.public_bytes(Encoding.PEM),
        key=_pem_key(key),
    )


def _check_days(days: int) -> None:
    if days < 1:
        raise ValueError(f"a certificate lifetime must be at least 1 day, not {days}")


def _start(now: dt.datetime | None) -> dt.datetime:
    return (now or dt.datetime.now(dt.UTC)) - _CLOCK_SKEW


def _key_usage(*, ca: bool, rsa_key: bool = False) -> x509.KeyUsage:
    """CA: sign certificates. Leaf: sign handshakes; RSA key exchange also needs encipherment."""
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=rsa_key and not ca,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


def _pem_key(key: PrivateKey) -> bytes:
    return key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
