"""Where certificate files live and how they are written.

The names are the keys of a `kubernetes.io/tls` Secret (`tls.crt`, `tls.key`,
`ca.crt`), so a directory the `certs` command wrote, a mounted Secret and a
cert-manager Secret all look the same to `serve`. Private keys are created
mode 0600 from the first byte (never chmod-ed after the fact) and every file is
replaced atomically, so a watcher never reads half a PEM.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import tempfile
from dataclasses import dataclass

from webhook.certs.issue import Bundle

CA_CERT_NAME = "ca.crt"
CA_KEY_NAME = "ca.key"
CERT_NAME = "tls.crt"
KEY_NAME = "tls.key"

PRIVATE_MODE = 0o600
PUBLIC_MODE = 0o644
DIR_MODE = 0o700


@dataclass(frozen=True, slots=True)
class ServingFiles:
    """Paths of the CA certificate and of the serving certificate and key `serve` loads."""

    ca_cert: pathlib.Path
    cert: pathlib.Path
    key: pathlib.Path

    @property
    def ca_key(self) -> pathlib.Path:
        """The CA's private key, kept beside the CA so renewals keep the same caBundle."""
        return self.ca_cert.with_name(CA_KEY_NAME)

    @classmethod
    def in_dir(cls, out_dir: pathlib.Path) -> ServingFiles:
        return cls(out_dir / CA_CERT_NAME, out_dir / CERT_NAME, out_dir / KEY_NAME)


def write_bundle(out_dir: pathlib.Path, bundle: Bundle) -> ServingFiles:
    """Write all four PEM files; keys first, so a watcher never pairs a new cert with an old key."""
    out_dir.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    files = ServingFiles.in_dir(out_dir)
    write_atomically(files.ca_key, bundle.ca_key, PRIVATE_MODE)
    write_atomically(files.ca_cert, bundle.ca_cert, PUBLIC_MODE)
    write_atomically(files.key, bundle.key, PRIVATE_MODE)
    write_atomically(files.cert, bundle.cert, PUBLIC_MODE)
    return files


def write_atomically(path: pathlib.Path, data: bytes, mode: int) -> None:
    """Write to a sibling temp file created with `mode`, then rename it over `path`."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def read_optional(path: pathlib.Path) -> bytes | None:
    """The file's bytes, or None when it is absent or unreadable (then it gets reissued)."""
    try:
        return path.read_bytes()
    except OSError:
        return None
