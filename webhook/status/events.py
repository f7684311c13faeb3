"""Kubernetes Events for verdict transitions, so `kubectl describe fs NAME` shows why.

An Event is emitted when an object's verdict turns invalid (`Warning
InvalidSpec`, including an object first seen invalid) or valid again (`Normal
SpecCoherent`); an object that is simply valid from the start, or stays
invalid, gets none, so a resync never spams. Events are best effort, as with
client-go's recorder: a failure is logged and counted, never retried.

They are written as core/v1 Events (involvedObject, firstTimestamp,
lastTimestamp, count), the shape `kubectl describe` has always read, and
correlated as client-go's recorder for that API does (correlation.py): the
same Event again on the same object patches the first one's `count` and
`lastTimestamp` instead of creating another.
"""

from __future__ import annotations

import http
import logging
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, cast

import orjson
import urllib3
from kubernetes.client import ApiClient, CoreV1Api, CoreV1Event
from kubernetes.client.exceptions import ApiException

from webhook.rules import Verdict, api, messages
from webhook.rules.summary import summarize
from webhook.status.condition import STATUS_FALSE, STATUS_TRUE
from webhook.status.correlation import Correlated, EventCorrelator
from webhook.status.kubeapi import FIELD_MANAGER, REQUEST_TIMEOUT
from webhook.status.metrics import WriterMetrics

log = logging.getLogger("webhook.status.events")

# Short enough to read in `kubectl describe`; events.k8s.io caps `note` at 1 kB.
MAX_EVENT_MESSAGE: Final = 1024
STRATEGIC_MERGE_PATCH: Final = "application/strategic-merge-patch+json"
WARNING: Final = "Warning"
NORMAL: Final = "Normal"


@dataclass(frozen=True, slots=True)
class Transition:
    type: str
    reason: str


def transition(previous_status: object, status: str) -> Transition | None:
    """The Event a status change deserves, if any."""
    if status == STATUS_FALSE and previous_status != STATUS_FALSE:
        return Transition(WARNING, api.REASON_INVALID)
    if status == STATUS_TRUE and previous_status == STATUS_FALSE:
        return Transition(NORMAL, api.REASON_VALID)
    return None


def event_message(verdict: Verdict) -> str:
    if verdict.valid:
        return messages.MESSAGE_VALID
    prefix = "spec is invalid: "
    return prefix + summarize(verdict, MAX_EVENT_MESSAGE - len(prefix))


def event_body(
    obj: dict[str, Any], change: Transition, message: str, instance: str, now: datetime
) -> dict[str, Any]:
    """A core/v1 Event about `obj`, named `<object>.<hex nanoseconds>` as client-go names them."""
    metadata = obj["metadata"]
    stamp = now.replace(microsecond=0)
    involved = {
        "apiVersion": api.API_VERSION,
        "kind": api.KIND,
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
    """Sends Events through client-go's correlation (correlation.py): a repeat patches `count`."""

    def __init__(
        self,
        api_client: ApiClient,
        instance: str,
        metrics: WriterMetrics,
        correlator: EventCorrelator | None = None,
    ) -> None:
        self._api = CoreV1Api(api_client)
        self._instance = instance
        self._metrics = metrics
        self._correlator = correlator or EventCorrelator()

    def record(
        self, obj: dict[str, Any], change: Transition, verdict: Verdict, now: datetime
    ) -> None:
        self.emit(obj, change, event_message(verdict), now)

    def emit(self, obj: dict[str, Any], change: Transition, message: str, now: datetime) -> None:
        """Create the Event, or patch the same one seen before; best effort, never retried."""
        body = event_body(obj, change, message, self._instance, now)
        correlated = self._correlator.correlate(body, now)
        if correlated.skip:
            self._metrics.events.labels(change.reason, "dropped").inc()
            return
        metadata = obj["metadata"]
        try:
            written, patched = self._send(correlated)
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
        self._correlator.update_state(correlated.key, written)
        self._metrics.events.labels(change.reason, "patched" if patched else "ok").inc()

    def _send(self, correlated: Correlated) -> tuple[dict[str, Any], bool]:
        """The server's copy of the Event, and whether it was patched (else created)."""
        event = correlated.event
        namespace = event["metadata"]["namespace"]
        if correlated.patch is not None:
            try:
                patched = _json(
                    self._api.patch_namespaced_event(
                        event["metadata"]["name"],
                        namespace,
                        correlated.patch,
                        field_manager=FIELD_MANAGER,
                        _content_type=STRATEGIC_MERGE_PATCH,
                        _preload_content=False,
                        _request_timeout=REQUEST_TIMEOUT,
                    )
                )
                return patched, True
            except ApiException as error:
                # Events live an hour (kube-apiserver --event-ttl): a patch may find it gone,
                # and client-go creates it afresh then, with the count it has reached.
                if error.status != http.HTTPStatus.NOT_FOUND:
                    raise
            event = {**event, "metadata": {**event["metadata"], "resourceVersion": None}}
        created = self._api.create_namespaced_event(
            namespace,
            CoreV1Event.model_validate(event),
            field_manager=FIELD_MANAGER,
            _preload_content=False,
            _request_timeout=REQUEST_TIMEOUT,
        )
        return _json(created), False


def _json(response: object) -> dict[str, Any]:
    raw = cast(urllib3.BaseHTTPResponse, response)
    try:
        decoded = orjson.loads(raw.data)
    finally:
        raw.release_conn()
    return decoded if isinstance(decoded, dict) else {}
