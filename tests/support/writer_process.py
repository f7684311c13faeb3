"""`feedbackstore-webhook status-writer` as a child process, whichever API server its kubeconfig
points at: the emulator (tests/webhook/status/test_cli.py) or kube-apiserver (the kube tier)."""

from __future__ import annotations

import os
import pathlib
import sys
import urllib.error
import urllib.request
from typing import Any, Self

from prometheus_client.parser import text_string_to_metric_families

from tests.support.emulator import ApiServerEmulator
from tests.support.logged_process import LoggedProcess
from tests.support.status_writer import LEASE_DURATION, NS, RENEW_DEADLINE, RETRY_PERIOD
from tests.support.waiting import eventually

SCRIPT = str(pathlib.Path(sys.executable).with_name("feedbackstore-webhook"))
# How long a writer process may take to start: importing the Kubernetes client alone costs about
# 2 s of CPU, and on 2 cores at a load of 20 a process gets a tenth of a core. Waits after the
# start are about what the writer does, not about how fast the machine starts a process.
START_SECONDS = 90.0


class WriterProcess(LoggedProcess):
    """The console script with the tests' short Lease, its health and metrics on a free loopback
    port, its JSON log in `log_path`; `pod` is its POD_NAME (its Lease identity's prefix)."""

    def __init__(
        self,
        kubeconfig: pathlib.Path,
        log_path: pathlib.Path,
        pod: str,
        lease_namespace: str,
        *extra: str,
    ) -> None:
        self.pod = pod
        command = [
            SCRIPT,
            "status-writer",
            "--kubeconfig",
            str(kubeconfig),
            "--lease-namespace",
            lease_namespace,
            "--metrics-port",
            "0",
            "--metrics-host",
            "127.0.0.1",
            "--lease-duration-seconds",
            str(LEASE_DURATION),
            "--renew-deadline-seconds",
            str(RENEW_DEADLINE),
            "--retry-period-seconds",
            str(RETRY_PERIOD),
            *extra,
        ]
        # The kubeconfig given is the only one: none from the environment.
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
        env["POD_NAME"] = pod
        super().__init__(command, log_path, env=env)

    @classmethod
    def on_emulator(
        cls, emu: ApiServerEmulator, workdir: pathlib.Path, pod: str, *extra: str
    ) -> WriterProcess:
        kubeconfig = emu.write_kubeconfig(workdir / f"{pod}.kubeconfig")
        return cls(kubeconfig, workdir / f"{pod}.log", pod, NS, *extra).started()

    def started(self) -> Self:
        """Once its writer has started (its threads running, its probes listening)."""
        self.wait_log("status writer started", timeout=START_SECONDS)
        return self

    def messages(self, msg: str) -> list[dict[str, Any]]:
        return [entry for entry in self.logs() if entry.get("msg") == msg]

    def wait_log(self, msg: str, *, count: int = 1, timeout: float = 30.0) -> list[dict[str, Any]]:
        def seen() -> list[dict[str, Any]]:
            assert self.process.poll() is None, f"writer exited {self.process.returncode}"
            found = self.messages(msg)
            return found if len(found) >= count else []

        found: list[dict[str, Any]] = eventually(
            seen, timeout=timeout, what=f"log {msg!r} x{count}"
        )
        return found

    @property
    def identity(self) -> str:
        return str(self.wait_log("status writer started", timeout=START_SECONDS)[0]["identity"])

    # probes and metrics

    def port(self) -> int:
        return int(self.wait_log("health endpoint listening", timeout=START_SECONDS)[0]["port"])

    def get(self, path: str) -> tuple[int, str]:
        url = f"http://127.0.0.1:{self.port()}{path}"
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def metrics(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        status, text = self.get("/metrics")
        assert status == 200, (status, text)
        samples = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
        return samples

    def metric(self, name: str, **labels: str) -> float:
        return self.metrics().get((name, tuple(sorted(labels.items()))), 0.0)
