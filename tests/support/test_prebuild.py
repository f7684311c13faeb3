"""Every tool is built before the first test, only for the groups a run can select; a test
never builds one, and a group that cannot run here is named once at the start, with the
command that brings it, and once in the summary."""

from __future__ import annotations

import pathlib
import re
from types import SimpleNamespace
from typing import Any

import pytest

from tests.kube.controlplane import REPO
from tests.support import prebuild
from tests.support.prebuild import GROUPS, Prebuilt
from tests.support.pytest_run import run_pytest


def config(*args: str, markexpr: str = "", collectonly: bool = False) -> Any:
    """What `may_select` reads of a pytest.Config, for a run started in the repository."""
    return SimpleNamespace(
        option=SimpleNamespace(collectonly=collectonly, markexpr=markexpr),
        invocation_params=SimpleNamespace(dir=REPO),
        args=list(args),
    )


EVERY_GROUP = {"kube", "node", "chart", "gitops", "alerts"}


@pytest.mark.parametrize(
    ("run", "groups"),
    [
        pytest.param(config("tests"), EVERY_GROUP, id="the whole suite needs every group's tools"),
        pytest.param(config("tests/webhook/rules"), set(), id="one package's unit tests need none"),
        pytest.param(config("tests/support"), set(), id="the support code's tests need none"),
        pytest.param(config("tests/webhook"), {"chart", "gitops", "alerts"},
                     id="the unit tests need helm, gitops-health and promtool, no control plane"),
        pytest.param(config("tests/kube/test_crd_real.py"), {"kube"},
                     id="one kube module needs the control plane only"),
        pytest.param(config("tests/kube/test_helm_real.py::test_x"), {"kube", "chart"},
                     id="the real-server chart test needs the control plane and helm"),
        pytest.param(config("tests", markexpr="kube"), {"kube", "chart", "gitops"},
                     id="-m kube needs the tools of the kube modules"),
        pytest.param(config("tests", markexpr="not kube and not node"),
                     {"chart", "gitops", "alerts"}, id="-m 'not kube and not node' needs no node"),
        pytest.param(config("tests", collectonly=True), set(), id="--collect-only needs none"),
        pytest.param(config("tests.kube"), EVERY_GROUP, id="what is not a path may hold anything"),
    ],
)  # fmt: skip
def test_a_run_builds_only_what_the_tests_it_can_select_need(run: Any, groups: set[str]) -> None:
    assert {group.name for group in GROUPS if prebuild.may_select(run, group)} == groups


@pytest.fixture
def found(monkeypatch: pytest.MonkeyPatch) -> Prebuilt:
    """What the session's start found, as a test sees it; empty until the test fills it."""
    state = Prebuilt({}, {}, {})
    monkeypatch.setattr(prebuild, "_prebuilt", state)
    return state


def test_a_tool_not_built_at_the_start_fails_the_test_saying_why(found: Prebuilt) -> None:
    with pytest.raises(pytest.fail.Exception) as failed:
        prebuild.tool("chart", "helm")
    assert str(failed.value).startswith(
        "helm was not built at the session's start: tests/support/prebuild.py builds it only "
        "for a run whose paths and -m can select a test of a group that needs it (chart); if "
        "this test needs it, add its module to that group's tests in GROUPS"
    )


def test_a_tool_gone_since_the_start_fails_the_test_saying_where(
    found: Prebuilt, tmp_path: pathlib.Path
) -> None:
    found.tools["helm"] = str(tmp_path / "helm")
    gone = r"^helm was found at .*/helm when the session started, and is gone$"
    with pytest.raises(pytest.fail.Exception, match=gone):
        prebuild.tool("chart", "helm")


def test_a_failed_build_fails_the_test_with_the_build_s_words(found: Prebuilt) -> None:
    found.failed["helm"] = "tests/helm/build.sh failed (exit 1):\ngo: disk full"
    with pytest.raises(pytest.fail.Exception) as failed:
        prebuild.tool("chart", "helm")
    assert str(failed.value) == (
        "helm failed to build at the session's start:\n"
        "tests/helm/build.sh failed (exit 1):\ngo: disk full"
    )


def test_a_built_tool_is_its_path(found: Prebuilt, tmp_path: pathlib.Path) -> None:
    (tmp_path / "helm").touch()
    found.tools["helm"] = str(tmp_path / "helm")
    assert prebuild.tool("chart", "helm") == tmp_path / "helm"


@pytest.fixture(scope="module")
def without_go(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A run of two groups' tests (`kube`, `node`) on two workers, without a Go toolchain
    and with every cache empty: what a new user without Go sees."""
    cache = tmp_path_factory.mktemp("cache")
    result = run_pytest(
        "-n",
        "2",
        "-ra",
        "tests/kube/test_controlplane.py",
        "tests/node/test_image.py",
        env={"GO": "/nonexistent/go", "XDG_CACHE_HOME": str(cache)},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_the_first_lines_name_each_skipped_group_and_what_brings_it(without_go: str) -> None:
    start = without_go[: without_go.index("test session starts")]
    go = re.escape("install Go 1.26+ (`go` on PATH, /usr/local/go/bin/go, or GO=)")
    debian = re.escape(
        "as root, apt-get install docker.io containerd runc mmdebstrap iptables iproute2 gcc "
        "libc6-dev containernetworking-plugins"
    )
    assert re.search(rf"^kube tests: SKIPPED, .*no Go toolchain.*; to run them: {go}$", start, re.M)
    assert re.search(rf"^node tests: SKIPPED, .*; to run them: {debian}; and {go}$", start, re.M)


def test_the_summary_names_each_skipped_group_once(without_go: str) -> None:
    summary = without_go[without_go.index("short test summary info") :].splitlines()
    skipped = [line for line in summary if line.startswith("SKIPPED")]
    assert len(skipped) == 2, "\n".join(skipped)
    kube, node = sorted(skipped, key=lambda line: "NODE" in line)
    at = r"SKIPPED \[\d+\] tests/support/prebuild.py:\d+: SKIPPED ALL"
    assert re.match(rf"{at} KUBE TESTS — ", kube), kube
    assert re.match(rf"{at} NODE TESTS — ", node), node
    counts = [int(re.findall(r"\[(\d+)\]", line)[0]) for line in (kube, node)]
    assert all(count > 1 for count in counts), counts


def test_a_held_result_outlives_its_script_deleting_it(tmp_path: pathlib.Path) -> None:
    """image.sh deletes every other image tarball: another worktree's build deleted the one
    this session had built, and the node tests failed on it."""
    built = tmp_path / "feedbackstore-webhook-0123.tar"
    built.write_bytes(b"the image")
    held = prebuild.hold(built)
    built.unlink()
    assert held.read_bytes() == b"the image"
    prebuild.release()
    assert not held.exists()
