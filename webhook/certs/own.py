"""A certificate of your own, checked before it is installed as kube-apiserver will check it when
it calls the webhook: the serving chain verifies to a CA of the bundle (the caBundle of every
entry), the leaf names the host kube-apiserver dials, the key is the leaf's, every certificate on
the path is in date. A bundle may hold several CAs: that is how a CA rotation trusts both."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import ExtendedKeyUsageOID

from webhook.certs.renewal import common_name, hostname_error, issued_by

MAX_CHAIN: Final = 8


@dataclass(frozen=True, slots=True)
class OwnFiles:
    """What the files hold, as PEM text: `--ca-bundle`, `--cert` (leaf first), `--key`."""

    ca_bundle: bytes
    cert: bytes
    key: bytes


def load_certificates(data: bytes) -> list[x509.Certificate]:
    """Every PEM certificate in `data`, in order; none when there is none or one is malformed."""
    try:
        return list(x509.load_pem_x509_certificates(data))
    except ValueError:
        return []


def chain_to(
    leaf: x509.Certificate,
    intermediates: Sequence[x509.Certificate],
    roots: Sequence[x509.Certificate],
) -> list[x509.Certificate] | None:
    """leaf .. root when signatures link `leaf` to one of `roots`, else None (dates ignored)."""
    path = [leaf]
    for _ in range(MAX_CHAIN):
        current = path[-1]
        root = next((ca for ca in roots if issued_by(current, ca)), None)
        if root is not None:
            return path if root == current else [*path, root]
        parent = next((c for c in intermediates if c not in path and issued_by(current, c)), None)
        if parent is None:
            return None
        path.append(parent)
    return None


def problems(files: OwnFiles, hosts: Sequence[str], now: dt.datetime) -> list[str]:
    """What kube-apiserver would refuse, each a sentence naming the flag; empty: installable."""
    bundle = load_certificates(files.ca_bundle)
    chain = load_certificates(files.cert)
    found = []
    if not bundle:
        found.append("--ca-bundle holds no PEM certificate")
    if not chain:
        found.append("--cert holds no PEM certificate")
    key_problem = _key_problem(files.key, chain[0] if chain else None)
    if key_problem:
        found.append(key_problem)
    if not bundle or not chain:
        return found
    leaf = chain[0]
    path = chain_to(leaf, chain[1:], bundle)
    if path is None:
        issuers = ", ".join(cert_name(ca) for ca in bundle)
        found.append(
            f"--cert {cert_name(leaf)}, issued by {leaf.issuer.rfc4514_string() or '(no name)'}, "
            f"does not verify to a CA of --ca-bundle ({issuers}); kube-apiserver would answer "
            "'x509: certificate signed by unknown authority' (put the issuing CA in the bundle, "
            "and any intermediate after the leaf in --cert)"
        )
    found.extend(
        f"--cert is not valid for {host}, the name kube-apiserver calls: {error}"
        for host in hosts
        if (error := hostname_error(leaf, host)) is not None
    )
    if not _serves_tls(leaf):
        found.append(
            "--cert's extended key usage leaves out serverAuth; kube-apiserver would answer "
            "'x509: certificate specifies an incompatible key usage'"
        )
    found.extend(_dates(path or [leaf], now))
    return found


def _key_problem(key_pem: bytes, leaf: x509.Certificate | None) -> str | None:
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
    except TypeError:
        return "--key is encrypted; give it without a passphrase (the webhook reads it unattended)"
    except ValueError:
        return "--key holds no PEM private key"
    if leaf is not None and key.public_key() != leaf.public_key():
        return f"--key is not the key of --cert {cert_name(leaf)} (their public keys differ)"
    return None


def _serves_tls(leaf: x509.Certificate) -> bool:
    try:
        usages = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    except x509.ExtensionNotFound:
        return True  # no EKU: any usage, as Go reads it
    wanted = (ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE)
    return any(usage in usages for usage in wanted)


def _dates(path: Sequence[x509.Certificate], now: dt.datetime) -> list[str]:
    found = []
    for cert in path:
        if cert.not_valid_after_utc <= now:
            found.append(f"{cert_name(cert)} expired on {utc_minute(cert.not_valid_after_utc)}")
        elif cert.not_valid_before_utc > now:
            found.append(
                f"{cert_name(cert)} is not valid before {utc_minute(cert.not_valid_before_utc)} "
                "(check the issuer's clock)"
            )
    return found


def cert_name(cert: x509.Certificate) -> str:
    return f'"{common_name(cert) or cert.subject.rfc4514_string()}"'


def utc_minute(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC")
