"""A first build of the control plane shows on the screen: build.sh's lines and a line every
so often while go compiles, printed by the pytest controller before any xdist worker starts."""

from __future__ import annotations

import pathlib

import pytest

from tests.kube.controlplane import binaries
from tests.support.pytest_run import run_pytest

SLOW_FAILING_GO = """#!/bin/sh
# A go that compiles for a while, then fails.
[ "$1" = version ] && { echo "go version go1.26.8 linux/amd64"; exit 0; }
sleep 1
echo "fake go: compile error" >&2
exit 1
"""


@pytest.fixture
def slow_failing_go(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    go = tmp_path / "go"
    go.write_text(SLOW_FAILING_GO)
    go.chmod(0o755)
    monkeypatch.setenv("GO", str(go))
    monkeypatch.setenv("FEEDBACKSTORE_CONTROLPLANE_CACHE", str(tmp_path / "cache"))
    return go


def test_the_build_reports_its_lines_and_the_time_while_go_is_silent(
    slow_failing_go: pathlib.Path,
) -> None:
    reported: list[str] = []
    with pytest.raises(RuntimeError, match="fake go: compile error"):
        binaries(reported.append, every=0.2)
    # The timer runs beside the build, so on a loaded machine its first line may come before
    # build.sh has said anything: the build's own lines keep their order, the timer's interleave.
    still = "controlplane/build.sh: still running after "
    building = [line for line in reported if not line.startswith(still)]
    assert building[0].startswith(
        "build.sh: building kube-apiserver, kube-controller-manager and etcd for Kubernetes v"
    )
    assert "(first build: ~8 minutes" in building[0]
    assert any(line.startswith(f"{still}0 min 0") for line in reported)
    assert reported[-1] == "fake go: compile error"


def test_the_controller_prints_the_build_before_the_workers_start(
    slow_failing_go: pathlib.Path,
) -> None:
    result = run_pytest(
        "-n",
        "2",
        "-q",
        "tests/kube/test_controlplane.py::test_every_readiness_check_passes",
        env={},
    )
    # An xdist worker's output never reaches the screen: these lines are the controller's.
    out = result.stdout
    building = out.index("build.sh: building kube-apiserver, kube-controller-manager and etcd")
    failed = out.index("fake go: compile error")
    summary = out.index("kube tests: FAIL, the build of control plane failed (above)")
    assert building < failed < summary < out.index("bringing up nodes")
    assert "1 error" in out
