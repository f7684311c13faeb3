"""What the status writer keeps of a FeedbackStore: exactly what its planners and writes read.

The cache holds every store for as long as the writer runs, so its size per store is the
writer's memory (bench/controlplane/writer.py measures it). Every consumer of a cached store
reads it through this projection, taken once as the object enters the cache:

- the verdict reads `spec`, whole;
- the plans read our conditions (`Validated`, `Stalled`, `InUse`) by type, `metadata.generation`,
  `finalizers` and `deletionTimestamp`;
- the applies, the finalizer's and the Events read `name`, `namespace`, `uid` and
  `resourceVersion` (the apply's precondition while `Validated` is yielded, the cache's own
  check of a write against a newer event);
- the yield decision reads who owns `Validated`, from `managedFields`: kept only while another
  field manager owns part of it, as only then is it read (ours alone: nothing to yield, nothing
  of ours to keep).

Whatever else a store carries (others' conditions, labels, annotations such as kubectl's
last-applied copy of the whole object, the rest of `managedFields`) no consumer reads. Readers
that need more than this ask the API server: the cleanup command lists stores itself, and a
finalizer's removal reads the answer of its own apply. tests/webhook/status/test_projection.py
runs every consumer on whole objects and on their projections and asks for the same result.
"""

from __future__ import annotations

from typing import Any, Final

from webhook.install import FIELD_MANAGER
from webhook.kube.managed_fields import condition_ownership
from webhook.kube.objects import metadata_of
from webhook.rules import api, inuse

METADATA: Final = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "deletionTimestamp",
    "finalizers",
)
CONDITIONS: Final = frozenset(
    {api.CONDITION_TYPE, api.STALLED_CONDITION_TYPE, inuse.CONDITION_TYPE}
)


def project_store(obj: dict[str, Any]) -> dict[str, Any]:
    """A new object holding what the writer reads of `obj`; parts it keeps are shared, not
    copied (nobody changes a decoded object)."""
    source = metadata_of(obj)
    metadata: dict[str, Any] = {name: source[name] for name in METADATA if name in source}
    ownership = condition_ownership(obj, api.CONDITION_TYPE)
    if any(entry.get("manager") != FIELD_MANAGER for entry in ownership):
        metadata["managedFields"] = ownership
    projected: dict[str, Any] = {"metadata": metadata}
    if "spec" in obj:
        projected["spec"] = obj["spec"]
    conditions = _our_conditions(obj.get("status"))
    if conditions:
        projected["status"] = {"conditions": conditions}
    return projected


def _our_conditions(status: object) -> list[Any]:
    conditions = status.get("conditions") if isinstance(status, dict) else None
    if not isinstance(conditions, list):
        return []
    return [c for c in conditions if isinstance(c, dict) and c.get("type") in CONDITIONS]
