"""What the doctor looks at: the names it was given and the objects fetched for them.

Objects are plain dicts as the API server sends them; `None` means 404 (not
there), `Unreadable` means the server refused or failed to give it (403, 5xx),
which a check reports instead of guessing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from webhook.certs.defaults import DEFAULT_NAMESPACE, DEFAULT_SERVICE
from webhook.certs.overlay import SECRET_NAME, WEBHOOK_CONFIGURATION
from webhook.status.settings import LEASE_NAME

DEFAULT_PROBE_NAMESPACE: Final = "default"
# Kubernetes' canonical label on every namespace, and where the cluster's own system lives.
NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"
KUBE_SYSTEM: Final = "kube-system"
SERVICE_NAME_LABEL: Final = "kubernetes.io/service-name"


@dataclass(frozen=True, slots=True)
class Unreadable:
    """An object the server would not give us, in its own words (`forbidden: ...`)."""

    reason: str


Fetched = dict[str, Any] | Unreadable | None


@dataclass(frozen=True, slots=True)
class Target:
    """The install the doctor examines; defaults are the shipped manifests' names."""

    namespace: str = DEFAULT_NAMESPACE
    webhook_configuration: str = WEBHOOK_CONFIGURATION
    service: str = DEFAULT_SERVICE
    secret: str = SECRET_NAME
    lease: str = LEASE_NAME
    probe_namespace: str = DEFAULT_PROBE_NAMESPACE
    store_namespace: str | None = None


@dataclass(frozen=True, slots=True)
class ProbeOutcome:
    """What a server-side dry-run create of the probe store came back with.

    `status` is the HTTP status (None: no answer at all), `warnings` the texts of
    the `Warning` headers, `message` the Status message of a refusal.
    """

    status: int | None
    warnings: tuple[str, ...] = ()
    message: str = ""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Everything fetched for one run. Namespaces are keyed by name (for the selector check)."""

    crd: Fetched
    configuration: Fetched
    secret: Fetched
    service: Fetched
    endpoint_slices: list[dict[str, Any]] | Unreadable | None
    lease: Fetched
    stores: list[dict[str, Any]] | Unreadable | None
    probe: ProbeOutcome | None
    namespaces: dict[str, Fetched] = field(default_factory=dict)
