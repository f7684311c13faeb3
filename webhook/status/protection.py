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
from typing import Any, Final

from kubernetes.client import ApiClient, CustomObjectsApi

from webhook.kube.cache import Key
from webhook.rules import inuse
from webhook.status.events import NORMAL, EventRecorder, Transition
from webhook.status.kubeapi import apply_as_writer
from webhook.status.usage import View

log = logging.getLogger("feedbackstore.status.protection")

MAX_MESSAGE: Final = 1024


class FinalizerApi:
    """Apply (or give up) our finalizer on one FeedbackStore."""

    def __init__(self, api_client: ApiClient) -> None:
        self._api = CustomObjectsApi(api_client)

    def apply(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        return apply_as_writer(self._api.patch_namespaced_custom_object, namespace, name, body)


class UsageEvents:
    """`Normal DeletionDeferred` and `Normal DeletionReleased` about a store.

    Sent through the writer's one `EventRecorder`, so a deferral repeated on
    the same store patches the first Event's count, as for `Validated`.
    """

    def __init__(self, recorder: EventRecorder) -> None:
        self._recorder = recorder

    def record(self, store: dict[str, Any], reason: str, message: str, now: datetime) -> None:
        self._recorder.emit(store, Transition(NORMAL, reason), message[:MAX_MESSAGE], now)


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
