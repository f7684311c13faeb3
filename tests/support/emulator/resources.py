"""The resource types the emulator serves, described the way kube-apiserver's discovery does.

Kubernetes imitated: "API Concepts: Kubernetes API terminology" (group, version, resource, kind;
namespaced resources under ``/apis/GROUP/VERSION/namespaces/NS/RESOURCE``; the legacy core group
under ``/api/v1``) and "Custom Resources: subresources" (a CRD with the ``status`` subresource).
"""

from __future__ import annotations

from dataclasses import dataclass, field

Path = tuple[str, ...]


@dataclass(frozen=True)
class ResourceType:
    """One served resource: where it lives, how its writes behave, how SSA sees its lists."""

    group: str
    version: str
    plural: str
    kind: str
    singular: str
    # A CustomResourceDefinition (not a built-in): strategic merge patch is refused with 415,
    # PUT needs metadata.resourceVersion (customResourceStrategy.AllowUnconditionalUpdate is
    # false).
    custom: bool = False
    # "status" subresource: main-resource writes keep the old status, /status writes keep
    # everything but status ("Custom Resources: Status subresource").
    status_subresource: bool = False
    # metadata.generation starts at 1 and moves when anything but metadata and status changes.
    tracks_generation: bool = False
    # x-kubernetes-list-type: map lists, by path from the object root, with their key fields.
    list_map_keys: dict[Path, tuple[str, ...]] = field(default_factory=dict)
    # x-kubernetes-list-type: set lists (items are their own keys).
    list_sets: frozenset[Path] = frozenset()
    short_names: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def group_resource(self) -> str:
        """``feedbackstores.agents.ctxmesh.ai``: how apiserver names a resource in messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def group_kind(self) -> str:
        return f"{self.kind}.{self.group}" if self.group else self.kind

    @property
    def key(self) -> str:
        return f"{self.group}/{self.version}/{self.plural}"


# Lists every object has (ObjectMeta: finalizers is a set, ownerReferences a map by uid).
_META_LISTS: dict[Path, tuple[str, ...]] = {("metadata", "ownerReferences"): ("uid",)}
_META_SETS = frozenset({("metadata", "finalizers")})

FEEDBACKSTORES = ResourceType(
    group="agents.ctxmesh.ai",
    version="v1beta1",
    plural="feedbackstores",
    kind="FeedbackStore",
    singular="feedbackstore",
    custom=True,
    status_subresource=True,
    tracks_generation=True,
    list_map_keys={**_META_LISTS, ("status", "conditions"): ("type",)},
    list_sets=_META_SETS,
    short_names=("fs",),
)

LEASES = ResourceType(
    group="coordination.k8s.io",
    version="v1",
    plural="leases",
    kind="Lease",
    singular="lease",
    list_map_keys=dict(_META_LISTS),
    list_sets=_META_SETS,
)

CORE_EVENTS = ResourceType(
    group="",
    version="v1",
    plural="events",
    kind="Event",
    singular="event",
    list_map_keys=dict(_META_LISTS),
    list_sets=_META_SETS,
    short_names=("ev",),
)

EVENTS_V1 = ResourceType(
    group="events.k8s.io",
    version="v1",
    plural="events",
    kind="Event",
    singular="event",
    list_map_keys=dict(_META_LISTS),
    list_sets=_META_SETS,
    short_names=("ev",),
)

ALL: tuple[ResourceType, ...] = (FEEDBACKSTORES, LEASES, CORE_EVENTS, EVENTS_V1)


def find(group: str, version: str, plural: str) -> ResourceType | None:
    for resource in ALL:
        if (resource.group, resource.version, resource.plural) == (group, version, plural):
            return resource
    return None
