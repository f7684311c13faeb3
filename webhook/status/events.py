"""core/v1 Events for `kubectl describe fs`: on turning invalid or valid again, on a deferred or
released deletion; never on staying the same, so a resync never spams (and, on an AgentDeployment,
its inline declaration's turns: status/inline.py). Best effort, as client-go's
recorder: a failure is logged and counted, never retried; `EventLimit` bounds each store.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from kubernetes.client import ApiClient, CoreV1Api, CoreV1Event

from webhook.install import FIELD_MANAGER
from webhook.kube.client import REQUEST_TIMEOUT, error_text, read_json
from webhook.kube.fencing import NotLeadingError
from webhook.kube.objects import CONDITION_FALSE, CONDITION_TRUE
from webhook.kube.ratelimit import TokenBucket
from webhook.observability.logs import logger
from webhook.rules import Verdict, api, messages
from webhook.rules.summary import summarize
from webhook.status.writer_metrics import WriterMetrics

log = logger("status.events")

MAX_EVENT_MESSAGE: Final = 1024  # events.k8s.io caps `note` at 1 kB
# Per object: this many Events at once, then one per EVENT_REFILL_SECONDS (client-go's figures).
EVENT_BURST: Final = 25
EVENT_REFILL_SECONDS: Final = 300.0
WARNING: Final = "Warning"
NORMAL: Final = "Normal"


@dataclass(frozen=True, slots=True)
class Transition:
    type: str
    reason: str


def transition(previous_status: object, status: str) -> Transition | None:
    """The Event a status change deserves, if any (first seen invalid counts as turning so)."""
    if status == CONDITION_FALSE and previous_status != CONDITION_FALSE:
        return Transition(WARNING, api.REASON_INVALID)
    if status == CONDITION_TRUE and previous_status == CONDITION_FALSE:
        return Transition(NORMAL, api.REASON_VALID)
    return None


def event_message(verdict: Verdict) -> str:
    if verdict.valid:
        return messages.MESSAGE_VALID
    prefix = "spec is invalid: "
    return prefix + summarize(verdict, MAX_EVENT_MESSAGE - len(prefix))


# What an Event is about, (apiVersion, kind): a FeedbackStore unless the caller names another.
STORE: Final = (api.API_VERSION, api.KIND)


def event_body(
    obj: dict[str, Any], change: Transition, message: str, instance: str, now: datetime,
    about: tuple[str, str] = STORE,
) -> dict[str, Any]:  # fmt: skip
    """A core/v1 Event about `obj` (a FeedbackStore unless `about` says otherwise), named
    `<object>.<hex nanoseconds>` as client-go names them."""
    metadata = obj["metadata"]
    stamp = now.replace(microsecond=0)
    involved = {
        "apiVersion": about[0],
        "kind": about[1],
        "name": metadata["name"],
        "namespace": metadata["namespace"],
    }
    for name in ("uid", "resourceVersion"):
        if isinstance(metadata.get(name), str):
            involved[name] = metadata[name]
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
        "message": message[:MAX_EVENT_MESSAGE],
        "source": {"component": FIELD_MANAGER},
        "reportingComponent": FIELD_MANAGER,
        "reportingInstance": instance[:128],
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


class EventLimit:
    """A token bucket per object (client-go's `EventSourceObjectSpamFilter`), for a store edited
    back and forth in a loop; the least recently used of `max_objects` buckets goes first.
    """

    def __init__(
        self,
        burst: int = EVENT_BURST,
        refill_seconds: float = EVENT_REFILL_SECONDS,
        max_objects: int = 4096,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._burst = burst
        self._qps = 1.0 / refill_seconds
        self._max = max_objects
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: OrderedDict[tuple[str, ...], TokenBucket] = OrderedDict()

    def allow(self, obj: dict[str, Any]) -> bool:
        """Takes a token if one is there."""
        metadata = obj["metadata"]
        key = (metadata["namespace"], metadata["name"], str(metadata.get("uid") or ""))
        with self._lock:
            bucket = self._buckets.get(key)
            if bucket is None:
                bucket = TokenBucket(self._qps, self._burst, clock=self._clock)
                self._buckets[key] = bucket
                while len(self._buckets) > self._max:
                    self._buckets.popitem(last=False)
            self._buckets.move_to_end(key)
            return bucket.try_take()


class EventRecorder:
    def __init__(
        self,
        api_client: ApiClient,
        instance: str,
        metrics: WriterMetrics,
        limit: EventLimit | None = None,
    ) -> None:
        self._api = CoreV1Api(api_client)
        self._instance = instance
        self._metrics = metrics
        self._limit = limit or EventLimit()

    def emit(
        self, obj: dict[str, Any], change: Transition, message: str, now: datetime,
        about: tuple[str, str] = STORE,
    ) -> None:  # fmt: skip
        if not self._limit.allow(obj):
            self._metrics.events.labels(change.reason, "dropped").inc()
            return
        body = event_body(obj, change, message, self._instance, now, about)
        metadata = obj["metadata"]
        try:
            read_json(
                self._api.create_namespaced_event(
                    metadata["namespace"],
                    CoreV1Event.model_validate(body),
                    field_manager=FIELD_MANAGER,
                    _preload_content=False,
                    _request_timeout=REQUEST_TIMEOUT,
                )
            )
        except NotLeadingError:  # withheld at the fence: the new leader tells it if still true
            self._metrics.writes_fenced.inc()
            self._metrics.events.labels(change.reason, "fenced").inc()
            return
        except Exception as error:  # best effort (a namespace being deleted refuses Events)
            self._metrics.events.labels(change.reason, "error").inc()
            where = {"namespace": metadata["namespace"], "name": metadata["name"]}
            fields = {**where, "reason": change.reason, "error": error_text(error)}
            log.warning("event not recorded", extra={"fields": fields})
            return
        self._metrics.events.labels(change.reason, "ok").inc()
