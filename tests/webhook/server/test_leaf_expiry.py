"""The serve process reads its certificate's expiry without `cryptography`: same date, always.

`webhook.server.leaf_expiry` walks the DER by hand to keep `cryptography` out
of the serving process (8 MiB resident); these tests hold it to
cryptography's reading on every kind of certificate the project meets, and
to a clear ValueError on anything that is not one.
"""

from __future__ import annotations

import base64
import datetime as dt
import ssl

import pytest
import trustme
from cryptography import x509

from webhook.certs.issue import KeyType, issue_authority, issue_bundle, issue_serving
from webhook.server.leaf_expiry import not_valid_after

HOSTS = ("feedbackstore-webhook.feedbackstore-system.svc",)


def cryptography_reading(pem: bytes) -> dt.datetime:
    return x509.load_pem_x509_certificate(pem).not_valid_after_utc


@pytest.mark.parametrize("key_type", list(KeyType))
def test_our_own_serving_certificates_read_the_same(key_type: KeyType) -> None:
    bundle = issue_bundle(HOSTS, key_type=key_type, days=30)
    assert not_valid_after(bundle.cert) == cryptography_reading(bundle.cert)
    assert not_valid_after(bundle.ca_cert) == cryptography_reading(bundle.ca_cert)


def test_a_chain_is_read_by_its_first_certificate_the_leaf() -> None:
    bundle = issue_bundle(HOSTS, days=7)
    chain = bundle.cert + bundle.ca_cert
    assert not_valid_after(chain) == cryptography_reading(bundle.cert)
    assert not_valid_after(chain) != cryptography_reading(bundle.ca_cert)


def test_trustme_certificates_read_the_same() -> None:
    ca = trustme.CA()
    leaf = ca.issue_cert(*HOSTS)
    pem = leaf.cert_chain_pems[0].bytes()
    assert not_valid_after(pem) == cryptography_reading(pem)


@pytest.mark.parametrize(
    "year",
    [2049, 2050, 2100],
    ids=["UTCTime (before 2050)", "GeneralizedTime from 2050", "GeneralizedTime, far"],
)
def test_both_rfc5280_time_forms_read_the_same(year: int) -> None:
    """RFC 5280 writes dates up to 2049 as UTCTime (YYMMDD...) and later ones as
    GeneralizedTime (YYYYMMDD...)."""
    start = dt.datetime(year - 1, 6, 1, 12, 30, 45, tzinfo=dt.UTC)
    authority = issue_authority(days=800, now=start)
    bundle = issue_serving(authority, HOSTS, days=400, now=start)
    expires = not_valid_after(bundle.cert)
    assert expires == cryptography_reading(bundle.cert)
    assert expires.year == year  # 400 days on, less the issuer's clock-skew allowance
    assert expires.tzinfo is dt.UTC


def test_text_around_the_block_is_ignored() -> None:
    bundle = issue_bundle(HOSTS)
    pem = b"subject=CN = webhook\nissuer=CN = ca\n" + bundle.cert + b"\n# trailing words\n"
    assert not_valid_after(pem) == cryptography_reading(bundle.cert)


@pytest.mark.parametrize(
    ("pem", "fragment"),
    [
        (b"", "no -----BEGIN CERTIFICATE----- block"),
        (b"not a certificate at all", "no -----BEGIN CERTIFICATE----- block"),
        (issue_bundle(HOSTS).key, "no -----BEGIN CERTIFICATE----- block"),
        (
            b"-----BEGIN CERTIFICATE-----\nMAMCAQE=\n-----END CERTIFICATE-----\n",
            "tag 0x02 where 0x30 belongs",
        ),
        (
            b"-----BEGIN CERTIFICATE-----\nMIIBCg==\n-----END CERTIFICATE-----\n",
            "ends early",
        ),
        # base64 decoding skips what is not base64: nothing is left to read.
        (b"-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n", "ends early"),
    ],
    ids=["empty", "prose", "a private key", "not a sequence", "truncated", "not base64"],
)
def test_what_is_not_a_certificate_is_a_value_error(pem: bytes, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        not_valid_after(pem)


def test_every_truncation_of_a_real_certificate_is_a_value_error() -> None:
    der = ssl.PEM_cert_to_DER_cert(issue_bundle(HOSTS).cert.decode())
    for cut in range(len(der)):
        body = base64.encodebytes(der[:cut])
        pem = b"-----BEGIN CERTIFICATE-----\n" + body + b"-----END CERTIFICATE-----\n"
        with pytest.raises(ValueError, match="certificate DER ends early"):
            not_valid_after(pem)
