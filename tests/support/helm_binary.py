"""The real helm (v4), built from its Go module by tests/helm/build.sh, for the chart tests.

`.ci/run` builds it beforehand (a cold build takes minutes: longer than a test's timeout);
here the script only finds it in its cache, or builds it under its lock. Without a Go
toolchain the chart tests are skipped with one loud reason, a failure under
FEEDBACKSTORE_REQUIRE_KUBE=1 (as for the control plane).
"""

from __future__ import annotations

import functools
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = ROOT / "tests" / "helm" / "build.sh"
CHART = ROOT / "manifests" / "helm" / "feedbackstore-webhook"
REQUIRE_ENV = "FEEDBACKSTORE_REQUIRE_KUBE"
NO_TOOLCHAIN = 3  # build.sh's exit code


@functools.cache
def _built() -> str | None:
    result = subprocess.run(
        ["bash", str(BUILD)], capture_output=True, text=True, timeout=3600, check=False
    )
    if result.returncode == NO_TOOLCHAIN:
        return None
    assert result.returncode == 0, f"tests/helm/build.sh failed:\n{result.stderr}"
    return result.stdout.strip().splitlines()[-1]


def helm() -> str:
    """The helm binary's path; skips (fails under FEEDBACKSTORE_REQUIRE_KUBE=1) without Go."""
    path = _built()
    if path is None:
        message = "helm is built from its Go module, and there is no Go toolchain here"
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{message} ({REQUIRE_ENV}=1 forbids skipping)", pytrace=False)
        pytest.skip(f"SKIPPED HELM TESTS — {message}")
    return path


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """`helm ARGS` with a throwaway home, so no user's repositories or plugins take part."""
    home = pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / f"feedbackstore-helm-{os.getpid()}"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HELM_CACHE_HOME": str(home / "cache"),
        "HELM_CONFIG_HOME": str(home / "config"),
        "HELM_DATA_HOME": str(home / "data"),
        **{k: v for k, v in os.environ.items() if k in ("KUBECONFIG", "HOME")},
    }
    result = subprocess.run(
        [helm(), *args], capture_output=True, text=True, timeout=300, env=env, check=False
    )
    if check:
        assert result.returncode == 0, f"helm {' '.join(args)}:\n{result.stdout}{result.stderr}"
    return result
