"""The emulator's etcd: objects, one global resourceVersion, a bounded history, compaction.

Kubernetes imitated:
- "API Concepts: Resource versions": resourceVersion is an opaque string that the API server
  takes from etcd's global revision, so it increases across *all* objects; every write that
  changes an object gets a new one; a write that changes nothing is not stored and keeps it.
- "API Concepts: Efficient detection of changes": a bounded change history; a watch or an
  exact list from a revision older than the compaction point is "410 Gone" (reason Expired).
- "API Concepts: Semantics for get and list": resourceVersion unset (most recent), "0" (any),
  NotOlderThan and Exact (served from history), and pagination with limit/continue from the
  first page's snapshot; a continue token from before the compaction point is 410 Expired
  with a token for the rest of the list at the latest revision, as etcd3's storage answers.
- "Optimistic concurrency" (API Conventions: Concurrency Control and Consistency): an update
  whose metadata.resourceVersion is not the stored one is a 409 Conflict.
- "Custom Resources: Status subresource": main-resource writes keep the old status, /status
  writes keep everything but status, metadata.generation is 1 at creation and moves only when
  something other than metadata or status changes.
- "Finalizers": deleting an object with finalizers sets deletionTimestamp; removing the last
  finalizer afterwards deletes it.
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
import uuid
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tests.support.emulator import errors, fieldmanager, validation
from tests.support.emulator.fieldmanager import Ownership
from tests.support.emulator.jsonvalue import clone
from tests.support.emulator.resources import ResourceType

Obj = dict[str, Any]
Key = tuple[str, str]  # (namespace, name)

# Subresource scopes of a write: "" = main resource, "status" = /status, ALL = test setup,
# which (like an admin writing etcd directly) may set spec and status in one go.
MAIN, STATUS, ALL = "", "status", "*"

_SYSTEM_META = (
    "uid",
    "creationTimestamp",
    "resourceVersion",
    "generation",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
)
# A continue token's revision that means "the latest", as etcd3's (an expired token's way on).
_LATEST = -1
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_NAMESPACE_MISMATCH = (
    "the namespace of the provided object does not match the namespace sent on the request"
)


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


_OMITTED_WHEN_EMPTY = ("labels", "annotations", "finalizers", "ownerReferences")


@dataclass(frozen=True)
class Change:
    """One stored write: what a watch sends (``obj``) and what an Exact list undoes (``prev``)."""

    rv: int
    resource: ResourceType
    namespace: str
    name: str
    type: str  # ADDED | MODIFIED | DELETED
    obj: Obj
    prev: Obj | None


@dataclass
class Entry:
    obj: Obj  # never mutated in place: every write stores a new dict
    ownership: Ownership


@dataclass(frozen=True)
class Page:
    items: list[Obj]
    resource_version: int
    continue_token: str | None
    remaining: int | None


class ResourceVersionTooOldError(Exception):
    """A watch start older than the compaction point (the ERROR event carries the numbers)."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


class Store:
    """Thread-safe: HTTP handlers (emulator loop) and test code (test thread) both write here."""

    def __init__(self, history_limit: int = 10_000, first_resource_version: int = 1000) -> None:
        self._lock = threading.RLock()
        self._rv = first_resource_version
        self._compacted = first_resource_version
        self._watch_floor = first_resource_version
        self._objects: dict[str, dict[Key, Entry]] = {}
        self._history: list[Change] = []  # ascending rv; _rvs mirrors it for bisection
        self._rvs: list[int] = []
        self._history_limit = history_limit
        self._listeners: list[Callable[[], None]] = []

    # -- observation ---------------------------------------------------------------------
    def listen(self, callback: Callable[[], None]) -> None:
        """``callback`` runs (under the store lock; keep it tiny) after every stored change."""
        with self._lock:
            self._listeners.append(callback)

    @property
    def resource_version(self) -> int:
        with self._lock:
            return self._rv

    @property
    def compacted(self) -> int:
        with self._lock:
            return self._compacted

    def compact(self) -> int:
        """etcd compaction at the current revision: every older resourceVersion is now 410."""
        with self._lock:
            self._history.clear()
            self._rvs.clear()
            self._compacted = self._rv
            return self._rv

    def restart_watch_cache(self) -> int:
        """kube-apiserver (re)started: its watch cache begins at the current revision.

        The real server (v1.37, tests/kube/test_status_writer_real.py) fills a new watch
        cache with a list at etcd's current revision; a watch from any older
        resourceVersion is then 410 "too old resource version: N (M)", although etcd still
        has that history (lists from it still work). Every write anywhere in the cluster
        moves etcd's revision, so in practice every watcher relists after a restart.
        """
        with self._lock:
            self._watch_floor = self._rv
            return self._rv

    def find(self, resource: ResourceType, namespace: str, name: str) -> Obj | None:
        with self._lock:
            entry = self._table(resource).get((namespace, name))
            return clone(entry.obj) if entry else None

    def get(self, resource: ResourceType, namespace: str, name: str) -> Obj:
        found = self.find(resource, namespace, name)
        if found is None:
            raise errors.not_found(resource, name)
        return found

    def all(self, resource: ResourceType, namespace: str | None = None) -> list[Obj]:
        with self._lock:
            return [
                clone(e.obj)
                for k, e in sorted(self._table(resource).items())
                if namespace is None or k[0] == namespace
            ]

    # -- list ----------------------------------------------------------------------------
    def list_page(
        self,
        resource: ResourceType,
        namespace: str | None,
        resource_version: str | None,
        match: str | None,
        limit: int | None,
        continue_token: str | None,
    ) -> Page:
        with self._lock:
            start_after: Key | None = None
            if continue_token:
                at, start_after = self._decode_continue(continue_token)
                if at == _LATEST:  # the way on that a 410 offers: the rest, as of now
                    at = self._rv
                elif at < self._compacted:
                    raise errors.continue_expired(self._encode_continue(_LATEST, start_after))
            else:
                at = self._list_revision(resource_version, match)
            state = self._state_at(resource, at)
            keys = sorted(k for k in state if namespace is None or k[0] == namespace)
            if start_after is not None:
                keys = [k for k in keys if k > start_after]
            token = remaining = None
            if limit and len(keys) > limit:
                remaining = len(keys) - limit
                keys = keys[:limit]
                token = self._encode_continue(at, keys[-1])
            return Page([state[k] for k in keys], at, token, remaining)

    def _list_revision(self, resource_version: str | None, match: str | None) -> int:
        if not resource_version or resource_version == "0":
            return self._rv
        requested = _parse_rv(resource_version)
        if requested > self._rv:
            raise errors.too_large_resource_version(requested, self._rv)
        if match == "Exact":
            if requested < self._compacted:
                raise errors.expired(errors.LIST_TOO_OLD)
            return requested
        return self._rv

    def _state_at(self, resource: ResourceType, at: int) -> dict[Key, Obj]:
        """Objects as they were at revision ``at``: today's state with later changes undone."""
        state = {k: e.obj for k, e in self._table(resource).items()}
        for change in reversed(self._history):
            if change.rv <= at:
                break
            if change.resource is not resource:
                continue
            key = (change.namespace, change.name)
            if change.prev is None:
                state.pop(key, None)
            else:
                state[key] = change.prev
        return state

    @staticmethod
    def _encode_continue(at: int, last: Key) -> str:
        raw = json.dumps({"v": "emulator/v1", "rv": at, "start": list(last)}).encode()
        return base64.urlsafe_b64encode(raw).decode()

    @staticmethod
    def _decode_continue(token: str) -> tuple[int, Key]:
        try:
            data = json.loads(base64.urlsafe_b64decode(token.encode()))
            return int(data["rv"]), (str(data["start"][0]), str(data["start"][1]))
        except (ValueError, KeyError, IndexError, TypeError) as error:
            raise errors.bad_request(f"continue key is not valid: {error}") from error

    # -- watch ---------------------------------------------------------------------------
    def changes_since(
        self, resource: ResourceType, namespace: str | None, after: int
    ) -> tuple[list[Change], int]:
        """Stored changes with rv > ``after`` for one resource, and the revision seen up to."""
        with self._lock:
            oldest = max(self._compacted, self._watch_floor)
            if after < oldest:
                raise ResourceVersionTooOldError(after, oldest)
            start = bisect_right(self._rvs, after)
            changes = [
                c
                for c in self._history[start:]
                if c.resource is resource and (namespace is None or c.namespace == namespace)
            ]
            return changes, self._rv

    def snapshot(self, resource: ResourceType, namespace: str | None) -> tuple[list[Obj], int]:
        with self._lock:
            items = [
                e.obj
                for k, e in sorted(self._table(resource).items())
                if namespace is None or k[0] == namespace
            ]
            return items, self._rv

    # -- writes --------------------------------------------------------------------------
    def create(
        self,
        resource: ResourceType,
        namespace: str,
        body: Obj,
        manager: str,
        scope: str = MAIN,
    ) -> Obj:
        """POST: the object is new; status is dropped unless ``scope`` is ALL (test setup)."""
        with self._lock:
            obj = clone(body)
            meta = obj.setdefault("metadata", {})
            if not isinstance(meta, dict):
                raise errors.bad_request("metadata must be an object")
            body_ns = meta.get("namespace")
            if body_ns not in (None, "", namespace):
                raise errors.bad_request(_NAMESPACE_MISMATCH)
            if not meta.get("name") and meta.get("generateName"):
                suffix = "".join(secrets.choice(_NAME_ALPHABET) for _ in range(5))
                meta["name"] = f"{meta['generateName']}{suffix}"
            name = meta.get("name")
            causes = validation.name_causes(name)
            if causes:
                raise errors.invalid(resource.group, resource.kind, str(name or ""), causes)
            if (namespace, name) in self._table(resource):
                raise errors.already_exists(resource, str(name))
            for system in _SYSTEM_META:
                meta.pop(system, None)
            if resource.status_subresource and scope != ALL:
                obj.pop("status", None)
            obj["apiVersion"] = resource.api_version
            obj["kind"] = resource.kind
            meta["namespace"] = namespace
            meta["uid"] = str(uuid.uuid4())
            meta["creationTimestamp"] = now_rfc3339()
            if resource.tracks_generation:
                meta["generation"] = 1
            self._check(resource, obj, namespace, as_patch=False)
            stamp = now_rfc3339()
            ownership = fieldmanager.record_update(
                Ownership(), None, obj, resource, (manager, "Update", ""), stamp
            )
            return self._commit(resource, (namespace, str(name)), None, obj, ownership, "ADDED")

    def write(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        compute: Callable[[Obj], Obj],
        manager: str,
        scope: str = MAIN,
        *,
        require_resource_version: bool = False,
        as_patch: bool = False,
    ) -> Obj:
        """Read-modify-write of one object as an Update operation (PUT, merge or JSON patch).

        ``compute`` gets a private copy of the stored object and returns the proposed one; the
        store then enforces what the client may not change, the resourceVersion precondition,
        the status split and generation, and stores the result if anything changed.
        """
        with self._lock:
            entry = self._entry(resource, namespace, name)
            proposed = compute(clone(entry.obj))
            new = self._prepare_update(
                resource, entry.obj, proposed, scope, require_resource_version
            )
            self._check(resource, new, namespace, as_patch=as_patch)
            stamp = now_rfc3339()
            key = (manager, "Update", "" if scope == ALL else scope)
            ownership = fieldmanager.record_update(
                entry.ownership, entry.obj, new, resource, key, stamp
            )
            return self._store_update(resource, (namespace, name), entry, new, ownership)

    def apply(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        config: Obj,
        manager: str,
        scope: str,
        force: bool,
    ) -> Obj:
        """Server-side apply (PATCH application/apply-patch+yaml); creates on the main resource."""
        with self._lock:
            found = config.get("metadata")
            meta: Obj = found if isinstance(found, dict) else {}
            if meta.get("name") not in (None, name):
                raise errors.bad_request(
                    "the name of the object ("
                    + str(meta.get("name"))
                    + ") does not match the name on the URL ("
                    + name
                    + ")"
                )
            entry = self._table(resource).get((namespace, name))
            if entry is None:
                if scope == STATUS:
                    raise errors.not_found(resource, name)
                return self._apply_create(resource, namespace, name, config, manager, force)
            stamp = now_rfc3339()
            result = fieldmanager.apply(
                entry.obj, entry.ownership, config, resource, manager, scope, force, stamp
            )
            proposed = result.obj
            applied_rv = meta.get("resourceVersion")
            if applied_rv:
                proposed.setdefault("metadata", {})["resourceVersion"] = applied_rv
            new = self._prepare_update(resource, entry.obj, proposed, scope, False)
            self._check(resource, new, namespace, as_patch=True)
            return self._store_update(resource, (namespace, name), entry, new, result.ownership)

    def _apply_create(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        config: Obj,
        manager: str,
        force: bool,
    ) -> Obj:
        stamp = now_rfc3339()
        body = {"metadata": {"name": name, "namespace": namespace}}
        result = fieldmanager.apply(
            body, Ownership(), config, resource, manager, MAIN, force, stamp
        )
        obj = result.obj
        meta = obj["metadata"]
        for system in _SYSTEM_META:
            meta.pop(system, None)
        obj.pop("status", None) if resource.status_subresource else None
        obj["apiVersion"] = resource.api_version
        obj["kind"] = resource.kind
        meta.update(name=name, namespace=namespace, uid=str(uuid.uuid4()), creationTimestamp=stamp)
        if resource.tracks_generation:
            meta["generation"] = 1
        causes = validation.name_causes(name)
        if causes:
            raise errors.invalid(resource.group, resource.kind, name, causes)
        self._check(resource, obj, namespace, as_patch=True)
        return self._commit(resource, (namespace, name), None, obj, result.ownership, "ADDED")

    def delete(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        precondition_rv: str | None = None,
        precondition_uid: str | None = None,
    ) -> tuple[Obj, bool]:
        """DELETE: gone now (True), or marked for deletion while finalizers remain (False)."""
        with self._lock:
            entry = self._entry(resource, namespace, name)
            meta = entry.obj["metadata"]
            if precondition_uid and precondition_uid != meta["uid"]:
                raise errors.conflict(
                    resource,
                    name,
                    f"Precondition failed: UID in precondition: {precondition_uid}, "
                    f"UID in object meta: {meta['uid']}",
                )
            if precondition_rv and precondition_rv != meta["resourceVersion"]:
                raise errors.conflict(
                    resource,
                    name,
                    f"Precondition failed: ResourceVersion in precondition: {precondition_rv}, "
                    f"ResourceVersion in object meta: {meta['resourceVersion']}",
                )
            if meta.get("finalizers"):
                if meta.get("deletionTimestamp"):
                    return clone(entry.obj), False
                new = clone(entry.obj)
                new["metadata"]["deletionTimestamp"] = now_rfc3339()
                new["metadata"]["deletionGracePeriodSeconds"] = 0
                if resource.tracks_generation:
                    new["metadata"]["generation"] = meta.get("generation", 1) + 1
                return self._commit(
                    resource, (namespace, name), entry, new, entry.ownership, "MODIFIED"
                ), False
            return self._remove(resource, (namespace, name), entry, entry.obj), True

    # -- internals -----------------------------------------------------------------------
    def _table(self, resource: ResourceType) -> dict[Key, Entry]:
        return self._objects.setdefault(resource.key, {})

    def _entry(self, resource: ResourceType, namespace: str, name: str) -> Entry:
        entry = self._table(resource).get((namespace, name))
        if entry is None:
            raise errors.not_found(resource, name)
        return entry

    def _prepare_update(
        self, resource: ResourceType, old: Obj, proposed: Obj, scope: str, require_rv: bool
    ) -> Obj:
        if not isinstance(proposed, dict) or not isinstance(proposed.get("metadata", {}), dict):
            raise errors.bad_request("the object is not a JSON object with metadata")
        old_meta = old["metadata"]
        meta = proposed.setdefault("metadata", {})
        name = old_meta["name"]
        if meta.get("name") not in (None, "", name):
            raise errors.bad_request(
                f"the name of the object ({meta.get('name')}) does not match "
                f"the name on the URL ({name})"
            )
        if meta.get("namespace") not in (None, "", old_meta["namespace"]):
            raise errors.bad_request(_NAMESPACE_MISMATCH)
        sent_rv = meta.get("resourceVersion")
        if require_rv and not sent_rv:
            cause = errors.field_cause(
                "FieldValueInvalid",
                "metadata.resourceVersion",
                "Invalid value: 0x0: must be specified for an update",
            )
            raise errors.invalid(resource.group, resource.kind, name, [cause])
        if sent_rv and sent_rv != old_meta["resourceVersion"]:
            raise errors.conflict(resource, name, errors.OBJECT_MODIFIED)
        if resource.status_subresource and scope == STATUS:
            new = clone(old)
            if "status" in proposed:
                new["status"] = proposed["status"]
            else:
                new.pop("status", None)
            return new
        new = proposed
        if resource.status_subresource and scope == MAIN:
            if "status" in old:
                new["status"] = clone(old["status"])
            else:
                new.pop("status", None)
        for system in _SYSTEM_META:
            if system in old_meta:
                meta[system] = clone(old_meta[system])
            else:
                meta.pop(system, None)
        meta["name"], meta["namespace"] = name, old_meta["namespace"]
        new["apiVersion"], new["kind"] = resource.api_version, resource.kind
        if resource.tracks_generation and _spec_part(new) != _spec_part(old):
            meta["generation"] = old_meta.get("generation", 1) + 1
        return new

    def _check(self, resource: ResourceType, obj: Obj, namespace: str, *, as_patch: bool) -> None:
        problem = validation.decode_problem(resource, obj)
        if problem is not None:
            if as_patch:
                cause = errors.field_cause(
                    "FieldValueInvalid", "patch", f"Invalid value: {problem}"
                )
                raise errors.invalid("", "", "", [cause])
            raise errors.bad_request(validation.decode_message(resource, problem))
        if resource.plural == "events":
            causes = validation.event_causes(resource, obj, namespace)
            if causes:
                raise errors.invalid(resource.group, resource.kind, obj["metadata"]["name"], causes)

    def _store_update(
        self, resource: ResourceType, key: Key, entry: Entry, new: Obj, ownership: Ownership
    ) -> Obj:
        meta = new["metadata"]
        # ObjectMeta's `omitempty`: a list or map emptied (the last finalizer given up by an
        # apply) is not stored, as kube-apiserver v1.37.2 stores none.
        for name in _OMITTED_WHEN_EMPTY:
            if name in meta and not meta[name]:
                del meta[name]
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            return self._remove(resource, key, entry, new)
        unchanged = _without_managed(new) == _without_managed(entry.obj)
        if unchanged and ownership.entries == entry.ownership.entries:
            return clone(entry.obj)
        return self._commit(resource, key, entry, new, ownership, "MODIFIED")

    def _commit(
        self,
        resource: ResourceType,
        key: Key,
        entry: Entry | None,
        obj: Obj,
        ownership: Ownership,
        change_type: str,
    ) -> Obj:
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        managed = ownership.render(resource.api_version)
        if managed:
            obj["metadata"]["managedFields"] = managed
        else:
            obj["metadata"].pop("managedFields", None)
        self._table(resource)[key] = Entry(obj, ownership)
        self._record(
            Change(
                self._rv, resource, key[0], key[1], change_type, obj, entry.obj if entry else None
            )
        )
        return clone(obj)

    def _remove(self, resource: ResourceType, key: Key, entry: Entry, last: Obj) -> Obj:
        self._rv += 1
        gone = clone(last)
        gone["metadata"]["resourceVersion"] = str(self._rv)
        del self._table(resource)[key]
        self._record(Change(self._rv, resource, key[0], key[1], "DELETED", gone, entry.obj))
        return clone(gone)

    def _record(self, change: Change) -> None:
        self._history.append(change)
        self._rvs.append(change.rv)
        excess = len(self._history) - self._history_limit
        if excess > 0 and (excess >= 1024 or excess * 8 >= self._history_limit):
            # Trimmed in batches (slicing a list is O(n)); every change kept is exact.
            self._compacted = self._rvs[excess - 1]
            del self._history[:excess]
            del self._rvs[:excess]
        for listener in self._listeners:
            listener()


def _spec_part(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def _without_managed(obj: Obj) -> Obj:
    meta = {k: v for k, v in obj.get("metadata", {}).items() if k != "managedFields"}
    return {**obj, "metadata": meta}


def _parse_rv(text: str) -> int:
    try:
        value = int(text)
    except ValueError as error:
        raise errors.bad_request(f'invalid resource version "{text}"') from error
    if value < 0:
        raise errors.bad_request(f'invalid resource version "{text}"')
    return value


def parse_resource_version(text: str) -> int:
    return _parse_rv(text)
