"""The serving certificate in the Secret: trusted by the caBundle, named for the host, in date,
asked apart as kube-apiserver (a Go client) asks: a chain from the leaf (and intermediates served
with it) to a caBundle CA, then the dialled host against the SANs only (never the CN)."""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Sequence
from typing import Any, Final

from cryptography import x509

from webhook.certs.own import cert_name, chain_to, load_certificates, utc_minute
from webhook.certs.renewal import hostname_error, sans
from webhook.doctor.registration import client_config
from webhook.doctor.result import CheckResult, fail, ok, skip, warn
from webhook.doctor.snapshot import Fetched, Unreadable

CA_BUNDLE: Final = "ca-bundle"
NAMES: Final = "certificate-names"
EXPIRY: Final = "certificate-expiry"
WARN_DAYS: Final = 30
_RENEW: Final = (
    "feedbackstore-webhook certs --out-dir certs && kubectl apply -k certs/  "
    "(with cert-manager: kubectl -n <NS> describe certificate)"
)


def _base64_pem(text: object) -> list[x509.Certificate]:
    if not isinstance(text, str):
        return []
    try:
        return load_certificates(base64.b64decode(text, validate=True))
    except ValueError:  # binascii.Error, or a text not ASCII
        return []


def ca_bundle(entry: dict[str, Any]) -> list[x509.Certificate] | None:
    """The CAs an entry trusts; None when it has no caBundle (system roots are used)."""
    text = client_config(entry, "caBundle")
    return _base64_pem(text) if text else None


def check_serving(
    secret: Fetched, secret_ref: str, bundle: list[x509.Certificate] | None, host: str,
    now: dt.datetime,
) -> list[CheckResult]:  # fmt: skip
    if isinstance(secret, Unreadable):
        return _without_certificate(
            f"cannot read Secret {secret_ref}: {secret.reason}",
            "run the doctor with credentials that may get Secrets in that namespace",
        )
    if secret is None:
        return _without_certificate(f"Secret {secret_ref} not found", _RENEW)
    data = secret.get("data")
    data = data if isinstance(data, dict) else {}
    chain = _base64_pem(data.get("tls.crt"))  # leaf first, then intermediates
    if not chain:
        return _without_certificate(
            f"Secret {secret_ref} has no PEM certificate under tls.crt", _RENEW
        )
    return [
        check_trust(chain, _base64_pem(data.get("ca.crt")), bundle),
        check_names(chain[0], host),
        check_expiry(chain, bundle or [], now),
    ]


def check_trust(
    chain: list[x509.Certificate], ca: list[x509.Certificate], bundle: list[x509.Certificate] | None
) -> CheckResult:
    """`ca` is the Secret's `ca.crt`: when it signed the leaf, the fix is to put it in caBundle."""
    leaf = chain[0]
    if bundle is None:
        fill = (
            "kubectl apply -k certs/ fills every entry's caBundle (feedbackstore-webhook certs "
            "--ca-bundle --cert --key for a certificate of your own)"
        )
        if ca and chain_to(leaf, chain[1:], ca):
            return fail(
                CA_BUNDLE,
                f"no caBundle: kube-apiserver checks {cert_name(leaf)} against its system roots, "
                f"but the Secret's own CA {cert_name(ca[0])} issued it: 'x509: certificate "
                "signed by unknown authority'",
                fill,
            )
        return warn(
            CA_BUNDLE,
            "no caBundle: kube-apiserver trusts its own system roots, which the doctor cannot see",
            fill,
        )
    if ca and chain_to(leaf, chain[1:], ca):
        fix = (
            "the Secret's ca.crt signed it: put that in caBundle (`kubectl apply -k certs/` does, "
            "or cert-manager's inject-ca-from annotation)"
        )
    else:
        fix = "reissue both from one run: " + _RENEW
    if not bundle:
        return fail(CA_BUNDLE, "caBundle holds no PEM certificate", fix)
    path = chain_to(leaf, chain[1:], bundle)
    if path is not None:
        return ok(CA_BUNDLE, f"caBundle CA {cert_name(path[-1])} verifies {cert_name(leaf)}")
    issuers = ", ".join(cert_name(cert) for cert in bundle)
    return fail(
        CA_BUNDLE,
        f"caBundle ({issuers}) does not verify the serving certificate, issued by "
        f"{leaf.issuer.rfc4514_string() or '(no issuer name)'}: kube-apiserver answers "
        "'x509: certificate signed by unknown authority'",
        fix,
    )


def check_names(leaf: x509.Certificate, host: str) -> CheckResult:
    if not host:
        return fail(NAMES, "the registration has no clientConfig to match", "set clientConfig")
    mismatch = hostname_error(leaf, host)
    if mismatch is None:
        dns, ips = sans(leaf)
        return ok(NAMES, f"valid for {host} ({', '.join([*dns, *map(str, ips)])})")
    return fail(
        NAMES,
        f"not valid for {host}; kube-apiserver answers '{mismatch}'",
        "issue it for the host the registration calls: feedbackstore-webhook certs "
        "--namespace NS --service NAME (--host for a url:) --force && kubectl apply -k certs/",
    )


def check_expiry(
    chain: Sequence[x509.Certificate], bundle: Sequence[x509.Certificate], now: dt.datetime
) -> CheckResult:
    """The earliest end of validity along leaf -> CA, and any certificate not yet valid."""
    path = chain_to(chain[0], chain[1:], bundle) or list(chain[:1])
    early = next((cert for cert in path if cert.not_valid_before_utc > now), None)
    if early is not None:
        return fail(
            EXPIRY,
            f"{cert_name(early)} is not valid before "
            f"{utc_minute(early.not_valid_before_utc)} (clock skew?)",
            "check the clocks of the issuer and the cluster, then reissue",
        )
    first = min(path, key=lambda cert: cert.not_valid_after_utc)
    end = first.not_valid_after_utc
    days = (end - now).days
    which = "serving certificate" if first is path[0] else f"CA {cert_name(first)}"
    if end <= now:
        return fail(
            EXPIRY,
            f"{which} expired on {utc_minute(end)}: kube-apiserver answers "
            "'x509: certificate has expired or is not yet valid'",
            _RENEW,
        )
    if days < WARN_DAYS:
        return warn(EXPIRY, f"{which} expires on {utc_minute(end)}, in {days} days", _RENEW)
    return ok(EXPIRY, f"{which} expires on {utc_minute(end)}, in {days} days")


def _without_certificate(why: str, fix: str) -> list[CheckResult]:
    return [fail(CA_BUNDLE, why, fix), skip(NAMES, why), skip(EXPIRY, why)]
