"""The reconcile loop: server-side apply of our `Validated`, `Stalled` and `InUse` conditions
(others' stay; `Validated` yielded to another manager that writes it, `validated.py`) and of our
finalizer, which is added before `InUse=True` is said and removed after it is taken back.
404: gone; 409: retry soon from the object the watch brings; 429, 5xx and
transport errors: retry after the key's backoff (at least the server's `Retry-After`).
"""

from __future__ import annotations

import http
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from webhook.kube.cache import Key, ObjectCache, resource_version
from webhook.kube.client import error_text, retry_after, status_code
from webhook.kube.fencing import NotLeadingError
from webhook.kube.objects import deletion_in_progress, has_finalizer
from webhook.kube.timestamps import utc_now
from webhook.kube.workqueue import WorkQueue
from webhook.observability.logs import logger
from webhook.rules import inuse
from webhook.status.events import NORMAL, EventRecorder, Transition, event_message, transition
from webhook.status.kubeapi import FeedbackStoreApi
from webhook.status.usage import (
    RELEASED_MESSAGE,
    Finalizer,
    UsagePlan,
    View,
    finalizer_configuration,
    finalizer_removal_patch,
    plan_usage,
)
from webhook.status.validated import StatusPlan, apply_configuration, plan_status
from webhook.status.writer_metrics import WriterMetrics

log = logger("status.writer")


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one reconcile did; `retry_after` set means: queue the key again later."""

    name: str
    retry_after: float | None = None


class StatusWriter:
    def __init__(
        self,
        api: FeedbackStoreApi,
        cache: ObjectCache,
        metrics: WriterMetrics,
        recorder: EventRecorder,
        is_leader: Callable[[], bool],
        agents: Callable[[Key], View],
        users_on_server: Callable[[Key], tuple[str, ...]],
    ) -> None:
        self._api = api
        self._cache = cache
        self._metrics = metrics
        self._recorder = recorder
        self._is_leader = is_leader
        self._agents = agents
        self._users_on_server = users_on_server
        self._lock = threading.Lock()
        self._invalid: set[Key] = set()
        self._yielded: dict[Key, tuple[str, ...]] = {}  # to which managers, each logged once
        self._held_until = 0.0  # monotonic; see `_held`

    def run_worker(self, queue: WorkQueue[Key]) -> None:
        while (key := queue.get()) is not None:
            try:
                outcome = self.reconcile(key)
            except Exception:  # a bug must cost one object a retry, not the worker
                log.exception("reconcile failed", extra={"fields": _where(key)})
                outcome = Outcome("retry", 0.0)
            finally:
                queue.done(key)
            self._metrics.reconciles.labels(outcome.name).inc()
            if outcome.retry_after is None:
                queue.forget(key)
            else:
                queue.add_rate_limited(key, outcome.retry_after)

    def forget(self, key: Key) -> None:
        self._track_validity(key, True)
        with self._lock:
            self._yielded.pop(key, None)
            count = len(self._yielded)
        self._metrics.objects_yielded.set(count)

    def reconcile(self, key: Key) -> Outcome:
        if not self._is_leader():
            return Outcome("standby")
        obj = self._cache.get(key)
        if obj is None:
            return Outcome("gone")
        now = utc_now()
        plan = plan_status(obj, now)
        self._track_validity(key, plan.verdict.valid)
        self._track_yield(key, plan.yielded_to)
        usage = plan_usage(obj, self._agents(key), now)
        if usage.finalizer is Finalizer.REMOVE:
            try:
                usage = self._confirmed(key, obj, usage, now)
            except Exception as error:
                return self._unconfirmed(key, error)
        if usage.finalizer is Finalizer.ADD:
            # Hold the store before saying it is in use: an InUse=True anyone reads (a user about
            # to delete, the webhook's warning, a GitOps tool) is then a promise that deleting
            # waits. The watch brings the held object back, and the status is written from it.
            return self._finalize(key, obj, usage, now, Outcome("written"))
        if not plan.needed and not usage.needed:
            return self._finalize(key, obj, usage, now, Outcome("up_to_date"))
        if (held := self._held()) is not None:
            return held
        try:
            written = self._write(key, obj, plan, usage)
        except Exception as error:
            return self._classify(key, error)
        self._after_write(key, obj, plan, usage, now)
        fresh = written if isinstance(written.get("metadata"), dict) else obj
        return self._finalize(key, fresh, usage, now, Outcome("written"))

    def _write(
        self, key: Key, obj: dict[str, Any], plan: StatusPlan, usage: UsagePlan
    ) -> dict[str, Any]:
        others = [usage.condition] if usage.condition is not None else []
        body = apply_configuration(
            obj, *plan.conditions, *others, resource_version=plan.resource_version
        )
        started = time.perf_counter()
        try:
            written = self._api.apply_status(key[0], key[1], body)
        finally:
            self._metrics.write_seconds.observe(time.perf_counter() - started)
        self._written(key, obj, written)
        return written

    def _after_write(
        self, key: Key, obj: dict[str, Any], plan: StatusPlan, usage: UsagePlan, now: datetime
    ) -> None:
        condition = plan.condition
        fields = {**_where(key), "status": condition["status"], "reason": condition["reason"]}
        fields["observedGeneration"] = condition.get("observedGeneration")
        fields["problems"] = plan.verdict.problem_count
        if plan.yielded_to:
            fields["validatedBy"] = list(plan.yielded_to)
        log.info("condition written", extra={"fields": fields})
        change = transition(plan.previous_status, condition["status"])
        if change is not None:
            self._recorder.emit(obj, change, event_message(plan.verdict), now)
        if not usage.needed or usage.condition is None:
            return
        in_use = usage.condition
        fields = {**_where(key), "status": in_use["status"], "reason": in_use["reason"]}
        log.info("in-use condition written", extra={"fields": fields})
        if usage.deferred:
            self._recorder.emit(
                obj, Transition(NORMAL, inuse.REASON_DEFERRED), in_use["message"], now
            )

    def _confirmed(
        self, key: Key, obj: dict[str, Any], usage: UsagePlan, now: datetime
    ) -> UsagePlan:
        """The plan again on the server's word before the finalizer goes: the agents watch can
        lag, and a store let go while an agent still names it is deleted under it."""
        users = self._users_on_server(key)
        if not users:
            return usage
        fields = {**_where(key), "agents": list(users)}
        log.info(
            "an agent still names the store by the server's list; finalizer kept",
            extra={"fields": fields},
        )
        return plan_usage(obj, users, now)

    def _unconfirmed(self, key: Key, error: Exception) -> Outcome:
        fields = {**_where(key), "status": status_code(error), "error": error_text(error)}
        log.warning(
            "cannot list AgentDeployments to confirm the store is unused; finalizer kept, "
            "retrying after backoff",
            extra={"fields": fields},
        )
        return Outcome("retry", retry_after(error))

    def _finalize(
        self, key: Key, obj: dict[str, Any], usage: UsagePlan, now: datetime, done: Outcome
    ) -> Outcome:
        """Add or remove our finalizer when the plan says so; else `done`. Said done only once
        the server's answer shows it."""
        if usage.finalizer is None:
            return done
        if (held := self._held()) is not None:
            return held
        hold = usage.finalizer is Finalizer.ADD
        try:
            written = self._api.apply_finalizer(key[0], key[1], finalizer_configuration(obj, hold))
            self._written(key, obj, written)
            if not hold and has_finalizer(written, inuse.FINALIZER):
                written = self._remove_shared(key, written)
        except Exception as error:
            return self._classify(key, error)
        if has_finalizer(written, inuse.FINALIZER) != hold:
            log.warning(
                "finalizer not " + ("added" if hold else "removed") + "; retrying",
                extra={"fields": _where(key)},
            )
            return Outcome("retry", 0.0)
        log.info("finalizer " + ("added" if hold else "removed"), extra={"fields": _where(key)})
        if not hold and deletion_in_progress(written):
            release = Transition(NORMAL, inuse.REASON_RELEASED)
            self._recorder.emit(written, release, RELEASED_MESSAGE, now)
        return Outcome("written")

    def _remove_shared(self, key: Key, applied: dict[str, Any]) -> dict[str, Any]:
        """Our apply gave up only our ownership: another manager lists the finalizer too. Taken
        off by a JSON patch guarded by the object's state in the apply's answer."""
        operations = finalizer_removal_patch(applied)
        if operations is None:
            return applied
        self._metrics.finalizers_shared.inc()
        log.info(
            "finalizer also listed by another field manager; removing it by a guarded JSON patch",
            extra={"fields": _where(key)},
        )
        written = self._api.patch_guarded(key[0], key[1], operations)
        self._written(key, applied, written)
        return written

    def _held(self) -> Outcome | None:
        """A retry while a 429's Retry-After stands: it holds every write, the status's and the
        finalizer's, not only its key's (a key queued again meanwhile must not write sooner)."""
        held = self._held_until - time.monotonic()
        return Outcome("retry", held) if held > 0 else None

    def _written(self, key: Key, obj: dict[str, Any], written: dict[str, Any]) -> None:
        """Count a write and cache its answer, unless the watch brought a newer object."""
        self._metrics.writes.labels("ok").inc()
        if isinstance(written, dict) and isinstance(written.get("metadata"), dict):
            self._cache.put_if_unchanged(key, resource_version(obj), written)

    def _classify(self, key: Key, error: Exception) -> Outcome:
        if isinstance(error, NotLeadingError):  # nothing sent; a new leadership resyncs every key
            self._metrics.writes_fenced.inc()
            log.info("write withheld: no longer leading", extra={"fields": _where(key)})
            return Outcome("standby")
        code = status_code(error)
        if code == http.HTTPStatus.NOT_FOUND:
            self._metrics.writes.labels("not_found").inc()
            return Outcome("gone")
        if code == http.HTTPStatus.CONFLICT:
            # No GET: the watch brings the newer object; the writer may only list and watch.
            self._metrics.writes.labels("conflict").inc()
            self._metrics.conflicts.inc()
            log.info(
                "conflict writing status; retrying from the watched object",
                extra={"fields": _where(key)},
            )
            return Outcome("retry", 0.0)
        wait = retry_after(error)
        if code == http.HTTPStatus.TOO_MANY_REQUESTS and wait > 0:
            # Held before the failure is counted: whoever sees it counted sees every write held.
            with self._lock:
                self._held_until = max(self._held_until, time.monotonic() + wait)
        self._metrics.writes.labels("error").inc()
        fields = {**_where(key), "status": code, "error": error_text(error)}
        log.warning("status write failed; retrying after backoff", extra={"fields": fields})
        return Outcome("retry", wait)

    def _track_yield(self, key: Key, managers: tuple[str, ...]) -> None:
        """Log and count each manager we begin to yield `Validated` to, once per object."""
        with self._lock:
            before = self._yielded.get(key, ())
            if managers:
                self._yielded[key] = managers
            else:
                self._yielded.pop(key, None)
            count = len(self._yielded)
        self._metrics.objects_yielded.set(count)
        if before and not managers:
            log.info(
                "Validated written again: no other field manager owns it",
                extra={"fields": _where(key)},
            )
        for manager in managers:
            if manager not in before:
                self._metrics.validated_yielded.labels(manager).inc()
                fields = {**_where(key), "manager": manager}
                log.info(
                    "Validated left to another field manager; every problem stays in Stalled",
                    extra={"fields": fields},
                )

    def _track_validity(self, key: Key, valid: bool) -> None:
        with self._lock:
            if valid:
                self._invalid.discard(key)
            else:
                self._invalid.add(key)
            count = len(self._invalid)
        self._metrics.objects_invalid.set(count)


def _where(key: Key) -> dict[str, str]:
    return {"namespace": key[0], "name": key[1]}
