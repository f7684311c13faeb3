"""The two writes of in-use protection besides the condition: our finalizer, and its Events.

- The finalizer is written by server-side apply on the main resource as the
  writer's field manager (`metadata.finalizers` is a set-type list, so the
  apply owns our entry alone), which is the one reason the writer may patch
  `feedbackstores` at all; `usage.finalizer_configuration` is the body.
- Events say when a deletion is deferred and when it is let go, so `kubectl
  describe fs` tells the story. They are core/v1 Events like the `Validated`
  ones (`events.event_body`), best effort: logged and counted on failure,
  never retried (a namespace being deleted refuses new Events, for one).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any, Final, cast

import orjson
import urllib3
from kubernetes.client import ApiClient, CoreV1Api, CoreV1Event, CustomObjectsApi

from webhook.rules import inuse, limits
from webhook.status.cache import Key
from webhook.status.events import NORMAL, Transition, event_body
from webhook.status.kubeapi import APPLY_PATCH, FIELD_MANAGER, REQUEST_TIMEOUT
from webhook.status.metrics import WriterMetrics
from webhook.status.usage import View

log = logging.getLogger("webhook.status.protection")

MAX_MESSAGE: Final = 1024


class FinalizerApi:
    """Apply (or give up) our finalizer on one FeedbackStore."""

    def __init__(self, api_client: ApiClient) -> None:
        self._api = CustomObjectsApi(api_client)

    def apply(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        response = self._api.patch_namespaced_custom_object(
            limits.GROUP,
            limits.VERSION,
            namespace,
            limits.PLURAL,
            name,
            body,
            field_manager=FIELD_MANAGER,
            force=True,
            _content_type=APPLY_PATCH,
            _preload_content=False,
            _request_timeout=REQUEST_TIMEOUT,
        )
        raw = cast(urllib3.BaseHTTPResponse, response)
        try:
            result: dict[str, Any] = orjson.loads(raw.data)
        finally:
            raw.release_conn()
        return result


class UsageEvents:
    """`Normal DeletionDeferred` and `Normal DeletionReleased` about a store."""

    def __init__(self, api_client: ApiClient, instance: str, metrics: WriterMetrics) -> None:
        self._api = CoreV1Api(api_client)
        self._instance = instance
        self._metrics = metrics

    def record(self, store: dict[str, Any], reason: str, message: str, now: datetime) -> None:
        body = event_body(
            store, Transition(NORMAL, reason), message[:MAX_MESSAGE], self._instance, now
        )
        metadata = store["metadata"]
        try:
            self._api.create_namespaced_event(
                metadata["namespace"],
                CoreV1Event.model_validate(body),
                field_manager=FIELD_MANAGER,
                _request_timeout=REQUEST_TIMEOUT,
            )
        except Exception as error:  # best effort, as client-go's recorder
            self._metrics.events.labels(reason, "error").inc()
            log.warning(
                "event not recorded",
                extra={
                    "namespace": metadata["namespace"],
                    "object": metadata["name"],
                    "reason": reason,
                    "error": f"{type(error).__name__}: {error}"[:300],
                },
            )
            return
        self._metrics.events.labels(reason, "ok").inc()


class Protection:
    """What the writer needs for in-use protection: the agents' view, the finalizer, the Events."""

    def __init__(
        self,
        view: Callable[[Key], View],
        finalizers: FinalizerApi,
        events: UsageEvents | None,
    ) -> None:
        self.view = view
        self.finalizers = finalizers
        self._events = events

    def record(self, store: dict[str, Any], reason: str, message: str, now: datetime) -> None:
        if self._events is not None:
            self._events.record(store, reason, message, now)

    def record_release(self, store: dict[str, Any], now: datetime) -> None:
        message = (
            f"no {inuse.AGENT_KIND} references it any more: "
            f"finalizer {inuse.FINALIZER} removed, deletion goes on"
        )
        self.record(store, inuse.REASON_RELEASED, message, now)
