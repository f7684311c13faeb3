"""The names the shipped install gives its objects, stated once for every component that looks
for them.

The manifests under manifests/ (and the Helm chart generated from them) create these objects;
`doctor` looks them up and names them in its hints, `certs` issues the serving certificate for
the Service and writes the Secret and the `caBundle` patch, `serve` listens on the port, and the
status writer takes its Lease, its field manager and its metrics port from here. Standard
library only: every command's parser reads it for its defaults. tests/webhook/test_install.py
reads the shipped YAML and fails when a name there and here part.
"""

from __future__ import annotations

from typing import Final, NamedTuple

NAMESPACE: Final = "feedbackstore-system"

# Kubernetes' recommended labels, which every shipped object carries.
NAME_LABEL: Final = "app.kubernetes.io/name"
COMPONENT_LABEL: Final = "app.kubernetes.io/component"
PART_OF_LABEL: Final = "app.kubernetes.io/part-of"
PART_OF: Final = "feedbackstore-webhook"


class Component(NamedTuple):
    """One of the two Deployments, or the uninstall's cleanup Job: its name (also its
    ServiceAccount's, its PodDisruptionBudget's and its `app.kubernetes.io/name`) and its
    component label."""

    name: str
    component: str

    @property
    def labels(self) -> dict[str, str]:
        """The labels its objects carry."""
        return {NAME_LABEL: self.name, COMPONENT_LABEL: self.component, PART_OF_LABEL: PART_OF}

    @property
    def selector(self) -> str:
        """A label selector for its pods, as `kubectl get pods -l` takes it."""
        return f"{COMPONENT_LABEL}={self.component}"


WEBHOOK: Final = Component("feedbackstore-webhook", "webhook")
STATUS_WRITER: Final = Component("feedbackstore-status-writer", "status-writer")
# `feedbackstore-webhook cleanup` as a Job (manifests/cleanup/, the chart's post-delete hook).
CLEANUP: Final = Component("feedbackstore-cleanup", "cleanup")

# The Service kube-apiserver calls (the serving certificate is issued for its DNS names), on
# SERVICE_PORT, forwarded to the webhook container's `https` port.
SERVICE: Final = WEBHOOK.name
SERVICE_PORT: Final = 443
PORT: Final = 8443
# The one path the webhook answers reviews on; every entry's clientConfig calls it.
VALIDATE_PATH: Final = "/validate"
# The `kubernetes.io/tls` Secret the webhook mounts.
SECRET: Final = "feedbackstore-webhook-tls"  # noqa: S105 (a name, not a password)

# The ValidatingWebhookConfiguration and its three entries: the one judging FeedbackStores, the
# DELETE-only one that warns when agents still use a store, the one judging the inline form.
WEBHOOK_CONFIGURATION: Final = "feedbackstore-webhook"
JUDGE_ENTRY: Final = "validate.feedbackstores.agents.ctxmesh.ai"
DELETE_ENTRY: Final = "warn-delete.feedbackstores.agents.ctxmesh.ai"
AGENT_ENTRY: Final = "validate.agentdeployments.agents.ctxmesh.ai"
ENTRIES: Final = (JUDGE_ENTRY, DELETE_ENTRY, AGENT_ENTRY)

# What the ValidatingAdmissionPolicies' bindings do on a problem (`manifests policy --action`):
# Deny as the webhook does; Warn or Audit to roll the policies out before they refuse anything.
POLICY_ACTIONS: Final = ("Deny", "Warn", "Audit")
DEFAULT_POLICY_ACTION: Final = "Deny"

# The status writer's Lease (its Role grants that name alone) and the field manager of its
# writes: its own name, which is how `kubectl get --show-managed-fields` tells its fields.
LEASE: Final = STATUS_WRITER.name
FIELD_MANAGER: Final = STATUS_WRITER.name
# The status writer's `metrics` port (`--metrics-port`'s default).
METRICS_PORT: Final = 8080
