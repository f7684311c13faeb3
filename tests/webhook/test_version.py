"""One version, written once in pyproject.toml; what ships follows it.

`--version`, the chart's version and appVersion, the chart's default image tag and the tag
every Deployment of `manifests/` runs are that version; a page that names a release (an image
tag, a `?ref=`, a pre-commit `rev:`, a chart `--version`) names this one. Changing the version
is one edit to pyproject.toml, the image tags the Deployments name, and `feedbackstore-webhook
manifests chart` (which refuses other tags).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from tests.docs.repo_files import ROOT, repo_files
from tests.support.manifest_render import MANIFESTS, kustomize
from webhook import version
from webhook.manifests.chart import chart_files

SCRIPT = Path(sys.executable).with_name("feedbackstore-webhook")
CHART = MANIFESTS / "helm" / "feedbackstore-webhook"
IMAGE = "ghcr.io/ctxmesh/feedbackstore-webhook"
# How a page names a release of this project: an image tag, a git tag, a chart version.
RELEASE_MENTIONS = (
    re.compile(r"feedbackstore-webhook:(\d+\.\d+\.\d+)\b"),
    re.compile(r"\?ref=v(\d+\.\d+\.\d+)\b"),
    re.compile(r"git\+\S+@v(\d+\.\d+\.\d+)\b"),
    re.compile(r"\brev: v(\d+\.\d+\.\d+)\b"),
    re.compile(r"\bnewTag: (\d+\.\d+\.\d+)\b"),
    re.compile(r"\bhelm\b.* --version (\d+\.\d+\.\d+)\b"),
)


def stated() -> str:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        return str(tomllib.load(handle)["project"]["version"])


def test_the_package_reports_the_version_pyproject_states() -> None:
    assert version() == stated()


def test_the_cli_prints_it() -> None:
    result = subprocess.run(
        [str(SCRIPT), "--version"], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout == f"feedbackstore-webhook {stated()}\n"


def test_every_deployment_of_the_manifests_runs_the_release_s_image() -> None:
    images = {
        container["image"]
        for doc in kustomize(MANIFESTS)
        if doc["kind"] == "Deployment"
        for container in doc["spec"]["template"]["spec"]["containers"]
    }
    assert images == {f"{IMAGE}:{stated()}"}


def test_the_chart_s_version_app_version_and_image_tag_are_the_release() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text(encoding="utf-8"))
    values = yaml.safe_load((CHART / "values.yaml").read_text(encoding="utf-8"))
    assert (chart["version"], chart["appVersion"], values["image"]["tag"]) == (stated(),) * 3


def test_the_chart_generator_refuses_a_deployment_of_another_tag(tmp_path: Path) -> None:
    copy = tmp_path / "manifests"
    shutil.copytree(MANIFESTS, copy, ignore=shutil.ignore_patterns("helm"))
    deployment = copy / "status-writer" / "deployment.yaml"
    text = deployment.read_text(encoding="utf-8")
    deployment.write_text(text.replace(f"{IMAGE}:{stated()}", f"{IMAGE}:9.9.9"), "utf-8")
    with pytest.raises(ValueError, match=rf"the release, {re.escape(stated())} \(pyproject"):
        chart_files(copy)


def mentions() -> list[tuple[str, int, str]]:
    """(file, line, version) of every release a page or comment names."""
    found = []
    for path in repo_files():
        if path.suffix not in (".md", ".yaml", ".yml") and path.name != "Dockerfile":
            continue
        if path.parts[0] == "tests":
            continue  # test inputs, not statements of the release
        for number, line in enumerate((ROOT / path).read_text("utf-8").splitlines(), 1):
            found += [(str(path), number, m.group(1)) for p in RELEASE_MENTIONS
                      for m in p.finditer(line)]  # fmt: skip
    return found


def test_every_page_that_names_a_release_names_this_one() -> None:
    found = mentions()
    assert any(path == "docs/upgrade.md" for path, _, _ in found), "the upgrade page pins none"
    assert [m for m in found if m[2] != stated()] == []
