"""What the certificates default to: names, lifetimes, key type, declared once.

A module of its own, importing nothing heavier than the standard library, so the
`certs` command can take these defaults for its flags and `--help` without
loading `cryptography` (every command builds every subcommand's parser).
"""

from __future__ import annotations

import enum
from typing import Final

# The shipped manifests' install: the Service the serving certificate is named for.
DEFAULT_NAMESPACE: Final = "feedbackstore-system"
DEFAULT_SERVICE: Final = "feedbackstore-webhook"

CA_DAYS: Final = 3650
SERVING_DAYS: Final = 365


class KeyType(enum.StrEnum):
    ECDSA = "ecdsa"
    RSA = "rsa"


# ECDSA P-256: a full TLS handshake costs about half of an RSA-2048 one (see issue.py).
DEFAULT_KEY_TYPE: Final = KeyType.ECDSA
