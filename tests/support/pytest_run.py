"""A run of the suite's own pytest in a child process, started as a user starts it: the
tests of the harness (what is built before the first test, the skips, the progress
lines) read its screen."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping

from tests.kube.controlplane import REPO, REQUIRE_ENV


def run_pytest(
    *args: str, env: Mapping[str, str], timeout: float = 110
) -> subprocess.CompletedProcess[str]:
    """`python -m pytest -p no:cacheprovider ARGS` in the repository, with `env` over this
    process's environment; FEEDBACKSTORE_REQUIRE_KUBE (which CI sets) only when `env`
    sets it."""
    environment = {k: v for k, v in os.environ.items() if k != REQUIRE_ENV} | dict(env)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
