"""Without a Go toolchain the `kube` tests skip with one loud reason; CI makes that a failure."""

from __future__ import annotations

import os
import pathlib
import subprocess

from tests.kube.controlplane import BUILD_SCRIPT, REQUIRE_ENV
from tests.support.pytest_run import run_pytest


def run_kube_suite(tmp_path: pathlib.Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run_pytest(
        "-q",
        "-rs",
        "tests/kube/test_controlplane.py::test_every_readiness_check_passes",
        env={"GO": "/nonexistent/go", "XDG_CACHE_HOME": str(tmp_path / "cache"), **env},
    )


def test_the_build_script_names_what_is_missing(tmp_path: pathlib.Path) -> None:
    result = subprocess.run(
        ["bash", str(BUILD_SCRIPT)],
        capture_output=True,
        text=True,
        check=False,
        env={
            **os.environ,
            "GO": "/nonexistent/go",
            "FEEDBACKSTORE_CONTROLPLANE_CACHE": str(tmp_path),
        },
    )
    assert result.returncode == 3
    assert "no Go toolchain found (GO=/nonexistent/go" in result.stderr
    assert "install Go 1.26.0 or newer, or set GO" in result.stderr
    assert result.stdout == ""


def test_without_go_the_kube_tests_are_skipped_with_the_reason(tmp_path: pathlib.Path) -> None:
    result = run_kube_suite(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 skipped" in result.stdout
    assert "SKIPPED ALL KUBE TESTS" in result.stdout
    assert "no Go toolchain found" in result.stdout


def test_ci_turns_the_skip_into_a_failure(tmp_path: pathlib.Path) -> None:
    result = run_kube_suite(tmp_path, **{REQUIRE_ENV: "1"})
    assert result.returncode == 1, result.stdout
    assert "1 error" in result.stdout
    assert f"{REQUIRE_ENV}=1 forbids skipping" in result.stdout
