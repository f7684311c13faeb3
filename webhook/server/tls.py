"""TLS settings for the webhook port and loading one certificate/key pair.

kube-apiserver speaks TLS 1.2 and 1.3 with ECDHE and AEAD ciphers; nothing
older is offered, so nothing older is accepted. A pair is always loaded into a
fresh context: OpenSSL drops a context's private key when it is given a
certificate that does not match it, so loading into the serving context would
break it on a bad pair.
"""

from __future__ import annotations

import datetime as dt
import pathlib
import ssl
from dataclasses import dataclass
from typing import Final, NoReturn

from cryptography import x509

# TLS 1.2 suites (TLS 1.3 has its own, all AEAD): forward secrecy and AEAD only.
TLS12_CIPHERS: Final = "ECDHE+AESGCM:ECDHE+CHACHA20"


class CertificateError(Exception):
    """A certificate/key pair that cannot be served; the message says which file and why."""


@dataclass(frozen=True, slots=True)
class LoadedPair:
    """A server context holding one pair, and the served certificate's expiry."""

    context: ssl.SSLContext
    not_after: dt.datetime


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


def load_pair(cert_file: pathlib.Path, key_file: pathlib.Path) -> LoadedPair:
    """A new context serving `cert_file` (leaf first, then chain) with `key_file`."""
    try:
        leaf = x509.load_pem_x509_certificate(cert_file.read_bytes())
    except OSError as error:
        raise CertificateError(f"cannot read certificate {cert_file}: {error}") from None
    except ValueError as error:
        raise CertificateError(f"{cert_file} is not a PEM certificate: {error}") from None
    context = server_context()
    try:
        context.load_cert_chain(cert_file, key_file, password=_refuse_password)
    except (OSError, ssl.SSLError, ValueError) as error:
        raise CertificateError(
            f"cannot serve {cert_file} with key {key_file}: {_reason(error)}"
        ) from None
    return LoadedPair(context, leaf.not_valid_after_utc)


def _refuse_password() -> NoReturn:
    # Without a callback OpenSSL would prompt on the terminal and hang the server.
    raise ValueError("the private key is encrypted; serve an unencrypted key")


def _reason(error: BaseException) -> str:
    if isinstance(error, ssl.SSLError) and error.reason == "KEY_VALUES_MISMATCH":
        return "the private key does not match the certificate"
    return str(error)
