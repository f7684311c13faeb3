"""`POST /validate`: bytes in, an AdmissionReview out, through the pure admission core.

Anything wrong with the client's input is a 4xx with a JSON Status naming the
problem. Any other exception is the webhook's own fault and is answered in the
protocol, as controller-runtime's `admission.Errored` does: the request's uid,
`allowed: false`, `status.code: 500`, logged once with its traceback and
counted (`verdict="error"`); only a review that does not decode, with no uid to
answer with, gets a JSON Status 500.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Final

import orjson
from aiohttp import web

from webhook import replies
from webhook.admission import (
    AdmissionRequest,
    AdmissionReview,
    BadReviewError,
    Decision,
    Why,
    decide,
    decode_review,
    errored_answer,
    review_answer,
    subject_name,
)
from webhook.admission.audit import ALLOWED, DENIED
from webhook.admission.decision import EXEMPTIONS
from webhook.observability.logs import log_fields, logger
from webhook.server.memory import Trimmer
from webhook.server.refusal import refusal, refuse
from webhook.server.webhook_metrics import ERROR, WebhookMetrics

_log = logger("admission")
JSON: Final = "application/json"
# Allowed requests worth a log line: the webhook configuration or the object needs a look.
_NOTEWORTHY: Final = frozenset({Why.FOREIGN_RESOURCE, Why.UNKNOWN_OPERATION})
_LOGGED_WHEN_ALLOWED: Final = _NOTEWORTHY | EXEMPTIONS


class AdmissionEndpoint:
    """The /validate handler with its limits and metrics bound once, not looked up per request.

    Requests in flight and latency are measured around `handle` (`metrics.measured`);
    `draining` says whether the server is shutting down (the one thing it needs of the app).
    """

    def __init__(
        self,
        metrics: WebhookMetrics,
        draining: Callable[[], bool],
        max_body_bytes: int,
        body_timeout: float,
    ) -> None:
        self._metrics = metrics
        self._draining = draining
        self._max_body_bytes = max_body_bytes
        self._body_timeout = body_timeout
        self._trimmer = Trimmer()

    async def handle(self, request: web.Request) -> web.Response:
        try:
            response = await self._handle(request)
        except Exception as error:  # answered, never raised to aiohttp
            self._metrics.count("", ERROR)
            _log.error(
                "internal error", exc_info=error, extra={"fields": {"remote": request.remote}}
            )
            response = refusal(500, replies.internal_error(error))
        if self._draining():
            # kube-apiserver keeps its connections to a pod alive through the Service's
            # ClusterIP after the pod has left the endpoints; closed only at exit, one it
            # is reusing then fails the call ("write: broken pipe", seen on a real node in
            # `kubectl rollout restart` under load). So while draining, each connection
            # is closed after its answer and the next call opens one to a pod that stays.
            # Here, not in a middleware: aiohttp's middleware chain costs every review
            # (bench/admission/run.py).
            response.force_close()
        return response

    async def _handle(self, request: web.Request) -> web.Response:
        if request.method != "POST":
            return refuse(
                self._metrics,
                request,
                405,
                "method_not_allowed",
                replies.MSG_USE_POST,
                allow="POST",
            )
        if request.content_type != JSON:
            message = replies.unsupported_media_type(JSON, request.content_type[:64])
            return refuse(self._metrics, request, 415, "unsupported_media_type", message)
        content = request.content
        if not content.is_eof():
            return await self._answer_when_read(request)
        # The body already buffered (the common case) is taken as it is, without a timer,
        # coroutine or copy (bench/admission/run.py).
        body = content.read_nowait()
        if len(body) > self._max_body_bytes:
            return self._too_large(request)
        return self._answer(request, body)

    async def _answer_when_read(self, request: web.Request) -> web.Response:
        length = request.content_length
        if length is not None and length > self._max_body_bytes:
            return self._too_large(request)  # refused before it is read
        try:
            async with asyncio.timeout(self._body_timeout):
                body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return self._too_large(request)
        except TimeoutError:
            message = replies.body_timeout(self._body_timeout)
            return refuse(self._metrics, request, 408, "body_timeout", message, close=True)
        except ConnectionError:
            # The client hung up mid-body: its fault, and nobody is left to read the answer.
            return refuse(
                self._metrics, request, 400, "incomplete_body", replies.MSG_INCOMPLETE_BODY
            )
        return self._answer(request, body)

    def _answer(self, request: web.Request, body: bytes) -> web.Response:
        self._trimmer.after(len(body))
        try:
            review = decode_review(body)
        except BadReviewError as error:
            return refuse(self._metrics, request, 400, error.reason.value, error.message)
        try:
            decision = decide(review.request)
            answer = orjson.dumps(review_answer(review, decision))
            if not decision.allowed or decision.why in _LOGGED_WHEN_ALLOWED:
                _record(review.request, decision)
            self._metrics.count(review.request.operation, ALLOWED if decision.allowed else DENIED)
        except BadReviewError as error:
            return refuse(self._metrics, request, 400, error.reason.value, error.message)
        except Exception as error:  # answered in the protocol, counted once as an error
            return self._errored(review, error)
        return web.Response(body=answer, content_type=JSON)

    def _errored(self, review: AdmissionReview, error: Exception) -> web.Response:
        request = review.request
        self._metrics.count(request.operation, ERROR)
        fields = {"uid": request.uid, "operation": request.operation,
                  "namespace": request.namespace, "name": request.name}  # fmt: skip
        _log.error("internal error", exc_info=error, extra={"fields": fields})
        answer = errored_answer(review, replies.internal_error(error))
        return web.Response(body=orjson.dumps(answer), content_type=JSON)

    def _too_large(self, request: web.Request) -> web.Response:
        message = replies.body_too_large(self._max_body_bytes)
        return refuse(self._metrics, request, 413, "too_large", message, close=True)


def _record(request: AdmissionRequest, decision: Decision) -> None:
    """One log line: a denial, an invalid spec let through, or a misdirected request."""
    verdict, resource = decision.verdict, request.resource
    fields: dict[str, Any] = {
        "uid": request.uid,
        "operation": request.operation,
        "resource": f"{resource.get('resource', '')}.{resource.get('group', '')}",
        "namespace": request.namespace,
        "name": subject_name(request),
        "user": request.user_info.get("username", ""),
        "dry_run": bool(request.dry_run),
        "why": decision.why,  # a StrEnum: orjson writes its value
    }
    if verdict is not None:
        fields["problems"] = verdict.problem_count
    if not decision.allowed:
        log_fields(_log, logging.INFO, "denied", fields)
    elif decision.why in EXEMPTIONS:
        if verdict is not None and not verdict.valid:
            log_fields(_log, logging.INFO, "allowed despite an invalid spec", fields)
    elif decision.why in _NOTEWORTHY:
        log_fields(_log, logging.WARNING, "allowed without checking", fields)
