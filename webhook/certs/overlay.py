"""Write the kustomize overlay next to the certificate files."""

from __future__ import annotations

import pathlib

from webhook.certs.files import PRIVATE_MODE, PUBLIC_MODE, ServingFiles, write_atomically
from webhook.certs.kustomize import (
    KUSTOMIZATION_FILE,
    PATCH_FILE,
    SECRET_FILE,
    cabundle_patch,
    kustomization,
    tls_secret,
)
from webhook.manifests.render import render_yaml

_HEADER = "Written by `feedbackstore-webhook certs`; rerun it rather than editing this file."


def write_overlay(out_dir: pathlib.Path, files: ServingFiles, namespace: str, base: str) -> None:
    """secret.yaml (holds the private key: mode 0600), the caBundle patch and the kustomization."""
    ca_cert = files.ca_cert.read_bytes()
    secret = tls_secret(
        namespace, ca_cert=ca_cert, cert=files.cert.read_bytes(), key=files.key.read_bytes()
    )
    write_atomically(
        out_dir / SECRET_FILE, render_yaml(secret, header=_HEADER).encode(), PRIVATE_MODE
    )
    patch = render_yaml(cabundle_patch(ca_cert), header=_HEADER).encode()
    write_atomically(out_dir / PATCH_FILE, patch, PUBLIC_MODE)
    overlay = render_yaml(kustomization(base), header=_HEADER).encode()
    write_atomically(out_dir / KUSTOMIZATION_FILE, overlay, PUBLIC_MODE)
