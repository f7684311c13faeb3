"""The writer's view of AgentDeployments: which store each names (`ReferenceIndex`), by list-watch,
and each one's inline declaration (`InlineDeclarations`), from the same watch.

Until the CRD is served (a one-item list, 404) stores are planned as used by nothing; a view not
synced yet is `None` and decides nothing (no finalizer is removed on
it: a view not yet synced cannot tell that no agent uses a store).
"""

from __future__ import annotations

import http
import threading
from collections.abc import Callable
from typing import Any, Final

from kubernetes.client import ApiClient

from webhook.kube.cache import Key
from webhook.kube.client import CollectionApi, error_text, status_code
from webhook.kube.informer import Informer, InformerMetrics
from webhook.kube.settings import InformerSettings
from webhook.kube.workqueue import WorkQueue
from webhook.observability.logs import logger
from webhook.rules import inuse
from webhook.status.inline import InlineDeclarations
from webhook.status.usage import NOT_SERVED, ReferenceIndex, View, store_reference, users_among

log = logger("status.agents")

_AGENTS: Final = (inuse.AGENT_GROUP, inuse.AGENT_VERSION, inuse.AGENT_PLURAL)


class AgentView:
    """Who references which store, as far as a synced watch of AgentDeployments knows."""

    def __init__(
        self,
        api_client: ApiClient,
        namespace: str | None,
        store_queue: WorkQueue[Key],
        settings: InformerSettings,
        replan: Callable[[], None],
        recheck_seconds: float,
        metrics: InformerMetrics,
        inline: InlineDeclarations | None = None,
    ) -> None:
        self._api_client = api_client
        self._api = CollectionApi(api_client, _AGENTS, namespace)
        self._lock = threading.Lock()
        self._index = ReferenceIndex()
        self._store_queue = store_queue
        self._recheck = recheck_seconds
        self._replan = replan
        self._stop = threading.Event()
        self._not_served = False
        self._inline = inline
        # The one watch of AgentDeployments: the index and the inline declarations both read it.
        self.informer = Informer(
            self._api, self._link, self._unlink, metrics, settings, on_synced=self._synced
        )

    def _link(self, agent: Key, obj: dict[str, Any]) -> None:
        with self._lock:
            stores = self._index.link(agent, store_reference(obj))
        for store in stores:
            self._store_queue.add(store)
        if self._inline is not None:
            self._inline.observe(agent, obj)

    def _unlink(self, agent: Key) -> None:
        self._link(agent, {})

    def view(self, store: Key) -> View:
        if self.informer.synced.is_set():
            with self._lock:
                return self._index.holders(store)
        return NOT_SERVED if self._not_served else None

    def users_on_server(self, store: Key) -> tuple[str, ...]:
        """The agents naming `store` by an uncached list of its namespace: what pvc-protection asks
        before it lets a claim go, as the watch can lag behind the server. 404: none is served."""
        try:
            listed = CollectionApi(self._api_client, _AGENTS, store[0]).list()
        except Exception as error:
            if status_code(error) == http.HTTPStatus.NOT_FOUND:
                return ()
            raise
        return users_among(listed.items, store)

    def run(self) -> None:
        while not self._stop.is_set():
            try:
                served = self._api.served()
            except Exception as error:  # transport, 5xx, 403: unknown, try again later
                log.warning(
                    "cannot tell whether AgentDeployments are served",
                    extra={"fields": {"status": status_code(error), "error": error_text(error)}},
                )
                self._stop.wait(self._recheck)
                continue
            if served:
                self._not_served = False
                log.info("in-use protection on: watching AgentDeployments")
                self.informer.run()
                return
            if not self._not_served:  # said once; every store planned again (a stale InUse)
                log.info(
                    "in-use protection off: AgentDeployments are not served; looking again "
                    f"every {self._recheck:g} s",
                    extra={"fields": {"resource": f"{inuse.AGENT_PLURAL}.{inuse.AGENT_GROUP}"}},
                )
                self._not_served = True
                self._replan()
            self._stop.wait(self._recheck)

    def stop(self) -> None:
        self._stop.set()
        self.informer.stop()

    def _synced(self) -> None:
        """Also the stores the list did not touch: one whose last agent went while no writer ran."""
        log.info("AgentDeployments synced; planning every store again")
        self._replan()
