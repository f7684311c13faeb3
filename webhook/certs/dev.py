"""Throwaway certificates for `serve --dev`: loopback and the default Service's names, so the
same files work behind `kubectl port-forward` or in a kind cluster."""

from __future__ import annotations

import pathlib
from collections.abc import Sequence

from webhook import install
from webhook.certs.files import ServingFiles
from webhook.certs.issue import service_hosts
from webhook.certs.renewal import ensure_certificates


def dev_hosts() -> tuple[str, ...]:
    return ("localhost", "127.0.0.1", "::1", *service_hosts(install.SERVICE, install.NAMESPACE))


def ensure_dev_certificates(
    out_dir: pathlib.Path, hosts: Sequence[str] | None = None
) -> ServingFiles:
    return ensure_certificates(out_dir, dev_hosts() if hosts is None else tuple(hosts))[0]
