"""Without what a node needs the `node` tests skip with one loud reason; CI makes that a failure."""

from __future__ import annotations

import os
import pathlib
import subprocess

import pytest

from tests.kube.controlplane import REQUIRE_ENV
from tests.node import cluster
from tests.node.cluster import BUILD_SCRIPT
from tests.node.image_support import NodeUnavailableError
from tests.support.pytest_run import run_pytest

NODE_TEST = "tests/node/test_install_readme.py::test_path1_installs_and_both_rollouts_finish"


def run_node_test(tmp_path: pathlib.Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run_pytest(
        "-q",
        "-rs",
        NODE_TEST,
        env={"GO": "/nonexistent/go", "XDG_CACHE_HOME": str(tmp_path / "cache"), **env},
    )


def test_the_node_build_script_names_what_is_missing(tmp_path: pathlib.Path) -> None:
    no_go = subprocess.run(
        ["bash", str(BUILD_SCRIPT)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "GO": "/nonexistent/go", "FEEDBACKSTORE_NODE_CACHE": str(tmp_path)},
    )
    assert no_go.returncode == 3
    assert "no Go toolchain found (GO=/nonexistent/go" in no_go.stderr
    assert no_go.stdout == ""
    no_cc = subprocess.run(
        ["bash", str(BUILD_SCRIPT)],
        capture_output=True,
        text=True,
        check=False,
        env={
            **os.environ,
            "GO": "/bin/true",
            "CC": "/nonexistent/cc",
            "FEEDBACKSTORE_NODE_CACHE": str(tmp_path),
        },
    )
    assert no_cc.returncode == 3
    assert "no C compiler '/nonexistent/cc' for the pause image (Debian: gcc)" in no_cc.stderr


def test_prerequisites_name_the_debian_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster.shutil, "which", lambda name: None)
    monkeypatch.setattr(cluster, "CNI_BIN", pathlib.Path("/nonexistent/cni"))
    with pytest.raises(NodeUnavailableError) as missing:
        cluster.prerequisites()
    text = str(missing.value)
    for package in (
        "containerd (Debian: containerd, or docker.io)",
        "runc (Debian: runc)",
        "iptables (Debian: iptables)",
        "ip (Debian: iproute2)",
        "/nonexistent/cni/bridge (Debian: containernetworking-plugins)",
    ):
        assert package in text, text


def test_without_go_the_node_tests_are_skipped_with_the_reason(tmp_path: pathlib.Path) -> None:
    result = run_node_test(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 skipped" in result.stdout
    assert "SKIPPED ALL NODE TESTS" in result.stdout
    assert "no Go toolchain found" in result.stdout


def test_ci_turns_the_node_skip_into_a_failure(tmp_path: pathlib.Path) -> None:
    result = run_node_test(tmp_path, **{REQUIRE_ENV: "1"})
    assert result.returncode == 1, result.stdout
    assert "1 error" in result.stdout
    assert f"{REQUIRE_ENV}=1 forbids skipping" in result.stdout
