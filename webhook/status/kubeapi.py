"""The few API calls the writer makes, through the official `kubernetes` client.

Everything goes through `CustomObjectsApi` with plain dict bodies, on purpose:
- FeedbackStores have no generated model, and reading the raw response
  (`_preload_content=False`) skips the client's per-object model machinery;
- Leases go through it too: `CoordinationV1Api` turns a body into a `V1Lease`
  whose datetimes are written with `isoformat()`, which drops the fraction of
  a MicroTime when microseconds are zero and is then rejected by the API
  server. A dict keeps our exact `...00.000000Z` text.
"""

from __future__ import annotations

import http
from collections.abc import Callable
from typing import Any, Final, cast

import orjson
import urllib3
from kubernetes.client import ApiClient, CustomObjectsApi
from kubernetes.client.exceptions import ApiException

from webhook.rules import api
from webhook.status.pager import Listed, Page, list_all
from webhook.status.settings import PAGE_SIZE

FIELD_MANAGER: Final = "feedbackstore-status-writer"
APPLY_PATCH: Final = "application/apply-patch+yaml"
LEASE_GROUP: Final = "coordination.k8s.io"
LEASE_VERSION: Final = "v1"
LEASES: Final = "leases"

# (connect, read) seconds: a hung API server must not hold a worker forever.
REQUEST_TIMEOUT: Final = (10.0, 30.0)
LIST_TIMEOUT: Final = (10.0, 120.0)

# Errors of the connection itself (refused, reset, timed out, cut mid-body).
TRANSPORT_ERRORS: Final = (urllib3.exceptions.HTTPError, OSError)


def status_code(error: BaseException) -> int | None:
    """The HTTP status of a failed call, None when no response came back."""
    if isinstance(error, ApiException) and isinstance(error.status, int) and error.status:
        return int(error.status)
    return None


def retry_after(error: BaseException, cap: float = 30.0) -> float:
    """The server's `Retry-After` in seconds (0 when absent or unreadable), at most `cap`."""
    headers = getattr(error, "headers", None)
    value = headers.get("Retry-After") if headers is not None else None
    try:
        seconds = float(value) if value is not None else 0.0
    except (TypeError, ValueError):
        return 0.0
    return min(max(seconds, 0.0), cap)


def _raw(response: object) -> urllib3.BaseHTTPResponse:
    """What a call with `_preload_content=False` returns: the unread urllib3 response."""
    return cast(urllib3.BaseHTTPResponse, response)


def _read_json(response: object) -> Any:
    raw = _raw(response)
    try:
        return orjson.loads(raw.data)
    finally:
        raw.release_conn()


def apply_as_writer(
    patch: Callable[..., object], namespace: str, name: str, body: dict[str, Any]
) -> dict[str, Any]:
    """Server-side apply of `body` to one FeedbackStore as our field manager, forced.

    `patch` is the client's call for the part applied: the `status`
    subresource (conditions) or the main resource (our finalizer). `force`
    takes over fields another manager holds (an older controller's
    `Validated`), as Kubernetes advises controllers to do, instead of failing
    with 409 forever.
    """
    response = patch(
        api.GROUP,
        api.VERSION,
        namespace,
        api.PLURAL,
        name,
        body,
        field_manager=FIELD_MANAGER,
        force=True,
        _content_type=APPLY_PATCH,
        _preload_content=False,
        _request_timeout=REQUEST_TIMEOUT,
    )
    result: dict[str, Any] = _read_json(response)
    return result


class CollectionApi:
    """List (in pages) and watch one custom resource, in one namespace or all.

    What the `Informer` needs and nothing more; `RESOURCE` names the group,
    version and plural. No GET: the watch keeps the writer's view current.
    """

    RESOURCE: tuple[str, str, str] = (api.GROUP, api.VERSION, api.PLURAL)

    def __init__(self, api_client: ApiClient, namespace: str | None = None) -> None:
        self._api = CustomObjectsApi(api_client)
        self.namespace = namespace

    def list(self, page_size: int | None = PAGE_SIZE) -> Listed:
        """Every FeedbackStore and the list's resourceVersion to watch from, in pages."""
        return list_all(self.list_page, page_size)

    def list_page(self, limit: int | None, token: str | None) -> Page:
        """One list request: up to `limit` objects, after `token` when given."""
        page = _read_json(
            self._collection(limit=limit, _continue=token, _request_timeout=LIST_TIMEOUT)
        )
        metadata = page.get("metadata") or {}
        return Page(
            [item for item in page.get("items") or () if isinstance(item, dict)],
            str(metadata.get("resourceVersion") or ""),
            metadata.get("continue") or None,
        )

    def watch(
        self, resource_version: str, timeout_seconds: int, read_timeout: float
    ) -> urllib3.BaseHTTPResponse:
        """An open watch stream from `resource_version`, with bookmarks; the caller closes it."""
        return self._collection(
            watch=True,
            resource_version=resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=timeout_seconds,
            _request_timeout=(REQUEST_TIMEOUT[0], read_timeout),
        )

    def _collection(self, **options: Any) -> urllib3.BaseHTTPResponse:
        options = {key: value for key, value in options.items() if value is not None}
        options["_preload_content"] = False
        group, version, plural = self.RESOURCE
        if self.namespace is None:
            response = self._api.list_cluster_custom_object(group, version, plural, **options)
        else:
            response = self._api.list_namespaced_custom_object(
                group, version, self.namespace, plural, **options
            )
        return _raw(response)


class FeedbackStoreApi(CollectionApi):
    """List, watch and apply `status` of FeedbackStores.

    Its RBAC needs only list and watch on `feedbackstores` and patch on
    `feedbackstores/status`.
    """

    def apply_status(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        """Server-side apply on the `status` subresource (see `apply_as_writer`)."""
        return apply_as_writer(
            self._api.patch_namespaced_custom_object_status, namespace, name, body
        )


class LeaseApi:
    """Read, create and replace one `coordination.k8s.io/v1` Lease as a plain dict."""

    def __init__(self, api_client: ApiClient, namespace: str, name: str) -> None:
        self._api = CustomObjectsApi(api_client)
        self.namespace = namespace
        self.name = name

    def get(self) -> dict[str, Any] | None:
        try:
            response = self._api.get_namespaced_custom_object(
                *self._collection(),
                self.name,
                _preload_content=False,
                _request_timeout=REQUEST_TIMEOUT,
            )
        except ApiException as error:
            if error.status == http.HTTPStatus.NOT_FOUND:
                return None
            raise
        result: dict[str, Any] = _read_json(response)
        return result

    def create(self, spec: dict[str, Any]) -> dict[str, Any]:
        return self._write(
            self._api.create_namespaced_custom_object, *self._collection(), self._body(spec)
        )

    def replace(self, resource_version: str, spec: dict[str, Any]) -> dict[str, Any]:
        """Replace the Lease only if it is still at `resource_version` (else 409)."""
        return self._write(
            self._api.replace_namespaced_custom_object,
            *self._collection(),
            self.name,
            self._body(spec, resource_version),
        )

    def _collection(self) -> tuple[str, str, str, str]:
        """Group, version, namespace and plural: where every call finds the Lease."""
        return LEASE_GROUP, LEASE_VERSION, self.namespace, LEASES

    def _body(self, spec: dict[str, Any], resource_version: str | None = None) -> dict[str, Any]:
        """The whole Lease, ours by name; with `resource_version`, valid only at that version."""
        metadata = {"name": self.name, "namespace": self.namespace}
        if resource_version is not None:
            metadata["resourceVersion"] = resource_version
        return {
            "apiVersion": f"{LEASE_GROUP}/{LEASE_VERSION}",
            "kind": "Lease",
            "metadata": metadata,
            "spec": spec,
        }

    @staticmethod
    def _write(call: Callable[..., object], *args: object) -> dict[str, Any]:
        """A create or replace as our field manager; the Lease the server stored."""
        response = call(
            *args,
            field_manager=FIELD_MANAGER,
            _preload_content=False,
            _request_timeout=REQUEST_TIMEOUT,
        )
        result: dict[str, Any] = _read_json(response)
        return result
