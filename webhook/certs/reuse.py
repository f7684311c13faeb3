"""Decide whether certificate files on disk can be kept.

Reissuing on every start would churn the CA users trust (their caBundle or
browser exception) for nothing; keeping a certificate that no longer covers a
host or is about to expire turns into the classic `x509: certificate is valid
for ..., not ...` outage. These checks draw that line.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Sequence

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from webhook.certs.defaults import KeyType
from webhook.certs.issue import Authority, PrivateKey

# Renew within 30 days of expiry, or within the last third of the lifetime when that is
# shorter (a 7-day certificate is renewed with 2.3 days left, not on its first day).
_RENEW_FRACTION = 3
_RENEW_AT_MOST = dt.timedelta(days=30)


def load_pair(
    cert_pem: bytes | None, key_pem: bytes | None, key_type: KeyType | None
) -> tuple[x509.Certificate, PrivateKey] | None:
    """A certificate and the key it was issued for, both readable and of `key_type` if given.

    The first test any pair on disk must pass, CA or serving; anything else
    (absent, unreadable, another key, another type) is reissued.
    """
    try:
        cert = x509.load_pem_x509_certificate(cert_pem or b"")
        key = serialization.load_pem_private_key(key_pem or b"", password=None)
    except (ValueError, TypeError):
        return None
    if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        return None
    if cert.public_key() != key.public_key():
        return None
    if key_type is not None and key_type is not _key_type_of(key):
        return None
    return cert, key


def usable_authority(
    cert_pem: bytes | None, key_pem: bytes | None, key_type: KeyType | None, now: dt.datetime
) -> Authority | None:
    """The CA on disk if it is a CA, matches its key and type, and is not near expiry."""
    pair = load_pair(cert_pem, key_pem, key_type)
    if pair is None or not _is_ca(pair[0]) or not is_fresh(pair[0], now):
        return None
    return Authority(*pair)


def serving_reusable(
    ca: x509.Certificate,
    cert_pem: bytes | None,
    key_pem: bytes | None,
    hosts: Sequence[str],
    key_type: KeyType | None,
    now: dt.datetime,
) -> bool:
    """True when the serving pair on disk is signed by `ca`, covers `hosts` and is fresh."""
    pair = load_pair(cert_pem, key_pem, key_type)
    if pair is None:
        return False
    cert = pair[0]
    return issued_by(cert, ca) and covers(cert, hosts) and is_fresh(cert, now)


def issued_by(cert: x509.Certificate, issuer: x509.Certificate) -> bool:
    """`issuer` signed `cert` directly: names match and the signature verifies (dates ignored).

    False, not an error, for a mismatched name, an unsupported key or signature algorithm
    or a bad signature: the one rule the renewal and the doctor's chain building share.
    """
    try:
        cert.verify_directly_issued_by(issuer)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def covers(cert: x509.Certificate, hosts: Sequence[str]) -> bool:
    """Every host is literally one of the certificate's SANs (no wildcard reasoning)."""
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


def is_fresh(cert: x509.Certificate, now: dt.datetime) -> bool:
    """Already valid and with more than the renewal margin left."""
    start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
    margin = min((end - start) / _RENEW_FRACTION, _RENEW_AT_MOST)
    return start <= now and now < end - margin


def _is_ca(cert: x509.Certificate) -> bool:
    try:
        return bool(cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
    except x509.ExtensionNotFound:
        return False


def _key_type_of(key: PrivateKey) -> KeyType:
    return KeyType.RSA if isinstance(key, rsa.RSAPrivateKey) else KeyType.ECDSA
