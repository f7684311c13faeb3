"""The doctor's only contact with the API server: fetch a `Snapshot` as raw JSON, so the checks
see objects exactly as the server sends them. A 404 is an answer; 403 and 5xx are `Unreadable`
for a check to report; no answer, or 401, means nothing can be examined: `UnreachableError`."""

from __future__ import annotations

import http
import re
from collections.abc import Callable
from typing import Any, Final, TypeVar

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from webhook.doctor.checks import probe_store, service_ref
from webhook.doctor.snapshot import (
    KUBE_SYSTEM,
    SERVICE_NAME_LABEL,
    Fetched,
    FetchedList,
    ProbeOutcome,
    Snapshot,
    Target,
    Unreadable,
)
from webhook.kube.client import TRANSPORT_ERRORS, raw_response, read_json, read_page, server_status
from webhook.kube.pager import Listed, Page, list_all
from webhook.kube.settings import PAGE_SIZE
from webhook.rules import api, inuse

# (connect, read) seconds: the dry-run may wait out the webhook's own timeout (<= 30 s).
REQUEST_TIMEOUT: Final = (5.0, 35.0)
# RFC 7234 warn-code, warn-agent, quoted warn-text (kube-apiserver sends `299 - "..."`).
_WARNING: Final = re.compile(r'\d{3} \S+ "((?:[^"\\]|\\.)*)"')


class UnreachableError(Exception): ...


def fetch(api_client: k8s.ApiClient, target: Target) -> Snapshot:
    core = k8s.CoreV1Api(api_client)
    custom = k8s.CustomObjectsApi(api_client)
    crd = _get(k8s.ApiextensionsV1Api(api_client).read_custom_resource_definition, api.CRD_NAME)
    configuration = _get(
        k8s.AdmissionregistrationV1Api(api_client).read_validating_webhook_configuration,
        target.webhook_configuration,
    )
    service_namespace, service_name, _ = service_ref(configuration, target)
    list_slices = k8s.DiscoveryV1Api(api_client).list_namespaced_endpoint_slice
    selector = f"{SERVICE_NAME_LABEL}={service_name}"
    slices = _answered(
        lambda: read_page(list_slices(service_namespace, label_selector=selector, **_RAW)).items
    )
    names = dict.fromkeys((KUBE_SYSTEM, target.namespace, target.probe_namespace))
    have_api = crd is not None
    return Snapshot(
        crd=crd,
        configuration=configuration,
        secret=_get(core.read_namespaced_secret, target.secret, target.namespace),
        service=_get(core.read_namespaced_service, service_name, service_namespace),
        endpoint_slices=slices,
        lease=_get(
            k8s.CoordinationV1Api(api_client).read_namespaced_lease, target.lease, target.namespace
        ),
        stores=_listed(custom, _STORES, target.store_namespace) if have_api else None,
        agents=_listed(custom, _AGENTS, target.store_namespace),
        probe=probe(custom, target.probe_namespace) if have_api else None,
        namespaces={name: _get(core.read_namespace, name) for name in names},
    )


def probe(custom: k8s.CustomObjectsApi, namespace: str) -> ProbeOutcome:
    try:
        response = custom.create_namespaced_custom_object(
            api.GROUP,
            api.VERSION,
            namespace,
            api.PLURAL,
            probe_store(namespace),
            dry_run="All",
            **_RAW,
        )
    except ApiException as error:
        return ProbeOutcome(error.status, _warnings(error.headers), _message(error))
    except TRANSPORT_ERRORS as error:
        return ProbeOutcome(None, (), f"{type(error).__name__}: {error}")
    raw = raw_response(response)
    try:
        return ProbeOutcome(raw.status, _warnings(raw.headers))
    finally:
        raw.release_conn()


_RAW: Final[dict[str, Any]] = {"_preload_content": False, "_request_timeout": REQUEST_TIMEOUT}
T = TypeVar("T")


def _answered(call: Callable[[], T]) -> T | Unreadable | None:
    try:
        return call()
    except ApiException as error:
        if error.status == http.HTTPStatus.NOT_FOUND:
            return None
        if error.status == http.HTTPStatus.UNAUTHORIZED:
            raise UnreachableError(
                f"the API server refused the credentials: {_message(error)}"
            ) from error
        return Unreadable(_message(error))
    except TRANSPORT_ERRORS as error:
        raise UnreachableError(f"no answer from the API server: {error}") from error


def _get(read: Callable[..., object], *args: object, **options: object) -> Fetched:
    return _answered(lambda: read_json(read(*args, **options, **_RAW)))


_STORES: Final = (api.GROUP, api.VERSION, api.PLURAL)
_AGENTS: Final = (inuse.AGENT_GROUP, inuse.AGENT_VERSION, inuse.AGENT_PLURAL)


def _listed(
    custom: k8s.CustomObjectsApi, resource: tuple[str, str, str], namespace: str | None
) -> FetchedList:
    """Every object of a custom resource, page by page (None: the resource is not served)."""
    group, version, plural = resource
    where = (namespace,) if namespace else ()
    listing: Callable[..., object] = (
        custom.list_namespaced_custom_object if namespace else custom.list_cluster_custom_object
    )

    def page(limit: int | None, token: str | None) -> Page:
        paging = {key: value for key, value in (("limit", limit), ("_continue", token)) if value}
        return read_page(listing(group, version, *where, plural, **paging, **_RAW))

    listed = _answered(lambda: list_all(page, PAGE_SIZE))
    return listed.items if isinstance(listed, Listed) else listed


def _warnings(headers: Any) -> tuple[str, ...]:
    if headers is None:
        return ()
    values = headers.getlist("Warning") if hasattr(headers, "getlist") else [headers.get("Warning")]
    texts = []
    for value in values:
        for quoted in _WARNING.findall(value or ""):
            texts.append(re.sub(r"\\(.)", r"\1", quoted))
    return tuple(texts)


def _message(error: ApiException) -> str:
    status = server_status(error)
    return str(status["message"]) if status else f"HTTP {error.status} {error.reason}"
