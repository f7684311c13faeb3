"""Kubernetes Events for verdict transitions, so `kubectl describe fs NAME` shows why.

An Event is emitted when an object's verdict turns invalid (`Warning
InvalidSpec`, including an object first seen invalid) or valid again (`Normal
SpecCoherent`); an object that is simply valid from the start, or stays
invalid, gets none, so a resync never spams. Events are best effort, as with
client-go's recorder: a failure is logged and counted, never retried.

They are written as core/v1 Events (involvedObject, firstTimestamp,
lastTimestamp, count), the shape `kubectl describe` has always read.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from kubernetes.client import ApiClient, CoreV1Api, CoreV1Event

from webhook.rules import Verdict, limits
from webhook.rules.report import summarize
from webhook.status.condition import STATUS_FALSE, STATUS_TRUE
from webhook.status.kubeapi import FIELD_MANAGER, REQUEST_TIMEOUT
from webhook.status.metrics import WriterMetrics

log = logging.getLogger("webhook.status.events")

# Short enough to read in `kubectl describe`; events.k8s.io caps `note` at 1 kB.
MAX_EVENT_MESSAGE: Final = 1024
WARNING: Final = "Warning"
NORMAL: Final = "Normal"


@dataclass(frozen=True, slots=True)
class Transition:
    type: str
    reason: str


def transition(previous_status: object, status: str) -> Transition | None:
    """The Event a status change deserves, if any."""
    if status == STATUS_FALSE and previous_status != STATUS_FALSE:
        return Transition(WARNING, limits.REASON_INVALID)
    if status == STATUS_TRUE and previous_status == STATUS_FALSE:
        return Transition(NORMAL, limits.REASON_VALID)
    return None


def event_message(verdict: Verdict) -> str:
    if verdict.valid:
        return limits.MESSAGE_VALID
    prefix = "spec is invalid: "
    return prefix + summarize(verdict, MAX_EVENT_MESSAGE - len(prefix))


def event_body(
    obj: dict[str, Any], change: Transition, message: str, instance: str, now: datetime
) -> dict[str, Any]:
    """A core/v1 Event about `obj`, named `<object>.<hex nanoseconds>` as client-go names them."""
    metadata = obj["metadata"]
    stamp = now.replace(microsecond=0)
    involved = {
        "apiVersion": limits.API_VERSION,
        "kind": limits.KIND,
        "name": metadata["name"],
        "namespace": metadata["namespace"],
    }
    for source, target in (("uid", "uid"), ("resourceVersion", "resourceVersion")):
        if isinstance(metadata.get(source), str):
            involved[target] = metadata[source]
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{metadata['name'][:200]}.{time.time_ns():x}",
            "namespace": metadata["namespace"],
        },
        "involvedObject": involved,
        "type": change.type,
        "reason": change.reason,
        "message": message,
        "source": {"component": FIELD_MANAGER},
        "reportingComponent": FIELD_MANAGER,
        "reportingInstance": instance[:128],
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


class EventRecorder:
    def __init__(self, api_client: ApiClient, instance: str, metrics: WriterMetrics) -> None:
        self._api = CoreV1Api(api_client)
        self._instance = instance
        self._metrics = metrics

    def record(
        self, obj: dict[str, Any], change: Transition, verdict: Verdict, now: datetime
    ) -> None:
        body = event_body(obj, change, event_message(verdict), self._instance, now)
        metadata = obj["metadata"]
        try:
            self._api.create_namespaced_event(
                metadata["namespace"],
                CoreV1Event.model_validate(body),
                field_manager=FIELD_MANAGER,
                _request_timeout=REQUEST_TIMEOUT,
            )
        except Exception as error:  # best effort: counted and logged, never retried
            self._metrics.events.labels(change.reason, "error").inc()
            log.warning(
                "event not recorded",
                extra={
                    "namespace": metadata["namespace"],
                    "object": metadata["name"],
                    "reason": change.reason,
                    "error": f"{type(error).__name__}: {error}"[:300],
                },
            )
            return
        self._metrics.events.labels(change.reason, "ok").inc()
