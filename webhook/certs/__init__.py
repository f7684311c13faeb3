"""Certificates for the webhook's TLS port: a throwaway CA and a serving certificate.

kube-apiserver only calls a webhook over TLS it can verify, so every install
path needs a CA bundle and a serving certificate whose SANs cover the Service's
DNS names. This package issues both (`issue`), writes them with private keys
mode 0600 (`files`), keeps or renews them (`reuse`, `renewal`; `dev` for
`serve --dev`), and renders the kustomize overlay that carries them into a
cluster (`kustomize`, `overlay`).
"""

from webhook.certs.dev import DEFAULT_NAMESPACE, DEFAULT_SERVICE, dev_hosts, ensure_dev_certificates
from webhook.certs.files import ServingFiles, write_bundle
from webhook.certs.issue import Bundle, KeyType, issue_bundle, service_hosts
from webhook.certs.renewal import ensure_certificates

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
