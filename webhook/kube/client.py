"""The plumbing's calls through the official client's `CustomObjectsApi`, read as raw JSON.

Custom resources have no generated model; Leases go this way too, as `V1Lease` writes a MicroTime
with `isoformat()`, dropping a zero fraction, which the API server rejects.
"""

from __future__ import annotations

import http
from typing import Any, Final, cast

import orjson
import urllib3
from kubernetes.client import ApiClient, CustomObjectsApi
from kubernetes.client.exceptions import ApiException

from webhook.kube.objects import metadata_of
from webhook.kube.pager import Listed, Listing, Page, PageConsumer, list_all, list_pages
from webhook.kube.settings import PAGE_SIZE

LEASE_GROUP: Final = "coordination.k8s.io"
LEASE_VERSION: Final = "v1"
LEASES: Final = "leases"

# (connect, read) seconds: a hung API server must not hold a worker forever.
REQUEST_TIMEOUT: Final = (10.0, 30.0)
LIST_TIMEOUT: Final = (10.0, 120.0)
_RAW: Final[dict[str, Any]] = {"_preload_content": False, "_request_timeout": REQUEST_TIMEOUT}

# Errors of the connection itself (refused, reset, timed out, cut mid-body).
TRANSPORT_ERRORS: Final = (urllib3.exceptions.HTTPError, OSError)

# group, version, plural
Resource = tuple[str, str, str]


def status_code(error: BaseException) -> int | None:
    """The HTTP status of a failed call, None when no response came back."""
    if isinstance(error, ApiException) and isinstance(error.status, int) and error.status:
        return int(error.status)
    return None


def server_status(error: BaseException) -> dict[str, Any] | None:
    """The Status a failed call answered with, None unless it sent one with a message."""
    body = error.body if isinstance(error, ApiException) else None
    try:
        status = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        return None
    return status if isinstance(status, dict) and isinstance(status.get("message"), str) else None


def error_text(error: BaseException) -> str:
    """What a log line says of a failed call, at most 500 characters.

    The server's Status message when there is one: a refusal names the user, verb and resource
    word for word, what an admin needs to fix the RBAC (the exception's text is its headers).
    """
    status = server_status(error)
    if status is not None:
        return f"{status.get('reason') or status_code(error)}: {status['message']}"[:500]
    return f"{type(error).__name__}: {error}"[:500]


def retry_after(error: BaseException, cap: float = 30.0) -> float:
    """The server's `Retry-After` in seconds (0 when absent or unreadable), at most `cap`."""
    headers = getattr(error, "headers", None)
    value = headers.get("Retry-After") if headers is not None else None
    try:
        seconds = float(value) if value is not None else 0.0
    except (TypeError, ValueError):
        return 0.0
    return min(max(seconds, 0.0), cap)


def raw_response(response: object) -> urllib3.BaseHTTPResponse:
    """The unread urllib3 response of a `_preload_content=False` call (or of its wrapper)."""
    if isinstance(response, urllib3.BaseHTTPResponse):
        return response
    inner = getattr(response, "response", None)
    if isinstance(inner, urllib3.BaseHTTPResponse):
        return inner
    raise TypeError(f"unexpected response type {type(response).__name__}")


def read_json(response: object) -> Any:
    """The decoded body of a raw answer; the connection goes back to the pool."""
    raw = raw_response(response)
    try:
        return orjson.loads(raw.data)
    finally:
        raw.release_conn()


def read_object(response: object) -> dict[str, Any]:
    return cast("dict[str, Any]", read_json(response))


def read_page(response: object) -> Page:
    """One page of a list answer: its items, resourceVersion and continue token."""
    decoded = read_json(response)
    page: dict[str, Any] = decoded if isinstance(decoded, dict) else {}
    metadata = metadata_of(page)
    return Page(
        [item for item in page.get("items") or () if isinstance(item, dict)],
        str(metadata.get("resourceVersion") or ""),
        metadata.get("continue") or None,
    )


class CollectionApi:
    """List (in pages) and watch one custom resource, in one namespace or all; no GET."""

    def __init__(
        self, api_client: ApiClient, resource: Resource, namespace: str | None = None
    ) -> None:
        self._api = CustomObjectsApi(api_client)
        self.resource = resource
        self.namespace = namespace

    def list(self, page_size: int | None = PAGE_SIZE) -> Listed:
        return list_all(self.list_page, page_size)

    def list_pages(self, consume: PageConsumer, page_size: int | None = PAGE_SIZE) -> Listing:
        return list_pages(self.list_page, consume, page_size)

    def list_page(self, limit: int | None, token: str | None) -> Page:
        return read_page(
            self._collection(limit=limit, _continue=token, _request_timeout=LIST_TIMEOUT)
        )

    def served(self) -> bool:
        """A one-item list: 404 when the resource is not served."""
        try:
            self.list_page(1, None)
        except Exception as error:
            if status_code(error) == http.HTTPStatus.NOT_FOUND:
                return False
            raise
        return True

    def watch(
        self, resource_version: str, timeout_seconds: int, read_timeout: float
    ) -> urllib3.BaseHTTPResponse:
        """An open watch stream with bookmarks; the caller closes it."""
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
        group, version, plural = self.resource
        if self.namespace is None:
            response = self._api.list_cluster_custom_object(group, version, plural, **options)
        else:
            response = self._api.list_namespaced_custom_object(
                group, version, self.namespace, plural, **options
            )
        return raw_response(response)


class LeaseApi:
    """Read, create and replace one `coordination.k8s.io/v1` Lease as a plain dict."""

    def __init__(
        self,
        api_client: ApiClient,
        namespace: str,
        name: str,
        field_manager: str | None = None,
        timeout: float | tuple[float, float] = REQUEST_TIMEOUT,
    ) -> None:
        self._api = CustomObjectsApi(api_client)
        self.namespace = namespace
        self.name = name
        self._where = (LEASE_GROUP, LEASE_VERSION, namespace, LEASES)
        self._read: dict[str, Any] = {**_RAW, "_request_timeout": timeout}
        self._options = dict(self._read)
        if field_manager is not None:
            self._options["field_manager"] = field_manager

    def get(self) -> dict[str, Any] | None:
        try:
            response = self._api.get_namespaced_custom_object(*self._where, self.name, **self._read)
        except ApiException as error:
            if error.status == http.HTTPStatus.NOT_FOUND:
                return None
            raise
        return read_object(response)

    def create(self, spec: dict[str, Any]) -> dict[str, Any]:
        create = self._api.create_namespaced_custom_object
        return read_object(create(*self._where, self._body(spec), **self._options))

    def replace(self, resource_version: str, spec: dict[str, Any]) -> dict[str, Any]:
        """Replace the Lease only if it is still at `resource_version` (else 409)."""
        body = self._body(spec, resource_version)
        replace = self._api.replace_namespaced_custom_object
        return read_object(replace(*self._where, self.name, body, **self._options))

    def _body(self, spec: dict[str, Any], resource_version: str | None = None) -> dict[str, Any]:
        metadata = {"name": self.name, "namespace": self.namespace}
        if resource_version is not None:
            metadata["resourceVersion"] = resource_version
        version = f"{LEASE_GROUP}/{LEASE_VERSION}"
        return {"apiVersion": version, "kind": "Lease", "metadata": metadata, "spec": spec}
