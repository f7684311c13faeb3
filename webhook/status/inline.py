"""Inline declarations found in the cluster: an AgentDeployment's `spec.feedback` judged
by the same rules. The platform owns the agent's status, so nothing is written into the agent: an
invalid declaration (created before the webhook, or while its registration, `failurePolicy:
Ignore`, let it through) is told as a core/v1 Event on the agent when its verdict turns, with the
store Events' vocabulary and per-object limit, and counted in a gauge. Level-based, as the store
planners are: the leader compares each agent's verdict now with what it last reported.

Kept in memory only (no status to remember it in): a new leader reports each invalid declaration
once more, which is better than a declaration turned invalid during a hand-over never reported.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from webhook.kube.cache import Key
from webhook.kube.objects import CONDITION_FALSE, CONDITION_TRUE
from webhook.kube.timestamps import utc_now
from webhook.kube.workqueue import WorkQueue
from webhook.observability.logs import logger
from webhook.rules import Verdict, inuse
from webhook.rules.forms import INLINE
from webhook.rules.summary import summarize
from webhook.status.events import MAX_EVENT_MESSAGE, EventRecorder, transition
from webhook.status.writer_metrics import WriterMetrics

log = logger("status.inline")

FEEDBACK_PATH: Final = str(INLINE.path)
COHERENT: Final = f"{FEEDBACK_PATH} is coherent"


def inline_verdict(agent: object) -> Verdict | None:
    """The verdict on an agent's `spec.feedback`, at paths under it; None when it has none."""
    if INLINE.declaration(agent) is None:
        return None
    return INLINE.verdict(agent)


def inline_message(verdict: Verdict) -> str:
    if verdict.valid:
        return COHERENT
    prefix = f"{FEEDBACK_PATH} is invalid: "
    return prefix + summarize(verdict, MAX_EVENT_MESSAGE - len(prefix))


@dataclass(frozen=True, slots=True)
class _Seen:
    agent: dict[str, Any]
    verdict: Verdict


class InlineDeclarations:
    """Every agent's inline verdict as the watch brings it; a worker tells the turns."""

    def __init__(
        self, recorder: EventRecorder, metrics: WriterMetrics, is_leader: Callable[[], bool]
    ) -> None:
        self._recorder = recorder
        self._metrics = metrics
        self._is_leader = is_leader
        self._lock = threading.Lock()
        self._seen: dict[Key, _Seen] = {}
        self._reported: dict[Key, str] = {}  # the condition-like status last told by an Event
        # Of `_seen`, how many are invalid: moved by each event, so a relist costs one step per
        # agent, not a count of every agent per agent.
        self._invalid = 0
        self.queue: WorkQueue[Key] = WorkQueue()

    def observe(self, key: Key, agent: dict[str, Any]) -> None:
        verdict = inline_verdict(agent)
        if verdict is None:
            self.forget(key)
            return
        with self._lock:
            before = self._seen.get(key)
            self._seen[key] = _Seen(agent, verdict)
            self._count_locked(before, verdict)
        if before is None or before.verdict.valid != verdict.valid:
            self.queue.add(key)

    def forget(self, key: Key) -> None:
        """The agent is gone or declares nothing inline: nothing to tell any more."""
        with self._lock:
            before = self._seen.pop(key, None)
            self._reported.pop(key, None)
            self._count_locked(before, None)

    def resync(self) -> None:
        """Every agent again (a new leader tells what it has not told)."""
        with self._lock:
            keys = list(self._seen)
        for key in keys:
            self.queue.add(key)

    def invalid(self) -> list[tuple[Key, Verdict]]:
        with self._lock:
            return sorted((k, s.verdict) for k, s in self._seen.items() if not s.verdict.valid)

    def run_worker(self) -> None:
        while (key := self.queue.get()) is not None:
            try:
                self.report(key)
            except Exception:  # a bug must cost one Event, not the worker
                log.exception("inline report failed", extra={"fields": _where(key)})
            finally:
                self.queue.done(key)

    def report(self, key: Key) -> None:
        """The Event the agent's verdict deserves now, told once (leader only)."""
        if not self._is_leader():
            return
        with self._lock:
            seen = self._seen.get(key)
            previous = self._reported.get(key)
        if seen is None:
            return
        status = CONDITION_TRUE if seen.verdict.valid else CONDITION_FALSE
        if status == previous:
            return
        change = transition(previous, status)
        if change is not None:
            fields: dict[str, object] = {**_where(key), "reason": change.reason}
            fields["problems"] = seen.verdict.problem_count
            log.info("inline declaration " + ("valid" if seen.verdict.valid else "invalid"),
                     extra={"fields": fields})  # fmt: skip
            message = inline_message(seen.verdict)
            self._recorder.emit(seen.agent, change, message, utc_now(), _about(seen.agent))
        with self._lock:
            if self._seen.get(key) is seen:
                self._reported[key] = status

    def _count_locked(self, before: _Seen | None, after: Verdict | None) -> None:
        """One agent's verdict went from `before` to `after` (None: not there)."""
        was = before is not None and not before.verdict.valid
        now = after is not None and not after.valid
        if was != now:
            self._invalid += 1 if now else -1
            self._metrics.inline_invalid.set(self._invalid)


def _about(agent: dict[str, Any]) -> tuple[str, str]:
    """The agent's apiVersion and kind as the Event names it (the watch's, else the storage's)."""
    api_version = agent.get("apiVersion")
    if not isinstance(api_version, str) or not api_version:
        api_version = f"{inuse.AGENT_GROUP}/{inuse.AGENT_VERSION}"
    return api_version, inuse.AGENT_KIND


def _where(key: Key) -> dict[str, str]:
    return {"namespace": key[0], "name": key[1]}
