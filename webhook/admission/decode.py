"""Request bytes to a typed AdmissionReview, or a BadReviewError saying what is wrong.

A malformed review is a broken or hostile client: a 4xx naming the first thing
wrong, and a short reason for the bad-requests metric. orjson parses and the
envelope's models validate, rather than `model_validate_json`: pydantic-core's
parser accepts NaN and Infinity, stops at a nesting depth of about 200 (an
object may be nested 1,000 deep), and builds a large untyped `object` several
times slower. Nothing here recurses over the input.
"""

from __future__ import annotations

import enum
from typing import Any

import orjson
from pydantic import ValidationError

from webhook import replies
from webhook.admission.envelope import API_VERSIONS, REVIEW_KIND, AdmissionReview
from webhook.rules.field_errors import format_value
from webhook.text import ELLIPSIS, cut

# Validation errors listed in one message; a hostile envelope can have thousands.
_MAX_ERRORS_SHOWN = 3
# A map key in an error is its first 64 characters and an ellipsis: keys are client data.
_KEY_SHOWN = 64 + len(ELLIPSIS)
# JSON values a review may hold, counted before anything is decoded as the bytes `{`, `[`
# and `,` (those inside strings too: an over-count): each value decodes to a Python object
# of 24-250 bytes, so 4 MiB of `{},` would cost ~300 MiB decoded, and of `"ab",` ~50 MiB.
# The largest FeedbackStore review (two objects at etcd's limit, managedFields included)
# counts 13,291 (tests/kube/test_registration_limits_real.py); this bound
# keeps any review's decoded objects to a few tens of MiB (bench/admission/attack.py).
MAX_JSON_VALUES = 262_144


class BadReviewReason(enum.StrEnum):
    """Why a request body is not a usable AdmissionReview (the bad-requests metric label)."""

    NOT_JSON = "not_json"
    TOO_DEEP = "too_deep"
    TOO_MANY_VALUES = "too_many_values"
    NOT_OBJECT = "not_object"
    NOT_ADMISSION_REVIEW = "not_admission_review"
    NO_REQUEST = "no_request"
    NO_UID = "no_uid"
    NO_OBJECT = "no_object"
    WRONG_TYPE = "wrong_type"


class BadReviewError(ValueError):
    """The body cannot be answered with an AdmissionReview; `message` tells the client why."""

    def __init__(self, reason: BadReviewReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def decode_review(body: bytes) -> AdmissionReview:
    # Each value counted is a byte of the body, so a body of at most MAX_JSON_VALUES bytes is
    # within the bound uncounted. Counting reads every byte three times: on a 100 KB review
    # that was a fifth of all the work (bench/admission/instructions.py).
    if len(body) > MAX_JSON_VALUES and json_values(body) > MAX_JSON_VALUES:
        raise BadReviewError(
            BadReviewReason.TOO_MANY_VALUES, replies.review_too_many_values(MAX_JSON_VALUES)
        )
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        if "depth limit" in str(error):
            raise BadReviewError(BadReviewReason.TOO_DEEP, replies.review_too_deep(error)) from None
        raise BadReviewError(BadReviewReason.NOT_JSON, replies.review_not_json(error)) from None
    try:
        return AdmissionReview.model_validate(document)
    except ValidationError as error:
        # Whatever the models accept passes every check below, so they run only to say
        # what is wrong, in a client's words rather than the models' where they can.
        _check_outline(document)
        raise BadReviewError(BadReviewReason.WRONG_TYPE, _describe(error)) from None


def json_values(body: bytes) -> int:
    """At least how many values `body` holds if it is JSON, counted in C without decoding it."""
    return body.count(b"{") + body.count(b"[") + body.count(b",")


def _check_outline(document: Any) -> None:
    """Raise for an object, kind, apiVersion, request or uid that is missing or wrong."""
    if type(document) is not dict:
        raise BadReviewError(
            BadReviewReason.NOT_OBJECT, replies.review_not_object(format_value(document))
        )
    kind, api_version = document.get("kind"), document.get("apiVersion")
    if kind != REVIEW_KIND or api_version not in API_VERSIONS:
        raise BadReviewError(
            BadReviewReason.NOT_ADMISSION_REVIEW,
            replies.review_wrong_kind(REVIEW_KIND, API_VERSIONS, _shown(kind), _shown(api_version)),
        )
    request = document.get("request")
    if request is None:
        raise BadReviewError(BadReviewReason.NO_REQUEST, replies.MSG_NO_REQUEST)
    if type(request) is not dict:
        raise BadReviewError(
            BadReviewReason.WRONG_TYPE, replies.request_not_object(format_value(request))
        )
    if request.get("uid") in (None, ""):
        raise BadReviewError(BadReviewReason.NO_UID, replies.MSG_NO_UID)


def _shown(value: object) -> str:
    return "(none)" if value is None else format_value(value)


def _describe(error: ValidationError) -> str:
    """`path: what was expected` for the first few errors, without echoing the input."""
    details = error.errors(include_url=False, include_context=False, include_input=False)
    shown = [f"{_location(d['loc'])}: {d['msg']}" for d in details[:_MAX_ERRORS_SHOWN]]
    return replies.review_invalid(shown, max(len(details) - _MAX_ERRORS_SHOWN, 0))


def _location(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            # Map keys are client data: cut them so a 1 MiB key is not echoed back.
            name = cut(part, _KEY_SHOWN)
            path += f".{name}" if path else name
    return path or "(root)"
