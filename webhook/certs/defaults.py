"""What the certificates default to, in a module without `cryptography`: every command builds
the `certs` parser, whose flags and `--help` take these."""

from __future__ import annotations

import enum
from typing import Final

# The Service, Secret and webhook configuration they are for are the install's (`install`).
CA_DAYS: Final = 3650
SERVING_DAYS: Final = 365


class KeyType(enum.StrEnum):
    ECDSA = "ecdsa"
    RSA = "rsa"


# ECDSA P-256: a full TLS handshake costs about half of an RSA-2048 one (see issue.py).
DEFAULT_KEY_TYPE: Final = KeyType.ECDSA
