"""The AdmissionReview envelope (admission.k8s.io/v1 and v1beta1) as the webhook reads it.

Named tuples: immutable, typed, and cheap to build once per request. Every
field kube-apiserver may send is here, with the type and default that
`schema` declares for it; `decode` builds them straight from the JSON for
the shape kube-apiserver sends, and from the validated `schema` models for
anything else. `object`, `oldObject` and `options` stay untyped
(`RawExtension`): the rules read them.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from webhook.admission.schema import API_VERSIONS, REVIEW_KIND, V1, V1BETA1, AdmissionResponse

__all__ = [
    "API_VERSIONS",
    "REVIEW_KIND",
    "V1",
    "V1BETA1",
    "AdmissionRequest",
    "AdmissionReview",
    "GroupVersionKind",
    "GroupVersionResource",
    "UserInfo",
]


class GroupVersionKind(NamedTuple):
    group: str = ""
    version: str = ""
    kind: str = ""


class GroupVersionResource(NamedTuple):
    group: str = ""
    version: str = ""
    resource: str = ""


class UserInfo(NamedTuple):
    username: str = ""
    uid: str = ""
    groups: list[str] | None = None
    extra: dict[str, list[str] | None] | None = None


class AdmissionRequest(NamedTuple):
    uid: str
    kind: GroupVersionKind = GroupVersionKind()
    resource: GroupVersionResource = GroupVersionResource()
    sub_resource: str = ""
    request_kind: GroupVersionKind | None = None
    request_resource: GroupVersionResource | None = None
    request_sub_resource: str = ""
    name: str = ""
    namespace: str = ""
    operation: str = ""
    user_info: UserInfo = UserInfo()
    object: Any = None
    old_object: Any = None
    dry_run: bool | None = None
    options: Any = None


class AdmissionReview(NamedTuple):
    api_version: str
    kind: str
    request: AdmissionRequest
    # Only the round-trip fixtures carry one; kept as validated.
    response: AdmissionResponse | None = None
