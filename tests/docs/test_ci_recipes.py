"""The CI recipes of docs/validate.md, read from the page and run as they are written.

A recipe that does not run is worse than none: it is copied, fails, and the reader learns
to distrust the page. Each recipe is read from its section; what only a CI service can
judge (a permission, `if: always()`, an image with git) is checked in its YAML, and every
shell step but the install (no network here) runs in a repository of a valid and of an
invalid store, with this checkout's `feedbackstore-webhook` and the test extra's kubectl on
PATH: its exit code, and the report it leaves for the next step.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from junitparser import Failure, JUnitXml
from sarif_pydantic import Sarif

from tests.docs.pages import section
from tests.docs.repo_files import ROOT
from tests.support.kubectl_binary import kubectl
from tests.webhook.cli.test_repository import TREE
from webhook import version

PRE_COMMIT = "### On a whole repository (pre-commit)"
GITHUB = "### GitHub Actions: code scanning (SARIF)"
GITLAB = "### GitLab CI: test reports (JUnit)"
INSTALL = "python -m pip install "
_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
STORES = {
    "valid": ROOT / "examples" / "minimal.yaml",
    "invalid": ROOT / "examples" / "invalid" / "wrong-case-enum.yaml",
}


def blocks(heading: str, language: str) -> list[str]:
    return [m.group(2) for m in _BLOCK.finditer(section("validate.md", heading))
            if m.group(1) == language]  # fmt: skip


def recipe(heading: str) -> dict[str, Any]:
    (text,) = blocks(heading, "yaml")
    loaded: dict[str, Any] = yaml.safe_load(text)
    return loaded


def shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """One step as a CI runner runs it: bash, stopping at the first failure."""
    path = os.pathsep.join([str(Path(sys.executable).parent), str(Path(kubectl()).parent),
                            os.environ.get("PATH", "")])  # fmt: skip
    return subprocess.run(
        ["bash", "-e", "-c", command],
        cwd=cwd,
        env={**os.environ, "PATH": path},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def repository(tmp_path: Path, store: str) -> Path:
    root = tmp_path / "repo"
    (root / "deploy").mkdir(parents=True)
    shutil.copy(STORES[store], root / "deploy" / "store.yaml")
    return root


def installs_this_release(command: str) -> bool:
    source = f"git+https://github.com/ctxmesh/feedbackstore-webhook@v{version()}"
    return command == f'{INSTALL}"feedbackstore-webhook @ {source}"'


def python_satisfies_requires_python(python: str) -> bool:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        floor = tomllib.load(handle)["project"]["requires-python"].removeprefix(">=")
    as_tuple = tuple(int(part) for part in python.split("."))
    return as_tuple >= tuple(int(part) for part in floor.split("."))


def test_the_sarif_workflow_may_upload_and_uploads_after_a_failed_check() -> None:
    (job,) = recipe(GITHUB)["jobs"].values()
    assert job["permissions"]["security-events"] == "write"
    steps = job["steps"]
    (upload,) = [
        s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif")
    ]
    assert upload["if"] == "always()"
    (setup,) = [s for s in steps if s.get("uses", "").startswith("actions/setup-python")]
    assert python_satisfies_requires_python(str(setup["with"]["python-version"]))
    runs = [s["run"] for s in steps if "run" in s]
    assert installs_this_release(runs[0])
    assert runs[-1].endswith(f"> {upload['with']['sarif_file']}")


@pytest.mark.parametrize(
    ("store", "code"),
    [
        pytest.param("valid", 0, id="a valid store passes and leaves an empty report"),
        pytest.param("invalid", 1, id="an invalid store fails and still leaves its report"),
    ],
)
def test_the_sarif_workflow_s_steps_run(tmp_path: Path, store: str, code: int) -> None:
    (job,) = recipe(GITHUB)["jobs"].values()
    (upload,) = [s for s in job["steps"] if s.get("if") == "always()"]
    root = repository(tmp_path, store)
    for step in job["steps"]:
        if "run" in step and not step["run"].startswith(INSTALL):
            result = shell(step["run"], root)
    assert result.returncode == code, result.stderr
    log = Sarif.model_validate_json((root / upload["with"]["sarif_file"]).read_text())
    (run,) = log.runs
    assert len(run.results or []) == (2 if code else 0)


def test_the_gitlab_job_names_an_image_with_git_and_installs_this_release() -> None:
    (job,) = recipe(GITLAB).values()
    image, _, tag = job["image"].partition(":")
    assert image == "python"
    assert "slim" not in tag
    assert "alpine" not in tag
    assert python_satisfies_requires_python(tag)
    (install,) = job["before_script"]
    assert installs_this_release(install)
    assert job["artifacts"]["when"] == "always"


@pytest.mark.parametrize(
    ("store", "code"),
    [
        pytest.param("valid", 0, id="a valid store passes with a passing report"),
        pytest.param("invalid", 1, id="an invalid store fails the job with a failed case"),
    ],
)
def test_the_gitlab_job_s_script_runs_and_writes_its_report(
    tmp_path: Path, store: str, code: int
) -> None:
    (job,) = recipe(GITLAB).values()
    root = repository(tmp_path, store)
    result = shell("\n".join(job["script"]), root)
    assert result.returncode == code, result.stderr
    (suite,) = JUnitXml.fromfile(str(root / job["artifacts"]["reports"]["junit"]))
    (case,) = suite
    assert bool([r for r in case.result if isinstance(r, Failure)]) == bool(code)


def pre_commit_hooks() -> dict[str, dict[str, Any]]:
    config = recipe(PRE_COMMIT)
    return {hook["id"]: {**hook, "rev": repo.get("rev")} for repo in config["repos"]
            for hook in repo["hooks"]}  # fmt: skip


@pytest.fixture
def whole_repository(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for name, text in TREE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / ".git").mkdir()
    return root


def test_the_shipped_hook_is_the_one_the_page_pins() -> None:
    shipped = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    hook = pre_commit_hooks()["feedbackstore-validate"]
    assert hook["id"] in {each["id"] for each in shipped}
    assert hook["rev"] == f"v{version()}"


@pytest.mark.parametrize(
    ("patch", "code"),
    [
        pytest.param("spec:\n  mode: Monitor\n", 0, id="every overlay valid"),
        pytest.param(
            "spec:\n  mode: Monitor\n---\nkind: Other\n",
            1,
            id="an overlay kustomize cannot build fails the hook",
        ),
        pytest.param(
            "spec:\n  external:\n    - name: c\n      score: {name: thumbs}\n",
            1,
            id="a patch that makes its overlay's store invalid fails the hook",
        ),
    ],
)
def test_the_overlay_hook_judges_each_built_overlay(
    whole_repository: Path, patch: str, code: int
) -> None:
    head = "apiVersion: agents.ctxmesh.ai/v1beta1\nkind: FeedbackStore\n"
    (whole_repository / "deploy/overlays/prod/store-mode.yaml").write_text(
        head + "metadata: {name: support-feedback, namespace: agents}\n" + patch
    )
    entry = pre_commit_hooks()["feedbackstore-overlays"]["entry"]
    result = shell(shlex.join(shlex.split(entry)), whole_repository)
    assert result.returncode == code, result.stdout + result.stderr
    assert result.stdout.count("1 FeedbackStore checked, 0 invalid") == (3 if code == 0 else 1)


def test_the_page_s_transcript_is_what_the_hook_prints(whole_repository: Path) -> None:
    (transcript,) = blocks(PRE_COMMIT, "console")
    command, *said = transcript.splitlines()
    result = shell(command.removeprefix("$ ") + " 2>&1", whole_repository)
    assert result.stdout.splitlines() == said
