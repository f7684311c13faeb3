"""The HTTP face of the emulator: kube-apiserver's REST paths, verbs and answers.

Kubernetes imitated: "API Concepts" (resource URIs, verbs ``get list watch create update patch
delete``, 201 for create, 200 for update/patch, 202 for a delete held by finalizers, Status
bodies on failure) and "Server-Side Apply" / "Custom Resources: Status subresource" for what a
write may change (see store.py and fieldmanager.py).

Deliberate omissions, all documented in ``tests/support/emulator/__init__.py``: no authentication or
authorization, every namespace exists, no OpenAPI schema validation of custom resources (the
webhook and the CRD do that in a real cluster), ``dryRun`` is refused with 400 rather than
simulated, ``fieldValidation`` is ignored, selectors are ignored.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
import yaml
from aiohttp import web

from tests.support.emulator import errors, patching, resources, watch
from tests.support.emulator.faults import Faults
from tests.support.emulator.jsonvalue import clone, decode_json, decode_yaml
from tests.support.emulator.resources import ResourceType
from tests.support.emulator.store import ALL, MAIN, STATUS, Store

Handler = Any


@dataclass
class RecordedRequest:
    """One request as the emulator saw it (``status`` is None while a watch is still open)."""

    method: str
    path: str
    query: dict[str, str]
    content_type: str | None
    status: int | None
    body: bytes = b""
    # When the emulator received it (monotonic): gaps between requests measured
    # where they happen, not when a polling test thread gets round to noticing.
    received: float = field(default_factory=time.monotonic)

    @property
    def is_write(self) -> bool:
        return self.method in ("POST", "PUT", "PATCH", "DELETE")

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


class RequestLog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: list[RecordedRequest] = []

    def add(self, entry: RecordedRequest) -> None:
        with self._lock:
            self._entries.append(entry)

    def snapshot(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


@dataclass
class Settings:
    bookmark_interval: float
    watch_timeout: float
    retry_after: int = 1


MAX_BODY_BYTES = 3 * 1024 * 1024
STORE = web.AppKey("store", Store)
HUB = web.AppKey("hub", watch.WatchHub)
FAULTS = web.AppKey("faults", Faults)
LOG = web.AppKey("log", RequestLog)
SETTINGS = web.AppKey("settings", Settings)


def json_response(
    body: Any, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    return web.Response(
        body=orjson.dumps(body), status=status, content_type="application/json", headers=headers
    )


@web.middleware
async def record(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        body = await request.read() if request.can_read_body else b""
    except web.HTTPRequestEntityTooLarge:
        # apiserver's MaxRequestBodyBytes (3 MiB): 413 before anything is decoded.
        request.app[LOG].add(
            RecordedRequest(request.method, request.path, dict(request.query), None, 413)
        )
        return json_response(errors.request_too_large(MAX_BODY_BYTES).status, 413)
    entry = RecordedRequest(
        request.method,
        request.path,
        dict(request.query),
        request.headers.get("Content-Type"),
        None,
        body,
    )
    request.app[LOG].add(entry)
    try:
        response: web.StreamResponse = await handler(request)
    except errors.ApiError as error:
        response = json_response(error.status, error.code, error.headers)
    entry.status = response.status
    return response


@web.middleware
async def inject_faults(request: web.Request, handler: Handler) -> web.StreamResponse:
    faults = request.app[FAULTS]
    pause = faults.delay_for(request.method, request.path)
    if pause > 0:
        await asyncio.sleep(pause)
    failure = faults.take_failure(request.method, request.path)
    if failure is not None:
        raise failure
    response: web.StreamResponse = await handler(request)
    return response


def _resource(request: web.Request) -> ResourceType:
    info = request.match_info
    found = resources.find(info.get("group", ""), info["version"], info["plural"])
    if found is None:
        raise errors.path_not_found(request.path)
    return found


def _manager(request: web.Request) -> str:
    """fieldManager, else the User-Agent up to its first "/" (apiserver's prefixFromUserAgent)."""
    explicit = request.query.get("fieldManager")
    if explicit:
        return explicit
    return request.headers.get("User-Agent", "unknown").split("/", 1)[0]


def _refuse_dry_run(request: web.Request) -> None:
    if request.query.get("dryRun"):
        raise errors.bad_request("dryRun is not supported by the API-server emulator")


_BODY_TYPES = ["application/json", "application/yaml"]


async def _json_body(request: web.Request) -> Any:
    """A create/update/delete body: JSON, or YAML; no Content-Type means JSON, as in
    ``NegotiateInputSerializer`` (the Python client sends none on create and replace)."""
    raw = await request.read()
    media = patching.media_type(request.headers.get("Content-Type"))
    if media not in ("", *_BODY_TYPES):
        raise errors.unsupported_media_type(media, _BODY_TYPES)
    try:
        return decode_yaml(raw) if media == "application/yaml" else decode_json(raw)
    except (ValueError, RecursionError, yaml.YAMLError) as error:
        raise errors.bad_request(
            f"the body of the request could not be decoded as JSON: {error}"
        ) from error


def _check_kind(resource: ResourceType, body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise errors.bad_request("the body of the request must be a JSON object")
    kind, api_version = body.get("kind"), body.get("apiVersion")
    if resource.custom and not kind:
        raise errors.bad_request("Object 'Kind' is missing in the request body")
    if kind and kind != resource.kind:
        raise errors.bad_request(
            f"the kind in the data ({kind}) does not match the expected kind ({resource.kind})"
        )
    if api_version and api_version != resource.api_version:
        raise errors.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API version "
            f"({resource.api_version})"
        )
    return body


def _for_list(resource: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """Built-in list items carry no kind/apiVersion; custom resource items do (unstructured)."""
    if resource.custom:
        return obj
    return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}


def _list_options(query: dict[str, str]) -> tuple[str | None, str | None, int | None]:
    """``ListOptions`` validation for the fields the emulator honours."""
    resource_version = query.get("resourceVersion") or None
    match = query.get("resourceVersionMatch") or None
    causes = []
    if match and not resource_version:
        causes.append(
            errors.field_cause(
                "FieldValueForbidden",
                "resourceVersionMatch",
                "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
            )
        )
    if match == "Exact" and resource_version == "0":
        causes.append(
            errors.field_cause(
                "FieldValueForbidden",
                "resourceVersionMatch",
                'Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
            )
        )
    if match not in (None, "Exact", "NotOlderThan"):
        causes.append(
            errors.field_cause(
                "FieldValueNotSupported",
                "resourceVersionMatch",
                f'Unsupported value: "{match}": supported values: "Exact", "NotOlderThan"',
            )
        )
    limit = None
    if query.get("limit"):
        try:
            limit = max(int(query["limit"]), 0) or None
        except ValueError:
            causes.append(
                errors.field_cause("FieldValueInvalid", "limit", "Invalid value: not an integer")
            )
    if causes:
        raise errors.invalid("meta.k8s.io", "ListOptions", "", causes)
    return resource_version, match, limit


async def collection(request: web.Request) -> web.StreamResponse:
    resource = _resource(request)
    namespace = request.match_info.get("namespace")
    if request.method == "POST":
        if namespace is None:
            raise errors.method_not_allowed("POST")
        return await _create(request, resource, namespace)
    if request.method != "GET":
        raise errors.method_not_allowed(request.method)
    query = dict(request.query)
    if query.get("watch", "").lower() in ("true", "1"):
        settings = request.app[SETTINGS]
        options = watch.WatchOptions.parse(query, settings.watch_timeout)
        return await watch.serve(
            request,
            request.app[STORE],
            request.app[HUB],
            resource,
            namespace,
            options,
            settings.bookmark_interval,
            lambda: request.app[FAULTS].take_garbled(request.path),
        )
    resource_version, match, limit = _list_options(query)
    page = request.app[STORE].list_page(
        resource, namespace, resource_version, match, limit, query.get("continue")
    )
    meta: dict[str, Any] = {"resourceVersion": str(page.resource_version)}
    if page.continue_token:
        meta["continue"] = page.continue_token
        meta["remainingItemCount"] = page.remaining
    body = {
        "apiVersion": resource.api_version,
        "kind": resource.list_kind,
        "metadata": meta,
        "items": [_for_list(resource, obj) for obj in page.items],
    }
    return json_response(body)


async def _create(request: web.Request, resource: ResourceType, namespace: str) -> web.Response:
    _refuse_dry_run(request)
    body = _check_kind(resource, await _json_body(request))
    created = request.app[STORE].create(resource, namespace, body, _manager(request))
    return json_response(created, 201)


def _scope(request: web.Request, resource: ResourceType) -> str:
    sub = request.match_info.get("subresource")
    if sub is None:
        return MAIN
    if sub == "status" and resource.status_subresource:
        return STATUS
    raise errors.path_not_found(request.path)


async def item(request: web.Request) -> web.StreamResponse:
    resource = _resource(request)
    namespace, name = request.match_info["namespace"], request.match_info["name"]
    scope = _scope(request, resource)
    store = request.app[STORE]
    if request.method == "GET":
        return json_response(store.get(resource, namespace, name))
    _refuse_dry_run(request)
    if scope == STATUS:
        race = request.app[FAULTS].take_status_conflict()
        if race is not None:
            _lose_race(store, resource, namespace, name, race)
    if request.method == "PUT":
        body = _check_kind(resource, await _json_body(request))
        updated = store.write(
            resource,
            namespace,
            name,
            lambda _current: clone(body),
            _manager(request),
            scope,
            require_resource_version=resource.custom,
        )
        return json_response(updated)
    if request.method == "PATCH":
        return await _patch(request, resource, namespace, name, scope)
    if request.method == "DELETE" and scope == MAIN:
        return await _delete(request, resource, namespace, name)
    raise errors.method_not_allowed(request.method)


def _lose_race(
    store: Store, resource: ResourceType, namespace: str, name: str, mutate: Any
) -> None:
    def concurrent(current: dict[str, Any]) -> dict[str, Any]:
        mutate(current)
        return current

    store.write(resource, namespace, name, concurrent, "emulator-concurrent-writer", ALL)
    raise errors.conflict(resource, name, errors.OBJECT_MODIFIED)


async def _patch(
    request: web.Request, resource: ResourceType, namespace: str, name: str, scope: str
) -> web.Response:
    store = request.app[STORE]
    patch_type = patching.media_type(request.headers.get("Content-Type"))
    accepted = patching.CUSTOM_RESOURCE_TYPES if resource.custom else patching.BUILTIN_TYPES
    if patch_type not in accepted:
        raise errors.unsupported_media_type(patch_type, accepted)
    manager = request.query.get("fieldManager")
    patching.check_patch_options(patch_type, manager, request.query.get("force"))
    raw = await request.read()
    if patch_type == patching.APPLY:
        config = patching.decode_apply(raw)
        _check_kind(resource, config)
        existed = store.find(resource, namespace, name) is not None
        force = request.query.get("force", "").lower() in ("true", "1", "t")
        applied = store.apply(resource, namespace, name, config, str(manager), scope, force)
        return json_response(applied, 200 if existed else 201)
    document = patching.decode_json(raw)
    if patch_type == patching.JSON_PATCH:

        def compute(current: dict[str, Any]) -> Any:
            return patching.json_patch(current, document)
    else:
        if not isinstance(document, dict):
            raise errors.bad_request("the patch must be a JSON object")

        def compute(current: dict[str, Any]) -> Any:
            return patching.merge_patch(current, document)

    updated = store.write(
        resource, namespace, name, compute, _manager(request), scope, as_patch=True
    )
    return json_response(updated)


async def _delete(
    request: web.Request, resource: ResourceType, namespace: str, name: str
) -> web.Response:
    options: Any = {}
    raw = await request.read()
    if raw.strip():
        options = await _json_body(request)
    preconditions = options.get("preconditions") or {} if isinstance(options, dict) else {}
    obj, gone = request.app[STORE].delete(
        resource, namespace, name, preconditions.get("resourceVersion"), preconditions.get("uid")
    )
    if not gone:
        return json_response(obj, 202)
    # genericregistry.Store.finalizeDelete: without ReturnDeletedObject (custom resources,
    # Leases and Events alike) the answer is a Success Status naming the deleted object.
    success: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": name, "kind": resource.plural, "uid": obj["metadata"]["uid"]},
    }
    if resource.group:
        success["details"]["group"] = resource.group
    return json_response(success)


# -- discovery ---------------------------------------------------------------------------
async def version(_request: web.Request) -> web.Response:
    return json_response(
        {
            "major": "1",
            "minor": "34",
            "gitVersion": "v1.34.0-ctxmesh-emulator",
            "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean",
            "buildDate": "2026-01-01T00:00:00Z",
            "goVersion": "go1.24.0",
            "compiler": "gc",
            "platform": "linux/amd64",
        }
    )


def _api_resource(resource: ResourceType) -> list[dict[str, Any]]:
    verbs = ["create", "delete", "get", "list", "patch", "update", "watch"]
    out = [
        {
            "name": resource.plural,
            "singularName": resource.singular,
            "namespaced": True,
            "kind": resource.kind,
            "verbs": verbs,
            **({"shortNames": list(resource.short_names)} if resource.short_names else {}),
        }
    ]
    if resource.status_subresource:
        out.append(
            {
                "name": f"{resource.plural}/status",
                "singularName": "",
                "namespaced": True,
                "kind": resource.kind,
                "verbs": ["get", "patch", "update"],
            }
        )
    return out


async def core_versions(_request: web.Request) -> web.Response:
    return json_response(
        {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
    )


async def group_list(_request: web.Request) -> web.Response:
    groups = sorted({r.group for r in resources.ALL if r.group})
    body = {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [
            {
                "name": group,
                "versions": [
                    {"groupVersion": r.api_version, "version": r.version}
                    for r in resources.ALL
                    if r.group == group
                ],
                "preferredVersion": next(
                    {"groupVersion": r.api_version, "version": r.version}
                    for r in resources.ALL
                    if r.group == group
                ),
            }
            for group in groups
        ],
    }
    return json_response(body)


async def resource_list(request: web.Request) -> web.Response:
    group = request.match_info.get("group", "")
    version_name = request.match_info["version"]
    served = [r for r in resources.ALL if r.group == group and r.version == version_name]
    if not served:
        raise errors.path_not_found(request.path)
    body = {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": served[0].api_version,
        "resources": [entry for r in served for entry in _api_resource(r)],
    }
    return json_response(body)


async def not_found(request: web.Request) -> web.Response:
    raise errors.path_not_found(request.path)


def build_app(
    store: Store, hub: watch.WatchHub, faults: Faults, log: RequestLog, settings: Settings
) -> web.Application:
    app = web.Application(middlewares=[record, inject_faults], client_max_size=MAX_BODY_BYTES)
    app[STORE], app[HUB], app[FAULTS], app[LOG], app[SETTINGS] = store, hub, faults, log, settings
    r = app.router
    for slash in ("", "/"):  # the client asks for "/version/", "/apis/", "/apis/G/V/"
        r.add_get("/version" + slash, version)
        r.add_get("/api" + slash, core_versions)
        r.add_get("/apis" + slash, group_list)
        r.add_get("/api/{version}" + slash, resource_list)
        r.add_get("/apis/{group}/{version}" + slash, resource_list)
    for prefix in ("/api/{version}", "/apis/{group}/{version}"):
        r.add_get(prefix + "/{plural}", collection)
        r.add_route("*", prefix + "/namespaces/{namespace}/{plural}", collection)
        r.add_route("*", prefix + "/namespaces/{namespace}/{plural}/{name}", item)
        r.add_route("*", prefix + "/namespaces/{namespace}/{plural}/{name}/{subresource}", item)
    r.add_route("*", "/{tail:.*}", not_found)
    return app
