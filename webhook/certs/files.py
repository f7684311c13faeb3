"""Certificate files, named as the keys of a `kubernetes.io/tls` Secret so that `serve` reads a
directory `certs` wrote, a mounted Secret and cert-manager's alike. Keys are mode 0600 from the
first byte, and every file is replaced atomically: a watcher never reads half a PEM."""

from __future__ import annotations

import contextlib
import os
import pathlib
import tempfile
from dataclasses import dataclass

from webhook.certs.issue import Bundle

PRIVATE_MODE = 0o600
PUBLIC_MODE = 0o644


@dataclass(frozen=True, slots=True)
class ServingFiles:
    ca_cert: pathlib.Path
    cert: pathlib.Path
    key: pathlib.Path

    @property
    def ca_key(self) -> pathlib.Path:
        """Kept beside the CA so renewals keep the same caBundle."""
        return self.ca_cert.with_name("ca.key")

    @classmethod
    def in_dir(cls, out_dir: pathlib.Path) -> ServingFiles:
        return cls(out_dir / "ca.crt", out_dir / "tls.crt", out_dir / "tls.key")


def write_bundle(out_dir: pathlib.Path, bundle: Bundle) -> ServingFiles:
    """Keys first, so a watcher never pairs a new certificate with an old key."""
    out_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    files = ServingFiles.in_dir(out_dir)
    write_atomically(files.ca_key, bundle.ca_key, PRIVATE_MODE)
    write_atomically(files.ca_cert, bundle.ca_cert, PUBLIC_MODE)
    write_atomically(files.key, bundle.key, PRIVATE_MODE)
    write_atomically(files.cert, bundle.cert, PUBLIC_MODE)
    return files


def write_atomically(path: pathlib.Path, data: bytes, mode: int) -> None:
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
    """None when absent or unreadable: then it gets reissued."""
    try:
        return path.read_bytes()
    except OSError:
        return None
