"""TLS settings for the webhook port and loading one certificate/key pair.

kube-apiserver speaks TLS 1.2 and 1.3 with ECDHE and AEAD ciphers, so nothing
older is accepted. A pair is always loaded into a fresh context: OpenSSL drops
a context's private key when given a certificate that does not match it.

With a client CA (`serve --client-ca-file`) the webhook port requires a client
certificate it signed, so only a kube-apiserver holding one gets past TLS; the
kubelet's probes carry none, hence a probe context with the same pair and no
client verification.
"""

from __future__ import annotations

import datetime as dt
import pathlib
import ssl
from dataclasses import dataclass
from typing import Final, NoReturn

from webhook.server.leaf_expiry import not_valid_after

# TLS 1.2 suites (TLS 1.3 has its own, all AEAD): forward secrecy and AEAD only.
TLS12_CIPHERS: Final = "ECDHE+AESGCM:ECDHE+CHACHA20"


class CertificateError(Exception):
    """A certificate/key pair that cannot be served; the message says which file and why."""


@dataclass(frozen=True, slots=True)
class LoadedPair:
    """Server contexts holding one pair, and the served certificate's expiry.

    `context` serves the webhook port (verifying client certificates when a
    client CA was given); `probe_context` serves the probe port and never asks
    for one (it is `context` itself when no client CA was given).
    """

    context: ssl.SSLContext
    not_after: dt.datetime
    probe_context: ssl.SSLContext


def server_context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_ciphers(TLS12_CIPHERS)
    context.options |= (
        ssl.OP_NO_COMPRESSION | ssl.OP_CIPHER_SERVER_PREFERENCE | ssl.OP_NO_RENEGOTIATION
    )
    # kube-apiserver's Go client keeps no TLS session cache, so session tickets would
    # only cost every new connection an encryption and a round of bytes for nothing.
    context.num_tickets = 0
    return context


def load_pair(
    cert_file: pathlib.Path, key_file: pathlib.Path, client_ca_file: pathlib.Path | None = None
) -> LoadedPair:
    """New contexts serving `cert_file` (leaf first, then chain) with `key_file`.

    With `client_ca_file`, the webhook context requires a client certificate
    that this CA bundle (PEM, one or more certificates) signed.
    """
    try:
        expires = not_valid_after(cert_file.read_bytes())
    except OSError as error:
        raise CertificateError(f"cannot read certificate {cert_file}: {error}") from None
    except ValueError as error:
        raise CertificateError(f"{cert_file} is not a PEM certificate: {error}") from None
    context = _serving(cert_file, key_file)
    if client_ca_file is None:
        return LoadedPair(context, expires, context)
    try:
        context.load_verify_locations(cafile=client_ca_file)
    except (OSError, ssl.SSLError) as error:
        raise CertificateError(
            f"cannot load client CA {client_ca_file}: {_ca_reason(error)}; "
            "it must hold the PEM certificate(s) of the CA that signs kube-apiserver's "
            "client certificate"
        ) from None
    context.verify_mode = ssl.CERT_REQUIRED
    return LoadedPair(context, expires, _serving(cert_file, key_file))


def _serving(cert_file: pathlib.Path, key_file: pathlib.Path) -> ssl.SSLContext:
    context = server_context()
    try:
        context.load_cert_chain(cert_file, key_file, password=_refuse_password)
    except (OSError, ssl.SSLError, ValueError) as error:
        raise CertificateError(
            f"cannot serve {cert_file} with key {key_file}: {_reason(error)}"
        ) from None
    return context


def _refuse_password() -> NoReturn:
    # Without a callback OpenSSL would prompt on the terminal and hang the server.
    raise ValueError("the private key is encrypted; serve an unencrypted key")


def _reason(error: BaseException) -> str:
    if isinstance(error, ssl.SSLError) and error.reason == "KEY_VALUES_MISMATCH":
        return "the private key does not match the certificate"
    return str(error)


def _ca_reason(error: OSError) -> str:
    if isinstance(error, ssl.SSLError) and error.reason == "NO_CERTIFICATE_OR_CRL_FOUND":
        return "no PEM certificate in it"
    return str(error)
