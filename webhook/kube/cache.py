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


Transform = Callable[[dict[str, Any]], None]


def strip_managed_fields(obj: dict[str, Any]) -> None:
    """Drops `metadata.managedFields`, which planners seldom read.

    They are half of a decoded object (bench/controlplane/writer.py weighs it); dropped at the
    cache's door as controller-runtime's `TransformStripManagedFields` does (the object is freshly
    decoded, ours).
    """
    metadata_of(obj).pop("managedFields", None)


class ObjectCache:
    """`transform` changes each object in place as it enters (controller-runtime's
    `TransformFunc`): by default it drops `managedFields`; a reader of part of them keeps that.
    """

    def __init__(self, transform: Transform = strip_managed_fields) -> None:
        self._transform = transform
        self._lock = threading.Lock()
        self._objects: dict[Key, dict[str, Any]] = {}

    def get(self, key: Key) -> dict[str, Any] | None:
        with self._lock:
            return self._objects.get(key)

    def put(self, key: Key, obj: dict[str, Any]) -> None:
        self._transform(obj)
        with self._lock:
            self._objects[key] = obj

    def put_if_unchanged(self, key: Key, seen_version: str | None, obj: dict[str, Any]) -> bool:
        """Store our own write's result unless a newer event already replaced what we read.

        Else a resync before the watch echoes our write would write the same condition again.
        """
        self._transform(obj)
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
