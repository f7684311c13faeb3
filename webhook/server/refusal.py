"""4xx (and the rare 500) answers as a metav1.Status in JSON.

kube-apiserver includes a failed webhook call's body in its error, and a
Status with a reason and a message is what every Kubernetes client already
knows how to read.
"""

from __future__ import annotations

from typing import Final

import orjson
from aiohttp import web

# metav1.StatusReason for each status code this server refuses with.
_REASONS: Final = {
    400: "BadRequest",
    404: "NotFound",
    405: "MethodNotAllowed",
    408: "Timeout",
    413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType",
    500: "InternalError",
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
