"""Failures in the shape kube-apiserver sends them: a ``metav1.Status`` body with the HTTP code.

Kubernetes imitated: "API Concepts: Status" and ``k8s.io/apimachinery/pkg/api/errors``
(``NewNotFound``, ``NewConflict``, ``NewAlreadyExists``, ``NewInvalid``, ``NewBadRequest``,
``NewResourceExpired``, ``NewTooManyRequests``, ``NewInternalError``, ``NewApplyConflict``,
``NewGenericServerResponse``) — the reason strings and message formats below are theirs, so a
client that branches on ``reason`` or ``code`` behaves as it would against a real cluster.
"""

from __future__ import annotations

from typing import Any

from tests.support.emulator.resources import ResourceType

Cause = dict[str, str]


class ApiError(Exception):
    """Raised anywhere in the emulator; the HTTP layer turns it into a Status response."""

    def __init__(self, status: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        super().__init__(status.get("message", ""))
        self.status = status
        self.headers = headers or {}

    @property
    def code(self) -> int:
        return int(self.status["code"])


def status_body(
    code: int, reason: str, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details is not None:
        body["details"] = details
    return body


def _details(resource: ResourceType, name: str, **extra: Any) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name}
    if resource.group:
        details["group"] = resource.group
    details["kind"] = resource.plural
    details.update(extra)
    return details


def not_found(resource: ResourceType, name: str) -> ApiError:
    message = f'{resource.group_resource} "{name}" not found'
    return ApiError(status_body(404, "NotFound", message, _details(resource, name)))


def already_exists(resource: ResourceType, name: str) -> ApiError:
    message = f'{resource.group_resource} "{name}" already exists'
    return ApiError(status_body(409, "AlreadyExists", message, _details(resource, name)))


def conflict(resource: ResourceType, name: str, why: str) -> ApiError:
    """``errors.NewConflict``: optimistic concurrency lost ("API Concepts: Resource versions")."""
    message = f'Operation cannot be fulfilled on {resource.group_resource} "{name}": {why}'
    return ApiError(status_body(409, "Conflict", message, _details(resource, name)))


OBJECT_MODIFIED = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def invalid(group: str, kind: str, name: str, causes: list[Cause]) -> ApiError:
    """``errors.NewInvalid``: 422 with one cause per field error, as kubectl prints them."""
    qualified = f"{kind}.{group}" if group else kind
    texts = [f"{c['field']}: {c['message']}" if c.get("field") else c["message"] for c in causes]
    summary = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    details["causes"] = causes
    message = f'{qualified} "{name}" is invalid: {summary}'
    return ApiError(status_body(422, "Invalid", message, details))


def field_cause(reason: str, field: str, message: str) -> Cause:
    return {"reason": reason, "message": message, "field": field}


def bad_request(message: str) -> ApiError:
    return ApiError(status_body(400, "BadRequest", message))


def rejected_patch(server_message: str) -> ApiError:
    """``NewGenericServerResponse(422, ...)``: how a JSON patch that fails to apply comes back.

    kubectl shows it as "The request is invalid: the server rejected our request due to an error
    in our request"; the json-patch library's own text travels in the single cause.
    """
    details = {"causes": [{"reason": "UnexpectedServerResponse", "message": server_message}]}
    message = "the server rejected our request due to an error in our request"
    return ApiError(status_body(422, "Invalid", message, details))


def expired(message: str) -> ApiError:
    """``errors.NewResourceExpired``: 410 Gone with reason Expired ("Resource versions")."""
    return ApiError(status_body(410, "Expired", message))


LIST_TOO_OLD = "The resourceVersion for the provided list is too old."
CONTINUE_INCONSISTENT = (
    "The provided continue parameter is too old to display a consistent list result. "
    "You can start a new list without the continue parameter, or use the continue token in "
    "this response to retrieve the remainder of the results. Continuing with the provided "
    "token results in an inconsistent list - objects that were created, modified, or deleted "
    "between the time the first chunk was returned and now may show up in the list."
)


def continue_expired(inconsistent_token: str) -> ApiError:
    """A continue token from before the compaction point: 410 Expired, and a way on.

    As etcd3's ``handleCompactedErrorForPaging``: the Status's ``metadata.continue`` is a
    token for the rest of the list at the latest revision (its ``rv`` is -1), which the
    message calls inconsistent (tests/kube/test_status_pager_real.py saw exactly this).
    """
    body = status_body(410, "Expired", CONTINUE_INCONSISTENT)
    body["metadata"] = {"continue": inconsistent_token}
    return ApiError(body)


def too_old_watch(requested: int, oldest: int) -> dict[str, Any]:
    """The Status inside the ERROR event of a watch that starts before the compaction point."""
    return status_body(410, "Expired", f"too old resource version: {requested} ({oldest})")


def too_large_resource_version(requested: int, current: int) -> ApiError:
    """``storage.NewTooLargeResourceVersionError``: 504 asking the client to retry."""
    details = {
        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
        "retryAfterSeconds": 1,
    }
    message = f"Too large resource version: {requested}, current: {current}"
    return ApiError(status_body(504, "Timeout", message, details), {"Retry-After": "1"})


def unsupported_media_type(content_type: str, accepted: list[str]) -> ApiError:
    """``negotiation.NewUnsupportedMediaTypeError``: a PATCH type the resource does not accept."""
    message = (
        f"the body of the request was in an unknown format - accepted media types include: "
        f"{', '.join(accepted)}"
    )
    del content_type
    return ApiError(status_body(415, "UnsupportedMediaType", message))


def too_many_requests(retry_after: int) -> ApiError:
    """``errors.NewTooManyRequests``: what API Priority and Fairness answers when it sheds load."""
    details = {"retryAfterSeconds": retry_after}
    message = "Too many requests, please try again later."
    return ApiError(
        status_body(429, "TooManyRequests", message, details),
        {"Retry-After": str(retry_after)},
    )


def request_too_large(limit: int) -> ApiError:
    return ApiError(
        status_body(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}")
    )


def internal(message: str) -> ApiError:
    details = {"causes": [{"message": message}]}
    body = status_body(500, "InternalError", f"Internal error occurred: {message}", details)
    return ApiError(body)


def method_not_allowed(method: str) -> ApiError:
    return ApiError(
        status_body(
            405,
            "MethodNotAllowed",
            f"the server does not allow this method on the requested resource ({method})",
        )
    )


def path_not_found(path: str) -> ApiError:
    del path
    return ApiError(
        status_body(404, "NotFound", "the server could not find the requested resource")
    )
