"""What the doctor looks at: the names it was given and the objects fetched for them, plain dicts
as the API server sends them; `None` is a 404, `Unreadable` a refusal or failure (403, 5xx)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from webhook import install

# Kubernetes' canonical label on every namespace, and where the cluster's own system lives.
NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"
KUBE_SYSTEM: Final = "kube-system"
SERVICE_NAME_LABEL: Final = "kubernetes.io/service-name"


@dataclass(frozen=True, slots=True)
class Unreadable:
    reason: str  # in the server's own words (`forbidden: ...`)


Fetched = dict[str, Any] | Unreadable | None
FetchedList = list[dict[str, Any]] | Unreadable | None


@dataclass(frozen=True, slots=True)
class Target:
    namespace: str = install.NAMESPACE
    webhook_configuration: str = install.WEBHOOK_CONFIGURATION
    service: str = install.SERVICE
    secret: str = install.SECRET
    lease: str = install.LEASE
    probe_namespace: str = "default"
    store_namespace: str | None = None


@dataclass(frozen=True, slots=True)
class ProbeOutcome:
    """What the probe's dry-run create came back with; `message`: a refusal's Status message."""

    status: int | None  # None: no answer at all
    warnings: tuple[str, ...] = ()  # the texts of the `Warning` headers
    message: str = ""


@dataclass(frozen=True, slots=True)
class Snapshot:
    crd: Fetched
    configuration: Fetched
    secret: Fetched
    service: Fetched
    endpoint_slices: FetchedList
    lease: Fetched
    stores: FetchedList
    probe: ProbeOutcome | None
    namespaces: dict[str, Fetched] = field(default_factory=dict)
    agents: FetchedList = None  # AgentDeployments (None: not served, or not asked for)
