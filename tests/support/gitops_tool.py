"""What the GitOps tools' own code says of FeedbackStores: tests/gitops's `gitops-health`.

`tests/gitops/build.sh` builds it (cached, keyed by a digest of its sources) when the
session starts (tests/support/prebuild.py), from the Go modules of the
real libraries: kstatus' `status.Compute` from sigs.k8s.io/cli-utils and from Flux's fork
github.com/fluxcd/cli-utils, and the Argo CD health Lua run on gopher-lua as Argo CD runs
it. Without a Go toolchain the tests that need it are skipped, saying why, unless
FEEDBACKSTORE_REQUIRE_KUBE=1 (CI), which makes that a failure.

The shipped Argo CD customization lives in ARGOCD (Argo CD's resource_customizations
layout: health.lua, health_test.yaml, testdata/).
"""

from __future__ import annotations

import json
import pathlib
import subprocess
from collections.abc import Sequence
from typing import Any, NamedTuple

import pytest

from tests.support import prebuild

REPO = pathlib.Path(__file__).resolve().parents[2]
ARGOCD = REPO / "argocd" / "resource_customizations" / "agents.ctxmesh.ai" / "FeedbackStore"
HEALTH_LUA = ARGOCD / "health.lua"


class Health(NamedTuple):
    """One tool's word on one object: kstatus' Status or Argo CD's health status, and why."""

    status: str
    message: str


class Verdicts(NamedTuple):
    kstatus: Health  # sigs.k8s.io/cli-utils
    flux: Health  # github.com/fluxcd/cli-utils
    argocd: Health  # health.lua on gopher-lua


class GitopsTool:
    def __init__(self, binary: pathlib.Path) -> None:
        self.binary = binary

    def compute(self, objects: Sequence[dict[str, Any]]) -> list[Verdicts]:
        """Each object through both kstatus forks and the shipped health.lua."""
        result = subprocess.run(
            [str(self.binary), "compute", "--lua", str(HEALTH_LUA)],
            input=json.dumps(list(objects)),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        return [
            Verdicts(*(_health(entry[tool]) for tool in Verdicts._fields))
            for entry in json.loads(result.stdout)
        ]

    def argocd_test(self, directory: pathlib.Path) -> subprocess.CompletedProcess[str]:
        """Argo CD's own test of a customization: every health_test.yaml case, on gopher-lua."""
        return subprocess.run(
            [str(self.binary), "argocd-test", str(directory)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )


def _health(entry: dict[str, Any]) -> Health:
    assert not entry.get("error"), entry["error"]
    return Health(entry["status"], entry["message"])


@pytest.fixture(scope="session", name="gitops_tool")
def _gitops_tool() -> GitopsTool:
    return GitopsTool(prebuild.tool("gitops", "gitops-health"))
