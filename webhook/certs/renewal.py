"""Keep what is on disk while it fits (reissuing churns the CA users trust), else renew the serving
certificate under the same CA (the cluster's caBundle stays valid: no x509 window), else start
over: on the first run, with `force`, for another key type, or when the CA nears its end."""

from __future__ import annotations

import datetime as dt
import ipaddress
import pathlib
from collections.abc import Sequence
from ipaddress import IPv4Address, IPv6Address

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from webhook.certs.defaults import CA_DAYS, DEFAULT_KEY_TYPE, SERVING_DAYS, KeyType
from webhook.certs.files import ServingFiles, read_optional, write_bundle
from webhook.certs.issue import Authority, PrivateKey, issue_authority, issue_serving

# Renew within 30 days of expiry, or within the last third of the lifetime when that is
# shorter (a 7-day certificate is renewed with 2.3 days left, not on its first day).
_RENEW_FRACTION = 3
_RENEW_AT_MOST = dt.timedelta(days=30)


def ensure_certificates(
    out_dir: pathlib.Path,
    hosts: Sequence[str],
    *,
    key_type: KeyType | None = None,
    days: int = SERVING_DAYS,
    force: bool = False,
    now: dt.datetime | None = None,
) -> tuple[ServingFiles, str]:
    """The files, and "kept", "renewed" or "created"; `key_type` None accepts what is on disk."""
    moment = now or dt.datetime.now(dt.UTC)
    files = ServingFiles.in_dir(out_dir)
    authority = None
    if not force:
        pair = _load_pair(read_optional(files.ca_cert), read_optional(files.ca_key), key_type)
        if pair is not None and _is_ca(pair[0]) and _is_fresh(pair[0], moment):
            authority = Authority(*pair)
    if authority is not None:
        pair = _load_pair(read_optional(files.cert), read_optional(files.key), key_type)
        if pair is not None and _serves(pair[0], authority.cert, hosts, moment):
            return files, "kept"
    outcome = "created" if authority is None else "renewed"
    chosen = key_type or DEFAULT_KEY_TYPE
    if authority is None:
        authority = issue_authority(key_type=chosen, days=max(CA_DAYS, days), now=moment)
    bundle = issue_serving(authority, hosts, key_type=chosen, days=days, now=moment)
    return write_bundle(out_dir, bundle), outcome


def _load_pair(
    cert_pem: bytes | None, key_pem: bytes | None, key_type: KeyType | None
) -> tuple[x509.Certificate, PrivateKey] | None:
    """A certificate and its own key, of `key_type` if given; anything else is reissued."""
    try:
        cert = x509.load_pem_x509_certificate(cert_pem or b"")
        key = serialization.load_pem_private_key(key_pem or b"", password=None)
    except (ValueError, TypeError):
        return None
    if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        return None
    if cert.public_key() != key.public_key():
        return None
    on_disk = KeyType.RSA if isinstance(key, rsa.RSAPrivateKey) else KeyType.ECDSA
    return (cert, key) if key_type in (None, on_disk) else None


def issued_by(cert: x509.Certificate, issuer: x509.Certificate) -> bool:
    """`issuer` signed `cert` directly (dates ignored); False for any mismatch or bad signature."""
    try:
        cert.verify_directly_issued_by(issuer)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def _serves(
    cert: x509.Certificate, ca: x509.Certificate, hosts: Sequence[str], now: dt.datetime
) -> bool:
    """Signed by `ca`, fresh, and valid for every host as kube-apiserver checks names."""
    if not issued_by(cert, ca) or not _is_fresh(cert, now):
        return False
    return all(hostname_error(cert, host) is None for host in hosts)


def hostname_error(cert: x509.Certificate, host: str) -> str | None:
    """None when Go's `VerifyHostname` accepts `host` (SANs only), else its error, word for word."""
    dns, ips = sans(cert)
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is not None and address in ips:
        return None
    if address is None and any(host_matches(name, host) for name in dns):
        return None
    if not dns and not ips and host_matches(common_name(cert), host):
        return "x509: certificate relies on legacy Common Name field, use SANs instead"
    if address is not None:
        if not ips:
            return (
                f"x509: cannot validate certificate for {host} "
                "because it doesn't contain any IP SANs"
            )
        valid = ", ".join(str(ip) for ip in ips)
    else:
        valid = ", ".join(dns)
    if not valid:
        return f"x509: certificate is not valid for any names, but wanted to match {host}"
    return f"x509: certificate is valid for {valid}, not {host}"


def sans(cert: x509.Certificate) -> tuple[list[str], list[IPv4Address | IPv6Address]]:
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return [], []
    ips = names.get_values_for_type(x509.IPAddress)
    addresses = [ip for ip in ips if isinstance(ip, IPv4Address | IPv6Address)]
    return list(names.get_values_for_type(x509.DNSName)), addresses


def host_matches(name: str, host: str) -> bool:
    """A DNS name against a DNS host, as Go matches them: `*.` is exactly one leftmost label."""
    name, host = name.lower().rstrip("."), host.lower().rstrip(".")
    if name.startswith("*."):
        head, _, rest = host.partition(".")
        return bool(head) and rest == name[2:]
    return name == host


def common_name(cert: x509.Certificate) -> str:
    names = cert.subject.get_attributes_for_oid(x509.oid.NameOID.COMMON_NAME)
    value = names[0].value if names else ""
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def _is_fresh(cert: x509.Certificate, now: dt.datetime) -> bool:
    start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
    return start <= now < end - min((end - start) / _RENEW_FRACTION, _RENEW_AT_MOST)


def _is_ca(cert: x509.Certificate) -> bool:
    try:
        return bool(cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
    except x509.ExtensionNotFound:
        return False
