"""The status writer assembled: informer, work queue, workers, Lease, resync, each in a thread (the
official client is synchronous); `stop()` unblocks them all. Every replica lists and watches, so a
standby that takes over has nothing to catch up on, but only the Lease holder writes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from kubernetes.client import ApiClient

from webhook import version
from webhook.install import FIELD_MANAGER
from webhook.kube.cache import Key, ObjectCache
from webhook.kube.client import LeaseApi
from webhook.kube.fencing import Fence
from webhook.kube.informer import Informer
from webhook.kube.leader import LeaderElector
from webhook.kube.ratelimit import TokenBucket, throttle
from webhook.kube.workqueue import WorkQueue
from webhook.observability.logs import logger
from webhook.status.agents import AgentView
from webhook.status.events import EventRecorder
from webhook.status.inline import InlineDeclarations
from webhook.status.kubeapi import FeedbackStoreApi
from webhook.status.projection import project_store
from webhook.status.writer import StatusWriter
from webhook.status.writer_metrics import WriterMetrics
from webhook.status.writer_settings import WriterSettings

log = logger("status.controller")


class StatusController:
    def __init__(
        self, api_client: ApiClient, settings: WriterSettings, metrics: WriterMetrics | None = None
    ) -> None:
        self.settings = settings
        self.metrics = metrics or WriterMetrics()
        # Non-apply writes (Lease, Event) are attributed to the user agent's first word.
        api_client.user_agent = f"{FIELD_MANAGER}/{version()}"
        # Election on a client (pool, token bucket) of its own, as kube-controller-manager's: a
        # renewal never queues behind throttled status writes and loses the Lease for it.
        self._lease_client = throttle(ApiClient(api_client.configuration), _bucket(settings))
        self._lease_client.user_agent = api_client.user_agent
        self.cache = ObjectCache(project_store)
        self.queue: WorkQueue[Key] = WorkQueue(settings.retry_initial, settings.retry_cap)
        election = settings.election()
        # A renewal slower than the renew deadline could not be led on anyway.
        lease = LeaseApi(
            self._lease_client,
            settings.lease_namespace,
            settings.lease_name,
            FIELD_MANAGER,
            timeout=election.renew_deadline,
        )
        self.elector = LeaderElector(lease, election, self.metrics, on_started_leading=self.resync)
        # Every write checked to lead as it leaves: the fence goes on before the throttle, so the
        # check follows the wait for a token.
        self.fence = Fence(self.elector.is_leader, election.write_timeout)
        throttle(self.fence.install(api_client), _bucket(settings))
        stores = FeedbackStoreApi(api_client, settings.namespace)
        events = EventRecorder(api_client, settings.identity, self.metrics)
        self.inline = InlineDeclarations(events, self.metrics, self.elector.is_leader)
        self.agents = AgentView(
            api_client,
            settings.namespace,
            self.queue,
            settings.informer(),
            replan=self.resync,
            recheck_seconds=settings.agent_recheck_seconds,
            metrics=self.metrics.agents,
            inline=self.inline,
        )
        self.writer = StatusWriter(
            stores,
            self.cache,
            self.metrics,
            events,
            self.elector.is_leader,
            self.agents.view,
            self.agents.users_on_server,
        )
        self.informer = Informer(
            stores, self._store, self._forget, self.metrics, settings.informer()
        )
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._elector_thread: threading.Thread | None = None

    def start(self) -> None:
        self._spawn("status-informer", self.informer.run)
        self._spawn("status-agents", self.agents.run)
        for index in range(max(self.settings.workers, 1)):
            self._spawn(f"status-worker-{index}", lambda: self.writer.run_worker(self.queue))
        self._spawn("status-inline", self.inline.run_worker)
        self._spawn("status-resync", self._resync_loop)
        self._elector_thread = self._spawn("status-lease", self.elector.run)
        settings = self.settings
        lease = f"{settings.lease_namespace}/{settings.lease_name}"
        fields = {"identity": settings.identity, "namespace": settings.namespace or "(all)"}
        log.info("status writer started", extra={"fields": {**fields, "lease": lease}})

    def stop(self) -> None:
        """Hand over at once: no key is handed out any more and no write leaves (resigned); the
        writes in flight end, all within one write timeout; then the Lease is released, so a
        standby takes over at its next retry rather than after the Lease runs out."""
        deadline = time.monotonic() + self.fence.timeout
        self._stop.set()
        self.queue.shutdown()
        self.inline.queue.shutdown()
        self.elector.resign()
        self.informer.stop()
        self.agents.stop()
        drained = self.fence.wait_idle(deadline)
        if self._elector_thread is not None:  # a renewal in flight must not land after release
            self._elector_thread.join(max(deadline - time.monotonic(), 0.0))
        if not drained:
            log.warning(
                "writes still in flight past the write timeout; releasing the Lease regardless",
                extra={"fields": {"writes": self.fence.in_flight()}},
            )
        self.elector.release()
        for thread in self._threads:
            thread.join(max(deadline - time.monotonic(), 0.0))
        self._lease_client.close()  # type: ignore[no-untyped-call]
        log.info("status writer stopped", extra={"fields": {"identity": self.settings.identity}})

    def resync(self) -> None:
        """Queue every cached object, and every agent's inline declaration; those already up to
        date cost no request."""
        for key in self.cache.snapshot():
            self.queue.add(key)
        self.inline.resync()

    def _store(self, key: Key, obj: dict[str, Any]) -> None:
        self.cache.put(key, obj)
        self.queue.add(key)

    def _forget(self, key: Key) -> None:
        self.cache.delete(key)
        self.writer.forget(key)

    def is_leader(self) -> bool:
        return self.elector.is_leader()

    def alive(self) -> bool:
        return not self._stop.is_set() and all(thread.is_alive() for thread in self._threads)

    def ready(self) -> bool:
        return self.alive() and self.informer.synced.is_set()

    def _resync_loop(self) -> None:
        while not self._stop.wait(self.settings.resync_seconds):
            if self.elector.is_leader():
                self.resync()

    def _spawn(self, name: str, target: Callable[[], None]) -> threading.Thread:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)
        return thread


def _bucket(settings: WriterSettings) -> TokenBucket | None:
    return TokenBucket(settings.qps, settings.burst) if settings.qps > 0 else None
