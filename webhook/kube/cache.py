"""The latest object per namespace/name, filled by the list-watch loop and read by the workers.

A resync replays it without asking the API server anything.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from webhook.kube.objects import metadata_of

Key = tuple[str, str]


def object_key(obj: object) -> Key | None:
    """`(namespace, name)` of a decoded object, None when it has no usable identity."""
    metadata = metadata_of(obj)
    namespace, name = metadata.get("namespace"), metadata.get("name")
    if not isinstance(namespace, str) or not isinstance(name, str) or not namespace or not name:
        return None
    return namespace, name


def resource_version(obj: dict[str, Any]) -> str | None:
    version = metadata_of(obj).get("resourceVersion")
    return version if isinstance(version, str) else None


Projection = Callable[[dict[str, Any]], dict[str, Any]]


def without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """The object without `metadata.managedFields`, which planners seldom read.

    They are half of a decoded object (bench/controlplane/writer.py weighs it); dropped at the
    cache's door as controller-runtime's `TransformStripManagedFields` does.
    """
    metadata = {k: v for k, v in metadata_of(obj).items() if k != "managedFields"}
    return {**obj, "metadata": metadata}


class ObjectCache:
    """Keeps `project(obj)` of each object that enters (controller-runtime's `TransformFunc`),
    a new object: the one handed in stays whole for its caller (a write's answer is read on).
    By default it drops `managedFields`; an owner keeps only what its planners read.
    """

    def __init__(self, project: Projection = without_managed_fields) -> None:
        self._project = project
        self._lock = threading.Lock()
        self._objects: dict[Key, dict[str, Any]] = {}

    def get(self, key: Key) -> dict[str, Any] | None:
        with self._lock:
            return self._objects.get(key)

    def put(self, key: Key, obj: dict[str, Any]) -> None:
        obj = self._project(obj)
        with self._lock:
            self._objects[key] = obj

    def put_if_unchanged(self, key: Key, seen_version: str | None, obj: dict[str, Any]) -> bool:
        """Store our own write's result unless a newer event already replaced what we read.

        Else a resync before the watch echoes our write would write the same condition again.
        """
        obj = self._project(obj)
        with self._lock:
            current = self._objects.get(key)
            if current is None or resource_version(current) != seen_version:
                return False
            self._objects[key] = obj
            return True

    def delete(self, key: Key) -> None:
        with self._lock:
            self._objects.pop(key, None)

    def snapshot(self) -> list[Key]:
        with self._lock:
            return list(self._objects)
