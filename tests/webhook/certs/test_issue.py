"""Certificate issuance: what kube-apiserver and TLS clients will check, checked first here.

Each certificate is verified with cryptography's own path builder (the
RFC 5280 / CA-Browser-Forum profile, stricter than Go's) for every name it
must serve, and the files are checked for the permissions a private key needs.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import ipaddress
import os
import pathlib
import re
import stat

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID
from cryptography.x509.verification import PolicyBuilder, Store, VerificationError

from webhook.certs.defaults import KeyType
from webhook.certs.dev import dev_hosts, ensure_dev_certificates
from webhook.certs.files import ServingFiles
from webhook.certs.issue import issue_bundle, service_hosts
from webhook.certs.renewal import ensure_certificates
from webhook.install import NAMESPACE as DEFAULT_NAMESPACE
from webhook.install import SERVICE as DEFAULT_SERVICE

SERVICE_HOSTS = service_hosts("feedbackstore-webhook", "feedbackstore-system")
NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


def load(pem: bytes) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem)


def verify(ca: x509.Certificate, leaf: x509.Certificate, host: str, at: dt.datetime) -> None:
    """Build and check the chain for `host` (DNS or IP SAN), as a TLS client would."""
    try:
        subject: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        subject = x509.DNSName(host)
    verifier = PolicyBuilder().store(Store([ca])).time(at).build_server_verifier(subject)
    chain = verifier.verify(leaf, [])
    assert chain[-1] == ca


def sans(cert: x509.Certificate) -> list[str]:
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return [str(n) for n in names.get_values_for_type(x509.DNSName)] + [
        str(ip) for ip in names.get_values_for_type(x509.IPAddress)
    ]


# ---------------------------------------------------------------- names and keys


def test_the_service_names_are_the_four_forms_kube_apiserver_may_use() -> None:
    assert service_hosts("hook", "ns") == (
        "hook",
        "hook.ns",
        "hook.ns.svc",
        "hook.ns.svc.cluster.local",
    )


def test_dev_hosts_cover_loopback_and_the_default_service() -> None:
    assert dev_hosts() == (
        "localhost",
        "127.0.0.1",
        "::1",
        *service_hosts(DEFAULT_SERVICE, DEFAULT_NAMESPACE),
    )


@pytest.mark.parametrize("host", SERVICE_HOSTS)
@pytest.mark.parametrize("key_type", list(KeyType))
def test_the_chain_verifies_for_every_service_name(key_type: KeyType, host: str) -> None:
    bundle = issue_bundle(SERVICE_HOSTS, key_type=key_type, now=NOW)
    verify(load(bundle.ca_cert), load(bundle.cert), host, NOW + dt.timedelta(days=1))


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "::1"])
def test_the_chain_verifies_for_loopback_names_and_ip_addresses(host: str) -> None:
    bundle = issue_bundle(dev_hosts(), now=NOW)
    verify(load(bundle.ca_cert), load(bundle.cert), host, NOW + dt.timedelta(days=1))


@pytest.mark.parametrize(
    "host",
    [
        "feedbackstore-webhook.default.svc",
        "evil.example",
        "127.0.0.2",
        "webhook.feedbackstore-system",
    ],
)
def test_the_chain_does_not_verify_for_a_name_it_does_not_carry(host: str) -> None:
    bundle = issue_bundle(SERVICE_HOSTS, now=NOW)
    unnamed = f"leaf certificate has no matching subjectAltName for {re.escape(host)} "
    with pytest.raises(VerificationError, match=unnamed):
        verify(load(bundle.ca_cert), load(bundle.cert), host, NOW + dt.timedelta(days=1))


def test_a_certificate_does_not_verify_under_another_ca() -> None:
    one, other = issue_bundle(SERVICE_HOSTS, now=NOW), issue_bundle(SERVICE_HOSTS, now=NOW)
    with pytest.raises(VerificationError, match="candidates exhausted: signature does not match"):
        verify(load(other.ca_cert), load(one.cert), SERVICE_HOSTS[2], NOW + dt.timedelta(days=1))


def test_the_chain_does_not_verify_after_expiry() -> None:
    bundle = issue_bundle(SERVICE_HOSTS, days=30, now=NOW)
    with pytest.raises(VerificationError, match="cert is not valid at validation time"):
        verify(
            load(bundle.ca_cert), load(bundle.cert), SERVICE_HOSTS[2], NOW + dt.timedelta(days=31)
        )


def test_the_sans_are_exactly_the_hosts_asked_for() -> None:
    bundle = issue_bundle(dev_hosts(), now=NOW)
    assert sorted(sans(load(bundle.cert))) == sorted(
        ["localhost", *service_hosts(DEFAULT_SERVICE, DEFAULT_NAMESPACE), "127.0.0.1", "::1"]
    )


def test_keys_are_ecdsa_p256_by_default() -> None:
    bundle = issue_bundle(SERVICE_HOSTS, now=NOW)
    for cert in (load(bundle.ca_cert), load(bundle.cert)):
        key = cert.public_key()
        assert isinstance(key, ec.EllipticCurvePublicKey)
        assert isinstance(key.curve, ec.SECP256R1)


def test_keys_are_rsa_2048_when_asked() -> None:
    bundle = issue_bundle(SERVICE_HOSTS, key_type=KeyType.RSA, now=NOW)
    for cert in (load(bundle.ca_cert), load(bundle.cert)):
        key = cert.public_key()
        assert isinstance(key, rsa.RSAPublicKey)
        assert key.key_size == 2048


def test_the_ca_may_sign_leaf_certificates_only() -> None:
    ca = load(issue_bundle(SERVICE_HOSTS, now=NOW).ca_cert)
    constraints = ca.extensions.get_extension_for_class(x509.BasicConstraints)
    assert constraints.critical
    assert (constraints.value.ca, constraints.value.path_length) == (True, 0)
    usage = ca.extensions.get_extension_for_class(x509.KeyUsage).value
    assert usage.key_cert_sign
    assert usage.crl_sign
    assert ca.subject == ca.issuer


@pytest.mark.parametrize("key_type", list(KeyType))
def test_the_serving_certificate_is_for_tls_servers_only(key_type: KeyType) -> None:
    leaf = load(issue_bundle(SERVICE_HOSTS, key_type=key_type, now=NOW).cert)
    constraints = leaf.extensions.get_extension_for_class(x509.BasicConstraints)
    assert constraints.critical
    assert constraints.value.ca is False
    usage = leaf.extensions.get_extension_for_class(x509.KeyUsage)
    assert usage.critical
    assert usage.value.digital_signature
    assert not usage.value.key_cert_sign
    assert usage.value.key_encipherment is (key_type is KeyType.RSA)
    eku = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.SERVER_AUTH]


def test_lifetimes_are_a_year_for_serving_and_ten_years_for_the_ca() -> None:
    bundle = issue_bundle(SERVICE_HOSTS, now=NOW)
    ca, leaf = load(bundle.ca_cert), load(bundle.cert)
    assert leaf.not_valid_after_utc - leaf.not_valid_before_utc == dt.timedelta(days=365)
    assert ca.not_valid_after_utc - ca.not_valid_before_utc == dt.timedelta(days=3650)
    skew = NOW - leaf.not_valid_before_utc
    assert dt.timedelta(0) < skew <= dt.timedelta(minutes=5), "back-dated a little for clock skew"


def test_a_custom_lifetime_is_honoured() -> None:
    leaf = load(issue_bundle(SERVICE_HOSTS, days=7, now=NOW).cert)
    assert leaf.not_valid_after_utc - leaf.not_valid_before_utc == dt.timedelta(days=7)


@pytest.mark.parametrize(
    ("hosts", "days", "ca_days", "why"),
    [
        pytest.param(
            (), 365, 3650, "a serving certificate needs at least one host name", id="no host at all"
        ),
        pytest.param(
            SERVICE_HOSTS,
            0,
            3650,
            "a certificate lifetime must be at least 1 day, not 0",
            id="a zero-day lifetime",
        ),
        pytest.param(
            SERVICE_HOSTS,
            -5,
            3650,
            "a certificate lifetime must be at least 1 day, not -5",
            id="a negative lifetime",
        ),
        pytest.param(
            SERVICE_HOSTS,
            400,
            365,
            "the CA must outlive the serving certificate",
            id="a CA that dies before its certificate",
        ),
    ],
)
def test_impossible_requests_are_refused(
    hosts: tuple[str, ...], days: int, ca_days: int, why: str
) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(why)}$"):
        issue_bundle(hosts, days=days, ca_days=ca_days, now=NOW)


@pytest.mark.parametrize(
    "host",
    [
        pytest.param("", id="an empty name"),
        pytest.param("bad host", id="a name with a space"),
        pytest.param("ünï.example", id="a unicode name not in its xn-- form"),
        pytest.param("a" * 64 + ".example", id="a label over 63 characters"),
        pytest.param("a." * 127 + "b", id="a name over 253 characters"),
        pytest.param("-leading.example", id="a label starting with a hyphen"),
        pytest.param("1.2.3.4/24", id="a network instead of an address"),
        pytest.param("two..dots", id="an empty label"),
    ],
)
def test_a_host_no_client_could_match_is_refused_by_name(host: str) -> None:
    with pytest.raises(ValueError, match="is not a DNS name or IP address"):
        issue_bundle(["localhost", host], now=NOW)


@pytest.mark.parametrize(
    "host", ["xn--n-xga.example", "*.feedbackstore-system.svc", "::1", "10.0.0.1"]
)
def test_wildcards_idna_names_and_ip_addresses_are_accepted(host: str) -> None:
    leaf = load(issue_bundle([host], now=NOW).cert)
    assert sans(leaf) == [host]


# ---------------------------------------------------------------- files


def mode(path: pathlib.Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_private_keys_are_written_0600_and_certificates_0644(tmp_path: pathlib.Path) -> None:
    files = ensure_dev_certificates(tmp_path / "certs")
    assert mode(files.key) == 0o600
    assert mode(files.ca_key) == 0o600
    assert mode(files.cert) == 0o644
    assert mode(files.ca_cert) == 0o644
    assert mode(tmp_path / "certs") == 0o700


def test_keys_stay_0600_under_a_permissive_umask(tmp_path: pathlib.Path) -> None:
    previous = os.umask(0)
    try:
        files = ensure_dev_certificates(tmp_path)
    finally:
        os.umask(previous)
    assert mode(files.key) == 0o600
    assert mode(files.ca_key) == 0o600


def test_files_are_named_like_the_keys_of_a_tls_secret(tmp_path: pathlib.Path) -> None:
    files = ensure_dev_certificates(tmp_path)
    assert (files.ca_cert.name, files.cert.name, files.key.name) == ("ca.crt", "tls.crt", "tls.key")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ca.crt", "ca.key", "tls.crt", "tls.key"]


def test_serving_files_is_a_frozen_value(tmp_path: pathlib.Path) -> None:
    files = ServingFiles.in_dir(tmp_path)
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'cert'"):
        files.cert = tmp_path / "other"  # type: ignore[misc]


def test_the_dev_certificate_is_kept_on_the_next_start(tmp_path: pathlib.Path) -> None:
    first = ensure_dev_certificates(tmp_path)
    before = {p: p.read_bytes() for p in (first.ca_cert, first.cert, first.key, first.ca_key)}
    second = ensure_dev_certificates(tmp_path)
    assert second == first
    assert {p: p.read_bytes() for p in before} == before


def test_the_dev_certificate_for_custom_hosts_covers_them(tmp_path: pathlib.Path) -> None:
    files = ensure_dev_certificates(tmp_path, ["webhook.test", "10.0.0.7"])
    leaf = load(files.cert.read_bytes())
    assert sorted(sans(leaf)) == ["10.0.0.7", "webhook.test"]
    verify(load(files.ca_cert.read_bytes()), leaf, "10.0.0.7", dt.datetime.now(dt.UTC))


# ---------------------------------------------------------------- keep, renew, start over


def snapshot(files: ServingFiles) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (files.ca_cert, files.ca_key, files.cert, files.key)}


@pytest.fixture
def issued(tmp_path: pathlib.Path) -> tuple[pathlib.Path, dict[str, bytes]]:
    files, outcome = ensure_certificates(tmp_path, SERVICE_HOSTS, now=NOW)
    assert outcome == "created"
    return tmp_path, snapshot(files)


def test_fitting_files_are_kept_byte_for_byte(
    issued: tuple[pathlib.Path, dict[str, bytes]],
) -> None:
    directory, before = issued
    files, outcome = ensure_certificates(directory, SERVICE_HOSTS, now=NOW + dt.timedelta(days=30))
    assert outcome == "kept"
    assert snapshot(files) == before


def test_more_than_30_days_left_keeps_a_year_long_certificate(
    issued: tuple[pathlib.Path, dict[str, bytes]],
) -> None:
    directory, _ = issued
    assert (
        ensure_certificates(directory, SERVICE_HOSTS, now=NOW + dt.timedelta(days=330))[1] == "kept"
    )


def test_a_short_certificate_is_renewed_in_its_last_third(tmp_path: pathlib.Path) -> None:
    ensure_certificates(tmp_path, SERVICE_HOSTS, days=9, now=NOW)
    assert (
        ensure_certificates(tmp_path, SERVICE_HOSTS, days=9, now=NOW + dt.timedelta(days=5))[1]
        == "kept"
    )
    renewed = ensure_certificates(tmp_path, SERVICE_HOSTS, days=9, now=NOW + dt.timedelta(days=7))
    assert renewed[1] == "renewed"


def test_a_subset_of_the_hosts_is_still_covered(
    issued: tuple[pathlib.Path, dict[str, bytes]],
) -> None:
    directory, _ = issued
    assert ensure_certificates(directory, SERVICE_HOSTS[2:3], now=NOW)[1] == "kept"


@pytest.mark.parametrize(
    ("hosts", "later"),
    [
        pytest.param(("other.svc",), 0, id="a host the certificate lacks"),
        pytest.param(SERVICE_HOSTS, 340, id="less than 30 days left"),
        pytest.param(SERVICE_HOSTS, 400, id="an expired certificate"),
    ],
)
def test_the_serving_certificate_is_renewed_from_the_same_ca(
    issued: tuple[pathlib.Path, dict[str, bytes]], hosts: tuple[str, ...], later: int
) -> None:
    directory, before = issued
    at = NOW + dt.timedelta(days=later)
    files, outcome = ensure_certificates(directory, hosts, now=at)
    after = snapshot(files)
    assert outcome == "renewed"
    assert (after["ca.crt"], after["ca.key"]) == (before["ca.crt"], before["ca.key"])
    assert after["tls.crt"] != before["tls.crt"]
    assert after["tls.key"] != before["tls.key"]
    for host in hosts:
        verify(load(after["ca.crt"]), load(after["tls.crt"]), host, at + dt.timedelta(hours=1))


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        pytest.param({"tls.crt": b"not a pem"}, "renewed", id="a garbled serving certificate"),
        pytest.param({"tls.key": b""}, "renewed", id="an empty serving key"),
        pytest.param({"tls.key": "other"}, "renewed", id="a serving key of another pair"),
        pytest.param({"tls.crt": "other"}, "renewed", id="a serving certificate of another CA"),
        pytest.param({"ca.key": None}, "created", id="a missing CA key"),
        pytest.param({"ca.crt": b"\x00\xff" * 100}, "created", id="a binary CA file"),
        pytest.param({"ca.key": "other"}, "created", id="a CA key of another CA"),
        pytest.param({"ca.crt": "leaf"}, "created", id="a leaf where the CA belongs"),
    ],
)
def test_damaged_files_are_replaced_never_trusted(
    issued: tuple[pathlib.Path, dict[str, bytes]],
    tmp_path_factory: pytest.TempPathFactory,
    damage: dict[str, object],
    expected: str,
) -> None:
    directory, before = issued
    other, _ = ensure_certificates(tmp_path_factory.mktemp("other"), SERVICE_HOSTS, now=NOW)
    for name, value in damage.items():
        path = directory / name
        if value is None:
            path.unlink()
        elif value == "other":
            path.write_bytes((other.cert.parent / name).read_bytes())
        elif value == "leaf":
            path.write_bytes(before["tls.crt"])
        else:
            assert isinstance(value, bytes)
            path.write_bytes(value)
    files, outcome = ensure_certificates(directory, SERVICE_HOSTS, now=NOW)
    assert outcome == expected
    verify(
        load(files.ca_cert.read_bytes()),
        load(files.cert.read_bytes()),
        SERVICE_HOSTS[2],
        NOW + dt.timedelta(hours=1),
    )


def test_force_starts_over_with_a_new_ca(issued: tuple[pathlib.Path, dict[str, bytes]]) -> None:
    directory, before = issued
    files, outcome = ensure_certificates(directory, SERVICE_HOSTS, force=True, now=NOW)
    assert outcome == "created"
    assert snapshot(files)["ca.crt"] != before["ca.crt"]


def test_a_ca_near_its_end_is_replaced(issued: tuple[pathlib.Path, dict[str, bytes]]) -> None:
    directory, before = issued
    at = NOW + dt.timedelta(days=3650 - 20)
    files, outcome = ensure_certificates(directory, SERVICE_HOSTS, now=at)
    assert outcome == "created"
    assert snapshot(files)["ca.crt"] != before["ca.crt"]


def test_asking_for_another_key_type_starts_over(
    issued: tuple[pathlib.Path, dict[str, bytes]],
) -> None:
    directory, _ = issued
    files, outcome = ensure_certificates(directory, SERVICE_HOSTS, key_type=KeyType.RSA, now=NOW)
    assert outcome == "created"
    assert isinstance(load(files.cert.read_bytes()).public_key(), rsa.RSAPublicKey)
    assert ensure_certificates(directory, SERVICE_HOSTS, key_type=KeyType.RSA, now=NOW)[1] == "kept"


def test_no_temporary_file_is_left_behind(issued: tuple[pathlib.Path, dict[str, bytes]]) -> None:
    directory, _ = issued
    ensure_certificates(directory, ("renew.me",), now=NOW)
    assert sorted(p.name for p in directory.iterdir()) == ["ca.crt", "ca.key", "tls.crt", "tls.key"]
