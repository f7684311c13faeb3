"""The kustomize pieces that carry a certificate bundle into a cluster.

`kubectl apply -k` of the `certs` command's output directory installs the base
manifests plus two things the base cannot know: the `kubernetes.io/tls`
Secret the webhook mounts (with `ca.crt`, as cert-manager writes it) and the
CA in the webhook configuration's `caBundle`, which kube-apiserver uses to
trust the webhook. Both come from the same run, so they always match.
"""

from __future__ import annotations

import base64
from typing import Any

SECRET_NAME = "feedbackstore-webhook-tls"  # noqa: S105 (a name, not a password)
WEBHOOK_CONFIGURATION = "feedbackstore-webhook"
WEBHOOK_NAME = "validate.feedbackstores.agents.ctxmesh.ai"
# The DELETE-only entry that warns when agents still use a store (SPEC §7).
DELETE_WEBHOOK_NAME = "warn-delete.feedbackstores.agents.ctxmesh.ai"
SECRET_FILE = "secret.yaml"  # noqa: S105 (a file name)
PATCH_FILE = "cabundle-patch.yaml"
KUSTOMIZATION_FILE = "kustomization.yaml"
_LABELS = {
    "app.kubernetes.io/name": "feedbackstore-webhook",
    "app.kubernetes.io/component": "webhook",
    "app.kubernetes.io/part-of": "feedbackstore-webhook",
}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def tls_secret(namespace: str, *, ca_cert: bytes, cert: bytes, key: bytes) -> dict[str, Any]:
    """The serving pair as a `kubernetes.io/tls` Secret, plus `ca.crt` like cert-manager's."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": SECRET_NAME, "namespace": namespace, "labels": dict(_LABELS)},
        "type": "kubernetes.io/tls",
        "data": {"ca.crt": b64(ca_cert), "tls.crt": b64(cert), "tls.key": b64(key)},
    }


def cabundle_patch(ca_cert: bytes) -> dict[str, Any]:
    """A strategic-merge patch: webhooks merge by `name`, so only `caBundle` changes."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": WEBHOOK_CONFIGURATION},
        "webhooks": [
            {"name": name, "clientConfig": {"caBundle": b64(ca_cert)}}
            for name in (WEBHOOK_NAME, DELETE_WEBHOOK_NAME)
        ],
    }


def kustomization(base: str) -> dict[str, Any]:
    """An overlay of `base` (the manifests directory or a remote URL) with the Secret and patch."""
    return {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [base, SECRET_FILE],
        "patches": [{"path": PATCH_FILE}],
    }
