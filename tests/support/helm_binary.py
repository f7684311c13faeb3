"""The real helm (v4), built from its Go module by tests/helm/build.sh, for the chart tests.

It is built when the session starts (tests/support/prebuild.py: a cold build takes
minutes, longer than a test's timeout). Without a Go toolchain the chart tests are
skipped with one loud reason, a failure under FEEDBACKSTORE_REQUIRE_KUBE=1 (as for the
control plane).
"""

from __future__ import annotations

import os
import pathlib
import subprocess

from tests.support import prebuild

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHART = ROOT / "manifests" / "helm" / "feedbackstore-webhook"


def helm() -> str:
    """The helm binary's path; skips (fails under FEEDBACKSTORE_REQUIRE_KUBE=1) without Go."""
    return str(prebuild.tool("chart", "helm"))


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
