"""Certificates for the webhook's TLS port: a throwaway CA and a serving certificate.

kube-apiserver only calls a webhook over TLS it can verify, so every install
path needs a CA bundle and a serving certificate whose SANs cover the Service's
DNS names. This package issues both (`issue`), writes them with private keys
mode 0600 (`files`), keeps or renews them (`reuse`, `renewal`; `dev` for
`serve --dev`), and renders the kustomize overlay that carries them into a
cluster (`kustomize`, `overlay`). What they default to (the shipped Service's
names, lifetimes, key type) is declared in `defaults`, which loads no `cryptography`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

from webhook.certs.defaults import DEFAULT_NAMESPACE, DEFAULT_SERVICE, KeyType

if TYPE_CHECKING:
    from webhook.certs.dev import dev_hosts, ensure_dev_certificates
    from webhook.certs.files import ServingFiles, write_bundle
    from webhook.certs.issue import Bundle, issue_bundle, service_hosts
    from webhook.certs.renewal import ensure_certificates

# What needs `cryptography`, by module, imported on first use: importing `webhook.certs.defaults`
# (as the `certs` command's parser does, for every command) must not load it.
_LAZY: Final = {
    "Bundle": "issue",
    "ServingFiles": "files",
    "dev_hosts": "dev",
    "ensure_certificates": "renewal",
    "ensure_dev_certificates": "dev",
    "issue_bundle": "issue",
    "service_hosts": "issue",
    "write_bundle": "files",
}

__all__ = [
    "DEFAULT_NAMESPACE",
    "DEFAULT_SERVICE",
    "Bundle",
    "KeyType",
    "ServingFiles",
    "dev_hosts",
    "ensure_certificates",
    "ensure_dev_certificates",
    "issue_bundle",
    "service_hosts",
    "write_bundle",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
