"""4xx (and the rare 500) answers as a metav1.Status in JSON, and how a bad request is refused.

kube-apiserver includes a failed webhook call's body in its error, and a
Status with a reason and a message is what every Kubernetes client already
knows how to read. A bad request is the client's doing: one warning line, no
traceback, counted by reason in `bad_requests`, whichever layer found it.
"""

from __future__ import annotations

from typing import Final

import orjson
from aiohttp import web

from webhook.admission.response import INTERNAL_ERROR_CODE, INTERNAL_ERROR_REASON
from webhook.observability.logs import logger
from webhook.server.webhook_metrics import WebhookMetrics

_log = logger("admission")

# metav1.StatusReason for each status code this server refuses with.
_REASONS: Final = {
    400: "BadRequest",
    404: "NotFound",
    405: "MethodNotAllowed",
    408: "Timeout",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    431: "RequestHeaderFieldsTooLarge",
    INTERNAL_ERROR_CODE: INTERNAL_ERROR_REASON,
}


def refusal(status: int, message: str, *, allow: str | None = None) -> web.Response:
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": _REASONS.get(status, "BadRequest"),
        "code": status,
    }
    headers = {"Allow": allow} if allow else None
    return web.Response(
        status=status, body=orjson.dumps(body), content_type="application/json", headers=headers
    )


def refuse(
    metrics: WebhookMetrics,
    request: web.BaseRequest,
    status: int,
    reason: str,
    message: str,
    *,
    allow: str | None = None,
    close: bool = False,
) -> web.Response:
    """The answer to a bad request, logged as one warning and counted under `reason`; `close` when
    the rest of an oversized or stalled body is not worth reading.
    """
    metrics.bad_requests.labels(reason).inc()
    fields = {"status": status, "reason": reason, "error": message, "remote": request.remote}
    _log.warning("bad request", extra={"fields": fields})
    response = refusal(status, message, allow=allow)
    if close:
        response.force_close()
    return response
