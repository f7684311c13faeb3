"""Keep what is on disk while it fits (reissuing churns the CA users trust), else renew the serving
certificate under the same CA (the cluster's caBundle stays valid: no x509 window), else start
over: on the first run, with `force`, for another key type, or when the CA nears its end."""

from __future__ import annotations

import datetime as dt
import ipaddress
import pathlib
from collections.abc import Sequence

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
    """Signed by `ca`, fresh, and every host literally one of its SANs (no wildcard reasoning)."""
    if not issued_by(cert, ca) or not _is_fresh(cert, now):
        return False
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    dns = {name.lower() for name in sans.get_values_for_type(x509.DNSName)}
    ips = set(sans.get_values_for_type(x509.IPAddress))
    for host in hosts:
        try:
            if ipaddress.ip_address(host) not in ips:
                return False
        except ValueError:
            if host.lower() not in dns:
                return False
    return True


def _is_fresh(cert: x509.Certificate, now: dt.datetime) -> bool:
    start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
    return start <= now < end - min((end - start) / _RENEW_FRACTION, _RENEW_AT_MOST)


def _is_ca(cert: x509.Certificate) -> bool:
    try:
        return bool(cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
    except x509.ExtensionNotFound:
        return False
