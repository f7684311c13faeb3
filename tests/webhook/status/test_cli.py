"""`feedbackstore-webhook status-writer` as a real process: the console script, a kubeconfig
pointing at the emulator, real signals, real probe and metrics endpoints.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.emulator import ApiServerEmulator
from tests.support.status_writer import (
    INVALID,
    LEASE_DURATION,
    NS,
    RENEW_DEADLINE,
    VALID,
    converged,
    fs,
    running_writer,
)
from tests.support.writer_process import SCRIPT, WriterProcess
from webhook.cli.main import main

LEASE = "feedbackstore-status-writer"


@pytest.fixture
def processes() -> Iterator[list[WriterProcess]]:
    started: list[WriterProcess] = []
    yield started
    for writer in started:
        if writer.process.poll() is None:
            writer.process.kill()
            writer.process.wait(10)


def holder(emu: ApiServerEmulator) -> str:
    leases = [lease for lease in emu.leases(NS) if lease["metadata"]["name"] == LEASE]
    return str(leases[0]["spec"].get("holderIdentity", "")) if leases else ""


def test_sigterm_stops_releases_the_lease_and_exits_0(
    apiserver: ApiServerEmulator, tmp_path: Path, processes: list[WriterProcess]
) -> None:
    apiserver.create(NS, fs("good", VALID))
    apiserver.create(NS, fs("bad", INVALID))
    writer = WriterProcess.on_emulator(apiserver, tmp_path, "status-writer-7f9c-x2k4q")
    processes.append(writer)
    converged(apiserver, timeout=30)
    identity = holder(apiserver)
    assert identity.startswith("status-writer-7f9c-x2k4q_")
    assert len(identity) > len("status-writer-7f9c-x2k4q_") + 30

    assert writer.get("/healthz") == (200, "ok\n")
    assert writer.get("/readyz") == (200, "ok\n")
    assert writer.get("/nope")[0] == 404
    # The emulator holds a status before the writer has read the answer and counted the write.
    ok = "feedbackstore_status_writes_total"
    ApiServerEmulator.eventually(lambda: writer.metric(ok, result="ok") == 2, timeout=30)
    status, metrics = writer.get("/metrics")
    assert status == 200
    assert "feedbackstore_status_leader 1.0" in metrics
    assert 'feedbackstore_status_writes_total{result="ok"} 2.0' in metrics
    assert "feedbackstore_status_objects 2.0" in metrics
    assert "feedbackstore_status_objects_invalid 1.0" in metrics
    assert 'feedbackstore_status_watch_restarts_total{reason="gone"} 0.0' in metrics

    assert writer.stop() == 0
    assert holder(apiserver) == ""
    entries = writer.logs()
    assert [e for e in entries if e["msg"] == "(not JSON)"] == []
    messages = [e["msg"] for e in entries]
    assert "lease released" in messages
    assert "signal received; stopping" in messages
    written = [e for e in entries if e["msg"] == "condition written"]
    assert {(e["namespace"], e["name"], e["status"]) for e in written} == {
        (NS, "good", "True"),
        (NS, "bad", "False"),
    }


def test_a_killed_leader_is_replaced_once_its_lease_expires(
    apiserver: ApiServerEmulator, tmp_path: Path, processes: list[WriterProcess]
) -> None:
    apiserver.create(NS, fs("store", INVALID))
    leader = WriterProcess.on_emulator(apiserver, tmp_path, "writer-a")
    processes.append(leader)
    converged(apiserver, timeout=30)
    with running_writer(apiserver, identity="writer-b") as standby:
        apiserver.eventually(standby.ready)
        assert holder(apiserver).startswith("writer-a_")
        assert not standby.is_leader()
        assert leader.stop(signal.SIGKILL) == -signal.SIGKILL  # no chance to release
        killed = time.monotonic()
        apiserver.eventually(standby.is_leader)
        waited = time.monotonic() - killed
        apiserver.update(NS, "store", lambda o: o.update(spec=VALID))
        converged(apiserver)
    # The lease had to run out: nothing released it.
    assert waited >= LEASE_DURATION - RENEW_DEADLINE
    leases = [lease for lease in apiserver.leases(NS) if lease["metadata"]["name"] == LEASE]
    assert leases[0]["spec"]["leaseTransitions"] == 1


def test_readyz_waits_for_the_first_list(
    apiserver: ApiServerEmulator, tmp_path: Path, processes: list[WriterProcess]
) -> None:
    apiserver.faults.fail_next(10_000, 500, method="GET", path_contains="/feedbackstores")
    writer = WriterProcess.on_emulator(apiserver, tmp_path, "not-ready")
    processes.append(writer)
    assert writer.get("/healthz")[0] == 200
    assert writer.get("/readyz") == (503, "not ready\n")
    apiserver.faults.clear()
    ApiServerEmulator.eventually(lambda: writer.get("/readyz")[0] == 200, timeout=30)
    assert writer.stop() == 0


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [SCRIPT, "status-writer", *args], capture_output=True, text=True, timeout=60, check=False
    )


def test_an_unreadable_kubeconfig_exits_2_and_says_why(tmp_path: Path) -> None:
    result = run_cli("--kubeconfig", str(tmp_path / "missing"), "--metrics-port", "0")
    assert result.returncode == 2
    assert "cannot load Kubernetes configuration" in result.stderr


def test_no_kubeconfig_outside_a_cluster_exits_2(tmp_path: Path) -> None:
    result = run_cli("--metrics-port", "0")
    assert result.returncode == 2
    assert "cannot load Kubernetes configuration" in result.stderr


def test_a_renew_deadline_as_long_as_the_lease_exits_2(
    tmp_path: Path, apiserver: ApiServerEmulator
) -> None:
    kubeconfig = apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    result = run_cli(
        "--kubeconfig",
        str(kubeconfig),
        "--metrics-port",
        "0",
        "--lease-duration-seconds",
        "2",
        "--renew-deadline-seconds",
        "2",
    )
    assert result.returncode == 2
    assert "--renew-deadline-seconds must be below --lease-duration-seconds" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--resync-seconds", "0"],
        ["--resync-seconds", "nan"],
        ["--resync-seconds", "inf"],
        ["--metrics-port", "70000"],
        ["--metrics-port", "http"],
        ["--workers", "0"],
        ["--lease-duration-seconds", "-1"],
        ["--log-level", "loud"],
    ],
    ids=[
        "a zero resync period",
        "a resync period that is not a number",
        "an infinite resync period",
        "a port beyond 65535",
        "a port that is not a number",
        "no workers",
        "a negative lease duration",
        "an unknown log level",
    ],
)
def test_nonsense_flags_are_refused_before_anything_starts(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["status-writer", *args])
    assert exited.value.code == 2
    assert "status-writer: error: argument" in capsys.readouterr().err


def test_the_subcommand_is_listed_in_help() -> None:
    result = subprocess.run(
        [SCRIPT, "--help"], capture_output=True, text=True, timeout=60, check=True
    )
    assert "status-writer" in result.stdout


def test_a_metrics_port_already_taken_exits_2(tmp_path: Path, apiserver: ApiServerEmulator) -> None:
    kubeconfig = apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli(
            "--kubeconfig",
            str(kubeconfig),
            "--metrics-host",
            "127.0.0.1",
            "--metrics-port",
            str(port),
        )
    assert result.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
