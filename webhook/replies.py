"""Every sentence the admission webhook and its endpoints say to a user, kept apart from
the logic that decides when to say them. The verdict's own sentences are in `rules/messages.py`;
audit values and a refusal's Status reasons are machine values, kept with their keys."""

from collections.abc import Sequence
from typing import Final

from webhook.rules import api, inuse
from webhook.text import and_more, counted

# -- Admission request errors: the 4xx answers of POST /validate ---------------------------
# 400: the body is not a usable AdmissionReview: the client's fault, said as a JSON Status.


def review_too_deep(error: object) -> str:
    return f"request body is nested too deeply: {error}"


def review_too_many_values(limit: int) -> str:
    return f"request body holds more than {limit} JSON values"


def review_not_json(error: object) -> str:
    return f"request body is not JSON: {error}"


def review_not_object(shown: str) -> str:
    return f"request body must be a JSON object (an AdmissionReview), got {shown}"


def review_wrong_kind(
    expected_kind: str, expected_versions: Sequence[str], kind: str, api_version: str
) -> str:
    versions = " or ".join(f'"{version}"' for version in expected_versions)
    return (
        f'expected kind "{expected_kind}" with apiVersion {versions}, '
        f"got kind {kind} and apiVersion {api_version}"
    )


MSG_NO_REQUEST: Final = "AdmissionReview has no request"
MSG_NO_UID: Final = "AdmissionReview request has no uid"


def request_not_object(shown: str) -> str:
    return f"request: must be an object, got {shown}"


def review_invalid(errors: Sequence[str], more: int) -> str:
    parts = [*errors, and_more(more)] if more else errors
    return "invalid AdmissionReview: " + "; ".join(parts)


def object_required(operation: str) -> str:
    return f"request.object is required for {operation}"


# 405, 415, 408, 413: refused before the body is decoded.
MSG_USE_POST: Final = "use POST"
MSG_INCOMPLETE_BODY: Final = "the connection closed before the request body was complete"


def unsupported_media_type(expected: str, got: str) -> str:
    return f"Content-Type must be {expected}, got {got}"


def body_timeout(seconds: float) -> str:
    return f"request body not received within {seconds:g} s"


def body_too_large(limit: int) -> str:
    return f"request body exceeds the {limit}-byte limit (--max-body-bytes)"


def header_too_large(limit: int) -> str:
    return f"a request or header line exceeds {limit} bytes"


def too_many_headers(limit: int) -> str:
    return f"more than {limit} header lines"


def bad_http(error: str) -> str:
    """400 for a request aiohttp's parser refuses before any handler runs."""
    return f"malformed HTTP request: {error[:200]}"


def internal_error(error: BaseException) -> str:
    """500: the webhook failed; its log has the traceback under the uid."""
    return f"internal error in the webhook ({type(error).__name__}); its log has the details"


# -- The other endpoints: the probes and what is not /validate -----------------------------
# Whole plain-text bodies of /healthz and /readyz (the webhook's and the status
# writer's), newline included: a probe or curl reads them as one line.
PROBE_OK: Final = "ok\n"
PROBE_NOT_READY: Final = "not ready\n"
PROBE_SHUTTING_DOWN: Final = "shutting down\n"
PROBE_NOT_ACCEPTING: Final = "not accepting connections yet\n"


def no_endpoint(path: str) -> str:
    """404: any path the port does not serve."""
    return f"no endpoint {path}; admission reviews go to POST /validate"


def get_only(path: str) -> str:
    """405: the probes and /metrics answer GET and HEAD."""
    return f"{path} answers GET only"


# -- Admission warnings: allowed, and the user should know why ------------------------------
# Why an UPDATE passes whatever its declaration (`spec`, or an agent's `spec.feedback`) says.
def exempt_unchanged(path: str) -> str:
    return f"{path} is unchanged"


EXEMPT_TERMINATING: Final = "the object is being deleted"


def warn_invalid_but_allowed(exemption: str, count: int, path: str) -> str:
    return (
        f"allowed because {exemption}, but {path} is invalid "
        f"({counted(count, 'problem')}); fix it before changing it"
    )


def warn_unchecked_operation(quoted_operation: str) -> str:
    return f"operation {quoted_operation} is not checked by this webhook; allowed"


def warn_foreign_resource(quoted_resource: str, judged: str) -> str:
    """A request the webhook configuration should not have sent here; `judged` lists what is."""
    return f"{quoted_resource} is not {judged}: allowed unchecked; fix the webhook's rules"


def more_warnings(count: int) -> str:
    return and_more(count, "warning")


# -- Deletion: what a DELETE of a store in use is told ----------------------------------------


def delete_in_use(quoted_name: str, state: str) -> str:
    """The headline: `state` names the users (`inuse.in_use_clause`), or says `IN_USE`."""
    return f"{api.KIND} {quoted_name} is {state}"


# The state when the InUse condition is True but its message names no users (not ours).
IN_USE: Final = "in use"
DELETE_DEFERRED: Final = (
    f"it stays Terminating until no {inuse.AGENT_KIND} references it, then it is deleted"
)
DELETE_UNPROTECTED: Final = (
    "it is deleted now (the status writer has not protected it yet): its agents will go Ready=False"
)
