"""Building the envelope's named tuples: straight from decoded JSON, or from validated models.

`schema`'s pydantic models are the reference for what is accepted, but on a
busy server validating through them cost ~10 µs per request (their machinery
runs cold between requests; see bench/README.md), as much as the rest of a
small review's checks together. `read_review` accepts a document only when
every field it knows has exactly the type the models require (and there is
no `response`, which only round-trip fixtures carry), and builds the values
the models would; for anything else it answers None, and the models decide
and name what is wrong. tests/test_admission_envelope.py holds both to the
same answers for arbitrary envelopes.
"""

from __future__ import annotations

from typing import Any, Final

from webhook.admission import schema
from webhook.admission.envelope import (
    API_VERSIONS,
    REVIEW_KIND,
    AdmissionRequest,
    AdmissionReview,
    GroupVersionKind,
    GroupVersionResource,
    UserInfo,
)

_NO_KIND: Final = GroupVersionKind()
_NO_RESOURCE: Final = GroupVersionResource()
_NO_USER: Final = UserInfo()


class _UnusualError(Exception):
    """Not in the shape kube-apiserver sends: the models decide."""


def read_review(document: Any) -> AdmissionReview | None:
    """The review when it is in kube-apiserver's shape with every type right, else None."""
    if type(document) is not dict or document.get("response") is not None:
        return None
    api_version, kind = document.get("apiVersion"), document.get("kind")
    if type(api_version) is not str or api_version not in API_VERSIONS:
        return None
    if type(kind) is not str or kind != REVIEW_KIND:
        return None
    try:
        return AdmissionReview(api_version, kind, _request(document.get("request")))
    except _UnusualError:
        return None


def _request(request: Any) -> AdmissionRequest:
    if type(request) is not dict:
        raise _UnusualError
    get = request.get
    uid = get("uid")
    # Absent strings are "", a null or any other type is not a string.
    sub_resource, request_sub_resource = get("subResource", ""), get("requestSubResource", "")
    name, namespace, operation = get("name", ""), get("namespace", ""), get("operation", "")
    if (
        type(uid) is not str
        or not uid
        or type(sub_resource) is not str
        or type(request_sub_resource) is not str
        or type(name) is not str
        or type(namespace) is not str
        or type(operation) is not str
    ):
        raise _UnusualError
    dry_run = get("dryRun")
    if dry_run is not None and type(dry_run) is not bool:
        raise _UnusualError
    return AdmissionRequest._make((
        uid,
        _kind(request["kind"]) if "kind" in request else _NO_KIND,
        _resource(request["resource"]) if "resource" in request else _NO_RESOURCE,
        sub_resource,
        None if (kind := get("requestKind")) is None else _kind(kind),
        None if (resource := get("requestResource")) is None else _resource(resource),
        request_sub_resource,
        name,
        namespace,
        operation,
        _user_info(request["userInfo"]) if "userInfo" in request else _NO_USER,
        get("object"),
        get("oldObject"),
        dry_run,
        get("options"),
    ))  # fmt: skip


def _kind(value: Any) -> GroupVersionKind:
    if type(value) is not dict:
        raise _UnusualError
    group, version, kind = value.get("group", ""), value.get("version", ""), value.get("kind", "")
    if type(group) is not str or type(version) is not str or type(kind) is not str:
        raise _UnusualError
    return GroupVersionKind._make((group, version, kind))


def _resource(value: Any) -> GroupVersionResource:
    if type(value) is not dict:
        raise _UnusualError
    get = value.get
    group, version, resource = get("group", ""), get("version", ""), get("resource", "")
    if type(group) is not str or type(version) is not str or type(resource) is not str:
        raise _UnusualError
    return GroupVersionResource._make((group, version, resource))


def _user_info(value: Any) -> UserInfo:
    if type(value) is not dict:
        raise _UnusualError
    username, uid = value.get("username", ""), value.get("uid", "")
    if type(username) is not str or type(uid) is not str:
        raise _UnusualError
    groups = value.get("groups")
    if groups is not None:
        _check_texts(groups)
    extra = value.get("extra")
    if extra is not None:
        if type(extra) is not dict:
            raise _UnusualError
        for key, values in extra.items():
            if type(key) is not str:
                raise _UnusualError
            if values is not None:
                _check_texts(values)
    return UserInfo._make((username, uid, groups, extra))


def _check_texts(values: Any) -> None:
    if type(values) is not list:
        raise _UnusualError
    for value in values:
        if type(value) is not str:
            raise _UnusualError


def from_model(review: schema.AdmissionReview) -> AdmissionReview:
    """The named tuples for a review the models validated."""
    request = review.request
    return AdmissionReview(
        review.api_version,
        review.kind,
        AdmissionRequest(
            request.uid,
            _kind_of(request.kind),
            _resource_of(request.resource),
            request.sub_resource,
            None if (kind := request.request_kind) is None else _kind_of(kind),
            None if (resource := request.request_resource) is None else _resource_of(resource),
            request.request_sub_resource,
            request.name,
            request.namespace,
            request.operation,
            UserInfo(
                request.user_info.username,
                request.user_info.uid,
                request.user_info.groups,
                request.user_info.extra,
            ),
            request.object,
            request.old_object,
            request.dry_run,
            request.options,
        ),
        review.response,
    )


def _kind_of(kind: schema.GroupVersionKind) -> GroupVersionKind:
    return GroupVersionKind(kind.group, kind.version, kind.kind)


def _resource_of(resource: schema.GroupVersionResource) -> GroupVersionResource:
    return GroupVersionResource(resource.group, resource.version, resource.resource)
