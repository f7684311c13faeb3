"""The latest object per namespace/name, filled by the list-watch loop and read by the workers.

A resync replays it without asking the API server anything.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, cast

import orjson

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
    as its JSON: decoded, an object takes about five times its JSON in Python's dicts and strings
    (a projected FeedbackStore: 4.2 KiB against 0.8, bench/status/memory.py), and the cache holds
    every object for as long as its owner runs. Each `get` decodes a new object, the caller's to
    read or change (microseconds for a projected store); the one handed in stays whole for its
    caller (a write's answer is read on). By default it drops `managedFields`; an owner keeps only
    what its planners read.
    """

    def __init__(self, project: Projection = without_managed_fields) -> None:
        self._project = project
        self._lock = threading.Lock()
        self._objects: dict[Key, bytes] = {}

    def get(self, key: Key) -> dict[str, Any] | None:
        with self._lock:
            encoded = self._objects.get(key)
        return None if encoded is None else _decoded(encoded)

    def put(self, key: Key, obj: dict[str, Any]) -> None:
        encoded = _encoded(self._project(obj))
        with self._lock:
            self._objects[key] = encoded

    def put_if_unchanged(self, key: Key, seen_version: str | None, obj: dict[str, Any]) -> bool:
        """Store our own write's result unless a newer event already replaced what we read.

        Else a resync before the watch echoes our write would write the same condition again.
        """
        encoded = _encoded(self._project(obj))
        with self._lock:
            current = self._objects.get(key)
            if current is None or resource_version(_decoded(current)) != seen_version:
                return False
            self._objects[key] = encoded
            return True

    def delete(self, key: Key) -> None:
        with self._lock:
            self._objects.pop(key, None)

    def snapshot(self) -> list[Key]:
        with self._lock:
            return list(self._objects)


def _encoded(obj: dict[str, Any]) -> bytes:
    """A copy of exactly its length: orjson's own answer keeps the buffer it grew (4 KiB for a
    projected store of 0.8, seen with tracemalloc)."""
    return bytes(memoryview(orjson.dumps(obj)))


def _decoded(encoded: bytes) -> dict[str, Any]:
    return cast("dict[str, Any]", orjson.loads(encoded))
