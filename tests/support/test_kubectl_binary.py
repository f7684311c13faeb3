"""Every test runs the `test` extra's kubectl, never whichever `kubectl` is first on PATH."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
from collections.abc import Callable

import pytest

from tests.kube.controlplane import ControlPlane
from tests.support.kubectl_binary import kubectl
from tests.support.manifest_render import MANIFESTS, kustomize

FAKE = """#!/bin/sh
# An older kubectl first on PATH: it notes that it ran and answers like one.
touch "$(dirname "$0")/ran"
echo "Client Version: v1.32.4"
"""


@pytest.fixture
def older_kubectl_first_on_path(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> pathlib.Path:
    """A fake `kubectl` in a directory put before the rest of PATH; returns its 'ran' marker."""
    directory = tmp_path / "path"
    directory.mkdir()
    fake = directory / "kubectl"
    fake.write_text(FAKE)
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{directory}:{os.environ['PATH']}")
    return directory / "ran"


def the_kube_tests_kubectl(tmp_path: pathlib.Path) -> str:
    plane = ControlPlane(tmp_path / "bin", tmp_path / "plane")
    result = plane.kubectl("version", "--client", "-o", "json", check=True)
    return str(json.loads(result.stdout)["clientVersion"]["gitVersion"])


def the_manifest_tests_kubectl(tmp_path: pathlib.Path) -> str:
    docs = kustomize(MANIFESTS / "crd")
    return ",".join(sorted({doc["kind"] for doc in docs}))


def the_extras_version() -> str:
    result = subprocess.run(
        [kubectl(), "version", "--client", "-o", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    return str(json.loads(result.stdout)["clientVersion"]["gitVersion"])


@pytest.mark.parametrize(
    ("caller", "expected"),
    [
        pytest.param(
            the_kube_tests_kubectl,
            the_extras_version,
            id="the kube tests' kubectl is the test extra's",
        ),
        pytest.param(
            the_manifest_tests_kubectl,
            lambda: "CustomResourceDefinition",
            id="the manifest tests' kubectl is the test extra's",
        ),
    ],
)
def test_an_older_kubectl_first_on_path_is_not_run(
    caller: Callable[[pathlib.Path], str],
    expected: Callable[[], str],
    older_kubectl_first_on_path: pathlib.Path,
    tmp_path: pathlib.Path,
) -> None:
    assert caller(tmp_path) == expected()
    assert not older_kubectl_first_on_path.exists(), "the kubectl first on PATH was run"
