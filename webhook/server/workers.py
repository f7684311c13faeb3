"""`--workers N`: N server processes listening on one port (SO_REUSEPORT).

One Python process uses one core; a pod with two cores runs two workers and
the kernel spreads new connections between their listening sockets. The
supervisor only starts, watches and stops them: it forwards SIGTERM/SIGINT,
waits for every worker's graceful exit, and exits 0 when all of them did.
A worker that dies on its own is replaced, unless it died right after it
started (a port in use, a bad certificate): then everything stops with exit 1
rather than crash-looping inside the pod. Metrics of all workers are merged
through prometheus-client's multiprocess directory.
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import multiprocessing.connection
import os
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import Final

from webhook.observability.logs import configure, logger
from webhook.server.config import MULTIPROC_ENV, ServerConfig

_log = logger("workers")
# A worker that dies sooner than this after starting is broken, not unlucky.
_MIN_HEALTHY_SECONDS: Final = 5.0
# How long past the workers' own shutdown bound to wait before killing them.
_STOP_MARGIN_SECONDS: Final = 5.0


def supervise(config: ServerConfig, on_serving: Callable[[int], None] = lambda _: None) -> int:
    """Run `config.workers` worker processes until a signal; the exit code for the CLI."""
    own_metrics_dir = MULTIPROC_ENV not in os.environ
    if own_metrics_dir:
        os.environ[MULTIPROC_ENV] = tempfile.mkdtemp(prefix="feedbackstore-webhook-metrics-")
    metrics_dir = os.environ[MULTIPROC_ENV]
    with _reserved_port(config) as port:
        worker_config = dataclasses.replace(config, port=port)
        supervisor = _Supervisor(worker_config, metrics_dir, on_serving)
        try:
            code = supervisor.run()
        finally:
            if own_metrics_dir:
                shutil.rmtree(metrics_dir, ignore_errors=True)
    return code


@contextlib.contextmanager
def _reserved_port(config: ServerConfig) -> Iterator[int]:
    """The port every worker binds: `--port`, or one the kernel picks for `--port 0`.

    For port 0 a bound, non-listening SO_REUSEPORT socket holds the port until
    the supervisor exits, so the workers can all bind it and nobody else can.
    """
    if config.port != 0:
        yield config.port
        return
    family = socket.AF_INET6 if config.host and ":" in config.host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as holder:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        holder.bind((config.host or "", 0))
        yield holder.getsockname()[1]


class _Supervisor:
    def __init__(
        self, config: ServerConfig, metrics_dir: str, on_serving: Callable[[int], None]
    ) -> None:
        self._config = config
        self._on_serving = on_serving
        self._metrics_dir = metrics_dir
        self._context = multiprocessing.get_context("spawn")
        self._workers: dict[int, tuple[BaseProcess, float]] = {}
        self._stopping: signal.Signals | None = None

    def run(self) -> int:
        previous = {sig: signal.signal(sig, self._on_signal) for sig in _FORWARDED}
        try:
            for slot in range(self._config.workers):
                self._start(slot)
            _log.info(
                "workers started",
                extra={"fields": {"workers": self._config.workers, "port": self._config.port,
                                  "pids": [p.pid for p, _ in self._workers.values()]}},
            )  # fmt: skip
            self._on_serving(self._config.port)
            code = self._watch()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        return code

    def _start(self, slot: int) -> None:
        process = self._context.Process(
            target=run_worker, args=(self._config,), name=f"webhook-worker-{slot}"
        )
        process.start()
        self._workers[slot] = (process, time.monotonic())

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self._stopping = signal.Signals(signum)
        for process, _ in self._workers.values():
            if process.pid is not None and process.exitcode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signum)

    def _watch(self) -> int:
        while self._stopping is None:
            sentinels = [p.sentinel for p, _ in self._workers.values()]
            multiprocessing.connection.wait(sentinels, timeout=0.5)
            for slot, (process, started) in list(self._workers.items()):
                if process.exitcode is None or self._stopping is not None:
                    continue
                self._forget(process)
                _log.error(
                    "worker exited",
                    extra={"fields": {"pid": process.pid, "exit_code": process.exitcode}},
                )
                if time.monotonic() - started < _MIN_HEALTHY_SECONDS:
                    self._on_signal(signal.SIGINT, None)
                    self._wait_all()
                    return 1
                self._start(slot)
        return self._wait_all()

    def _wait_all(self) -> int:
        """Wait for every worker's graceful exit (killing stragglers); 0 if all exited 0."""
        config = self._config
        deadline = time.monotonic() + config.shutdown_delay + config.shutdown_timeout
        deadline += _STOP_MARGIN_SECONDS
        code = 0
        for process, _ in self._workers.values():
            process.join(max(deadline - time.monotonic(), 0.1))
            if process.exitcode is None:
                _log.error("worker did not stop in time", extra={"fields": {"pid": process.pid}})
                process.kill()
                process.join()
            if process.exitcode != 0:
                code = 1
            self._forget(process)
        _log.info("workers stopped", extra={"fields": {"exit_code": code}})
        return code

    def _forget(self, process: BaseProcess) -> None:
        if process.pid is None:
            return
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(process.pid, self._metrics_dir)  # type: ignore[no-untyped-call]


_FORWARDED: Final = (signal.SIGTERM, signal.SIGINT)


def run_worker(config: ServerConfig) -> None:
    """A worker process's body: one server, exit 0 after a graceful stop."""
    from webhook.server.run import run_server

    configure(config.log_level)
    raise SystemExit(run_server(config))
