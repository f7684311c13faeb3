"""ApiServerEmulator: the store, the HTTP server on its own thread, and the test-facing API."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from tests.support import waiting
from tests.support.emulator import resources, watch
from tests.support.emulator.faults import Faults
from tests.support.emulator.resources import FEEDBACKSTORES, ResourceType
from tests.support.emulator.server import RecordedRequest, RequestLog, Settings, build_app
from tests.support.emulator.store import ALL, Store

SETUP_MANAGER = "emulator-setup"


class ApiServerEmulator:
    """A kube-apiserver stand-in on ``http://127.0.0.1:PORT`` for the real kubernetes client.

    The HTTP server runs on a private event loop in a daemon thread, because the kubernetes
    client is synchronous and the test thread must stay free to call it.
    """

    def __init__(
        self,
        bookmark_interval: float = 1.0,
        *,
        watch_timeout: float = 1800.0,
        history_limit: int = 10_000,
        host: str = "127.0.0.1",
    ) -> None:
        self.store = Store(history_limit=history_limit)
        self.hub = watch.WatchHub()
        self.faults = Faults(self._drop_watches, self.store.compact)
        self._log = RequestLog()
        self._settings = Settings(bookmark_interval=bookmark_interval, watch_timeout=watch_timeout)
        self._host = host
        self._port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self.store.listen(self._wake_watchers)

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def url(self) -> str:
        if not self._port:
            raise RuntimeError("the emulator is not started")
        return f"http://{self._host}:{self._port}"

    @property
    def port(self) -> int:
        return self._port

    @property
    def running(self) -> bool:
        return self._runner is not None

    def start(self) -> ApiServerEmulator:
        if self._loop is None:
            loop = asyncio.new_event_loop()
            thread = threading.Thread(
                target=loop.run_forever, name="apiserver-emulator", daemon=True
            )
            thread.start()
            self._loop, self._thread = loop, thread
        self._call(self._serve())
        return self

    def stop(self) -> None:
        """Close every connection and the listening socket, then end the loop thread."""
        if self._loop is None:
            return
        if self._runner is not None:
            self._call(self._shutdown())
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._loop.close()
        self._loop = self._thread = None

    def restart(self, downtime: float = 0.0) -> None:
        """An API-server restart: every connection and watch drops; etcd (the store) survives.

        The server comes back on the same port after ``downtime`` seconds (connections are
        refused meanwhile), with a new watch cache that starts at the then current
        resourceVersion: a watch resumed from an older one gets 410, as on the real server.
        """
        self.go_down()
        if downtime > 0:
            time.sleep(downtime)
        self.come_back()

    def go_down(self) -> None:
        """The first half of a restart: every connection and watch drops, and new connections are
        refused until `come_back`. A test that must see something refused waits for it between
        the two, where a guessed downtime can run out first on a loaded machine."""
        self._call(self._shutdown())

    def come_back(self) -> None:
        """The second half of a restart: serving again on the same port, from a new watch cache."""
        self.store.restart_watch_cache()
        self._call(self._serve())

    def __enter__(self) -> ApiServerEmulator:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    async def _serve(self) -> None:
        app = build_app(self.store, self.hub, self.faults, self._log, self._settings)
        runner = web.AppRunner(
            app,
            handle_signals=False,
            shutdown_timeout=1.0,
            access_log=None,
            # Go's net/http reads request lines and headers up to 1 MiB (DefaultMaxHeaderBytes).
            max_line_size=1 << 20,
            max_field_size=1 << 20,
        )
        await runner.setup()
        site = web.TCPSite(runner, self._host, self._port, reuse_address=True)
        await site.start()
        if not self._port:
            self._port = int(runner.addresses[0][1])
        self._runner = runner

    async def _shutdown(self) -> None:
        self.hub.end_all(abort=True)
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    def _call(self, coroutine: Any, timeout: float = 30.0) -> Any:
        if self._loop is None:
            raise RuntimeError("the emulator is not started")
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    def _wake_watchers(self) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self.hub.wake_all)

    def _drop_watches(self, abort: bool) -> int:
        async def end() -> int:
            return self.hub.end_all(abort)

        return int(self._call(end()))

    # -- clients ---------------------------------------------------------------------------
    def api_client(self) -> Any:
        """A ``kubernetes.client.ApiClient`` for this emulator (no auth, no global config)."""
        from kubernetes import client

        configuration = client.Configuration(host=self.url)
        return client.ApiClient(configuration)

    def write_kubeconfig(self, path: str | Path) -> Path:
        """A kubeconfig whose current context points at the emulator, for ``--kubeconfig``."""
        target = Path(path)
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "emulator", "cluster": {"server": self.url}}],
            "users": [{"name": "emulator", "user": {"token": "emulator-token"}}],
            "contexts": [
                {
                    "name": "emulator",
                    "context": {"cluster": "emulator", "user": "emulator", "namespace": "default"},
                }
            ],
            "current-context": "emulator",
        }
        target.write_text(yaml.safe_dump(config))
        return target

    # -- direct store access (test setup and assertions) -----------------------------------
    def create(
        self,
        namespace: str,
        body: dict[str, Any],
        *,
        resource: ResourceType = FEEDBACKSTORES,
        field_manager: str = SETUP_MANAGER,
    ) -> dict[str, Any]:
        """Store a new object as a write would (new resourceVersion, ADDED event).

        Unlike an HTTP POST, ``status`` is kept, so tests can seed conditions left by an older
        controller; those fields are owned (Update operation) by ``field_manager``.
        """
        return self.store.create(resource, namespace, body, field_manager, ALL)

    def update(
        self,
        namespace: str,
        name: str,
        mutate: Callable[[dict[str, Any]], None],
        *,
        resource: ResourceType = FEEDBACKSTORES,
        field_manager: str = SETUP_MANAGER,
    ) -> dict[str, Any]:
        """Change an object in place (spec and status alike); generation moves if spec changed."""

        def compute(current: dict[str, Any]) -> dict[str, Any]:
            mutate(current)
            return current

        return self.store.write(resource, namespace, name, compute, field_manager, ALL)

    def delete(self, namespace: str, name: str, *, resource: ResourceType = FEEDBACKSTORES) -> None:
        self.store.delete(resource, namespace, name)

    def get(
        self, namespace: str, name: str, *, resource: ResourceType = FEEDBACKSTORES
    ) -> dict[str, Any] | None:
        return self.store.find(resource, namespace, name)

    def objects(
        self, namespace: str | None = None, *, resource: ResourceType = FEEDBACKSTORES
    ) -> list[dict[str, Any]]:
        return self.store.all(resource, namespace)

    def leases(self, namespace: str | None = None) -> list[dict[str, Any]]:
        return self.store.all(resources.LEASES, namespace)

    def events(self, namespace: str | None = None) -> list[dict[str, Any]]:
        """core/v1 and events.k8s.io/v1 Events, oldest first (each keeps its own apiVersion)."""
        found = self.store.all(resources.CORE_EVENTS, namespace) + self.store.all(
            resources.EVENTS_V1, namespace
        )
        return sorted(found, key=lambda e: int(e["metadata"]["resourceVersion"]))

    @property
    def resource_version(self) -> int:
        """The current global revision (the resourceVersion of the latest write)."""
        return self.store.resource_version

    @property
    def compacted_resource_version(self) -> int:
        """Watches and Exact lists from before this revision answer 410 Gone."""
        return self.store.compacted

    @property
    def open_watches(self) -> int:
        """How many watch streams are open right now."""
        return len(self.hub.watchers)

    # -- request log -----------------------------------------------------------------------
    @property
    def requests(self) -> list[RecordedRequest]:
        return self._log.snapshot()

    def writes(self) -> list[RecordedRequest]:
        """POST/PUT/PATCH/DELETE requests seen since the last ``reset_requests()``."""
        return [r for r in self._log.snapshot() if r.is_write]

    def reset_requests(self) -> None:
        self._log.clear()

    # -- waiting ---------------------------------------------------------------------------
    @staticmethod
    def eventually(
        predicate: Callable[[], Any],
        timeout: float = 30.0,
        interval: float = 0.02,
        message: str = "",
    ) -> Any:
        """`tests.support.waiting.eventually`, polled every 20 ms: what a test waits for here
        takes a fraction of a second, and seconds at a load of 20 on 2 cores."""
        return waiting.eventually(
            predicate, timeout=timeout, interval=interval, what=message or "condition"
        )
