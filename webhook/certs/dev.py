"""Throwaway certificates for `serve --dev` and local experiments.

One certificate covers both ways a developer reaches the server: loopback
(`localhost`, `127.0.0.1`, `::1`) and the in-cluster names of the default
Service, so the same files also work behind `kubectl port-forward` or in a kind
cluster.
"""

from __future__ import annotations

import pathlib
from collections.abc import Sequence

from webhook.certs.defaults import DEFAULT_NAMESPACE, DEFAULT_SERVICE
from webhook.certs.files import ServingFiles
from webhook.certs.issue import service_hosts
from webhook.certs.renewal import ensure_certificates

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")


def dev_hosts() -> tuple[str, ...]:
    return LOOPBACK_HOSTS + service_hosts(DEFAULT_SERVICE, DEFAULT_NAMESPACE)


def ensure_dev_certificates(
    out_dir: pathlib.Path, hosts: Sequence[str] | None = None
) -> ServingFiles:
    """CA and serving files in `out_dir`, kept while they cover `hosts` and are not near expiry."""
    files, _ = ensure_certificates(out_dir, dev_hosts() if hosts is None else tuple(hosts))
    return files
