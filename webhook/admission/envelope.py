"""The AdmissionReview envelope (admission.k8s.io/v1 and v1beta1): its one declaration.

Every field kube-apiserver may send is declared, so the upstream round-trip
fixtures (which set all of them) parse, and fields a newer server adds are
ignored. Types are strict: a wrongly typed envelope is a broken client,
answered 400 rather than guessed at, in these models' words. `object`,
`oldObject` and `options` stay untyped: the rules read them, and typing them
here would walk a 1.5 MiB object twice.
"""

from __future__ import annotations

from typing import Any, Final, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypedDict  # pydantic takes typing's only from Python 3.12

ApiVersion = Literal["admission.k8s.io/v1", "admission.k8s.io/v1beta1"]
ReviewKind = Literal["AdmissionReview"]
API_VERSIONS: Final[tuple[str, ...]] = get_args(ApiVersion)
REVIEW_KIND: Final[str] = get_args(ReviewKind)[0]

# `request.operation`: the four kube-apiserver sends (admissionv1.Operation). A string, not an
# enum, in the request: a newer server's fifth must still parse, and is answered as unknown.
CREATE: Final = "CREATE"
UPDATE: Final = "UPDATE"
DELETE: Final = "DELETE"
CONNECT: Final = "CONNECT"
OPERATIONS: Final = (CREATE, UPDATE, DELETE, CONNECT)


class _Envelope(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)


# The request's small records (five a review) are TypedDicts, checked by the request's strict
# config and read with `.get`: no model instance each (bench/admission/run.py).
class GroupVersionKind(TypedDict, total=False):
    group: str
    version: str
    kind: str


class GroupVersionResource(TypedDict, total=False):
    group: str
    version: str
    resource: str


class UserInfo(TypedDict, total=False):
    username: str
    uid: str
    groups: list[str] | None
    extra: dict[str, list[str] | None] | None


class StatusCause(_Envelope):
    reason: str = ""
    message: str = ""
    field: str = ""


class StatusDetails(_Envelope):
    name: str = ""
    group: str = ""
    kind: str = ""
    uid: str = ""
    causes: list[StatusCause] | None = None
    retry_after_seconds: int = Field(default=0, alias="retryAfterSeconds")


class ListMeta(_Envelope):
    self_link: str = Field(default="", alias="selfLink")
    resource_version: str = Field(default="", alias="resourceVersion")
    continue_: str = Field(default="", alias="continue")
    remaining_item_count: int | None = Field(default=None, alias="remainingItemCount")
    shard_info: dict[str, Any] | None = Field(default=None, alias="shardInfo")


class Status(_Envelope):
    """metav1.Status as embedded in an AdmissionResponse (no apiVersion/kind there)."""

    metadata: ListMeta | None = None
    status: str = ""
    message: str = ""
    reason: str = ""
    details: StatusDetails | None = None
    code: int = 0


class AdmissionResponse(_Envelope):
    """Only the round-trip fixtures send one inside a request; validated, never read."""

    uid: str
    allowed: bool
    status: Status | None = None
    patch: str | None = None
    patch_type: str | None = Field(default=None, alias="patchType")
    audit_annotations: dict[str, str] | None = Field(default=None, alias="auditAnnotations")
    warnings: list[str] | None = None


class AdmissionRequest(_Envelope):
    uid: str = Field(min_length=1)
    kind: GroupVersionKind = Field(default_factory=GroupVersionKind)
    resource: GroupVersionResource = Field(default_factory=GroupVersionResource)
    sub_resource: str = Field(default="", alias="subResource")
    request_kind: GroupVersionKind | None = Field(default=None, alias="requestKind")
    request_resource: GroupVersionResource | None = Field(default=None, alias="requestResource")
    request_sub_resource: str = Field(default="", alias="requestSubResource")
    name: str = ""
    namespace: str = ""
    operation: str = ""
    user_info: UserInfo = Field(default_factory=UserInfo, alias="userInfo")
    object: Any = None
    old_object: Any = Field(default=None, alias="oldObject")
    dry_run: bool | None = Field(default=None, alias="dryRun")
    options: Any = None


class AdmissionReview(_Envelope):
    api_version: ApiVersion = Field(alias="apiVersion")
    kind: ReviewKind
    request: AdmissionRequest
    response: AdmissionResponse | None = None
