"""The serving certificate's notAfter, read from its DER without `cryptography`.

The serve process needs one date from its certificate (the expiry metric and
log line, on every reload). Importing `cryptography` for it would cost the
process memory it needs for nothing else (8 MiB resident, measured by the RSS figures of
bench/admission/run.py),
so this reads the Validity of RFC 5280 §4.1 straight from the DER: five TLV headers into
TBSCertificate, then UTCTime or GeneralizedTime. OpenSSL parses the whole
certificate right after (`load_cert_chain`), so nothing malformed is served.
tests/webhook/server/test_leaf_expiry.py holds it to cryptography's reading.
"""

from __future__ import annotations

import datetime as dt
import re
import ssl
from typing import Final

_PEM_BLOCK: Final = re.compile(
    rb"-----BEGIN CERTIFICATE-----[^-]*-----END CERTIFICATE-----", re.ASCII
)
_SEQUENCE: Final = 0x30
_EXPLICIT_VERSION: Final = 0xA0
_UTC_TIME: Final = 0x17
_GENERALIZED_TIME: Final = 0x18


def not_valid_after(pem: bytes) -> dt.datetime:
    """notAfter (UTC, aware) of the first certificate in `pem`; ValueError if there is none."""
    block = _PEM_BLOCK.search(pem)
    if block is None:
        raise ValueError("no -----BEGIN CERTIFICATE----- block")
    der = ssl.PEM_cert_to_DER_cert(block.group().decode("ascii"))
    _, start, _ = _header(der, 0, _SEQUENCE)  # Certificate
    _, start, _ = _header(der, start, _SEQUENCE)  # TBSCertificate
    if start < len(der) and der[start] == _EXPLICIT_VERSION:
        start = _skip(der, start)
    for _ in ("serialNumber", "signature", "issuer"):
        start = _skip(der, start)
    _, start, _ = _header(der, start, _SEQUENCE)  # Validity
    start = _skip(der, start)  # notBefore
    tag, start, end = _header(der, start, None)
    return _time(tag, der[start:end])


def _header(der: bytes, at: int, expected: int | None) -> tuple[int, int, int]:
    """(tag, content start, content end) of the TLV at `at`."""
    if at + 2 > len(der):
        raise ValueError("certificate DER ends early")
    tag, length = der[at], der[at + 1]
    if expected is not None and tag != expected:
        raise ValueError(f"certificate DER has tag {tag:#04x} where {expected:#04x} belongs")
    start = at + 2
    if length & 0x80:
        size = length & 0x7F
        if size == 0 or size > 4:
            raise ValueError("certificate DER has an unsupported length")
        length = int.from_bytes(der[start : start + size], "big")
        start += size
    end = start + length
    if end > len(der):
        raise ValueError("certificate DER ends early")
    return tag, start, end


def _skip(der: bytes, at: int) -> int:
    return _header(der, at, None)[2]


def _time(tag: int, value: bytes) -> dt.datetime:
    text = value.decode("ascii")
    if tag == _UTC_TIME and len(text) == 13:
        # RFC 5280 §4.1.2.5.1: YY of 50 or more is 19YY, else 20YY.
        century = "19" if int(text[:2]) >= 50 else "20"
        text = century + text
    elif tag != _GENERALIZED_TIME or len(text) != 15:
        raise ValueError(f"certificate notAfter is not an RFC 5280 time: {text!r}")
    if not text.endswith("Z"):
        raise ValueError(f"certificate notAfter is not in UTC: {text!r}")
    return dt.datetime.strptime(text, "%Y%m%d%H%M%SZ").replace(tzinfo=dt.UTC)
