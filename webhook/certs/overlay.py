"""The kustomize overlay written beside the certificate files: `kubectl apply -k` of it installs
the base manifests plus the `kubernetes.io/tls` Secret the webhook mounts and the CA in the webhook
configuration's `caBundle`, both from the same run, so they always match."""

from __future__ import annotations

import base64
import pathlib

from webhook import install
from webhook.certs.files import PRIVATE_MODE, PUBLIC_MODE, ServingFiles, write_atomically
from webhook.manifests.render import render_yaml

SECRET_FILE = "secret.yaml"  # noqa: S105 (a file name)
PATCH_FILE = "cabundle-patch.yaml"
_HEADER = "Written by `feedbackstore-webhook certs`; rerun it rather than editing this file."


def write_overlay(out_dir: pathlib.Path, files: ServingFiles, namespace: str, base: str) -> None:
    """`base` is the manifests directory or a remote URL; secret.yaml holds a key: mode 0600."""
    ca_cert = base64.b64encode(files.ca_cert.read_bytes()).decode("ascii")
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": install.SECRET,
            "namespace": namespace,
            "labels": install.WEBHOOK.labels,
        },
        "type": "kubernetes.io/tls",  # with ca.crt, as cert-manager writes it
        "data": {
            "ca.crt": ca_cert,
            "tls.crt": base64.b64encode(files.cert.read_bytes()).decode("ascii"),
            "tls.key": base64.b64encode(files.key.read_bytes()).decode("ascii"),
        },
    }
    # A strategic-merge patch: webhooks merge by `name`, so only `caBundle` changes.
    patch = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": install.WEBHOOK_CONFIGURATION},
        "webhooks": [
            {"name": name, "clientConfig": {"caBundle": ca_cert}} for name in install.ENTRIES
        ],
    }
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [base, SECRET_FILE],
        "patches": [{"path": PATCH_FILE}],
    }
    written = ((SECRET_FILE, secret, PRIVATE_MODE), (PATCH_FILE, patch, PUBLIC_MODE))
    for name, document, mode in (*written, ("kustomization.yaml", kustomization, PUBLIC_MODE)):
        write_atomically(out_dir / name, render_yaml(document, header=_HEADER).encode(), mode)
