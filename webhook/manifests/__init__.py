"""Generators for the Kubernetes manifests that depend on the rules.

The CRD's OpenAPI schema and CEL rules are derived from `webhook.rules`, never
written by hand, so the fourth place the verdict is enforced (SPEC §2) cannot
drift from the other three.
"""

from webhook.manifests.crd import crd_manifest
from webhook.manifests.render import render_yaml

__all__ = ["crd_manifest", "render_yaml"]
