"""Every tool the suite builds, built (or found) once, on the pytest controller, before the
first test.

A cold build compiles Go for minutes: inside a test it would outlast the test's timeout,
and in an xdist worker nothing it prints reaches the screen. So when the session starts,
before any worker exists, the controller builds the tools of every group of tests the
run can select, one at a time, printing each script's lines (what it builds, how long a
first build takes) and a line every 30 s while go compiles. Workers never build; another
session on the machine waits on each script's own lock and reuses its result. It hands
the results to each worker in its `workerinput` (without xdist it is the one process).
A test then only looks its tool up (`tool`): built, it gets the path; not available on
this machine, its group is skipped with one reason and the command that brings it (a
failure under FEEDBACKSTORE_REQUIRE_KUBE=1); missing although the session started without
complaint, it fails and says why, and never builds inside its own timeout.

A run builds only what the tests it can select need: a group is wanted when one of the
paths it was given holds one of the group's test files (or lies inside one) and its `-m`
can select them; `--collect-only` builds nothing. The first lines of the run name every
group that will be skipped; each group's skips share one reason, raised in one place,
so pytest's summary folds them into one line per group.

A new tool is one entry in TOOLS and, for a new group of tests, one in GROUPS.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

import pytest
from _pytest.mark.expression import Expression

from tests.kube import controlplane
from tests.node import cluster
from tests.node.image_support import IMAGE_SCRIPT, NodeUnavailableError
from tests.support import build_script
from tests.support.build_script import ToolUnavailableError

TESTS = pathlib.Path(__file__).resolve().parents[1]
REQUIRE_ENV = controlplane.REQUIRE_ENV
GO_VERSION = next(
    line.split()[1].rsplit(".", 1)[0]
    for line in (TESTS / "controlplane" / "go.mod").read_text().splitlines()
    if line.startswith("go ")
)
GO = f"install Go {GO_VERSION}+ (`go` on PATH, /usr/local/go/bin/go, or GO=)"


@dataclass(frozen=True)
class Tool:
    """A program the tests run: built by a cached script (its last line of stdout is the
    result's path, exit 3 means it cannot be built here), or found on PATH as `command`."""

    name: str
    script: pathlib.Path | None = None
    command: str | None = None
    # Its script deletes every other version of its result (another worktree's build on the
    # same machine deletes ours): the session keeps a hard link of its own (`hold`).
    held: bool = False


@dataclass(frozen=True)
class Group:
    """Tests that need the same tools: they run, or are skipped together for one reason."""

    name: str
    tests: tuple[str, ...]  # where they live, under tests/: folders or modules
    tools: tuple[str, ...]  # what they need, in build order
    brings: str  # the command that brings what they need on a fresh machine
    host: Callable[[], None] | None = None  # what the machine must have before anything is built


TOOLS = {
    tool.name: tool
    for tool in (
        Tool("control plane", script=controlplane.BUILD_SCRIPT),
        Tool("node binaries", script=cluster.BUILD_SCRIPT),
        Tool("image", script=IMAGE_SCRIPT, held=True),
        Tool("helm", script=TESTS / "helm" / "build.sh"),
        Tool("gitops-health", script=TESTS / "gitops" / "build.sh"),
        Tool("promtool", command="promtool"),
    )
}
NODE_PACKAGES = (
    "docker.io containerd runc mmdebstrap iptables iproute2 gcc libc6-dev "
    "containernetworking-plugins"
)
GROUPS = (
    Group("kube", ("kube",), ("control plane",), GO),
    Group(
        "node",
        ("node",),
        ("control plane", "node binaries", "image"),
        f"as root, apt-get install {NODE_PACKAGES}; and {GO}",
        host=cluster.host_prerequisites,
    ),
    Group(
        "chart",
        ("webhook/manifests/test_chart.py", "kube/test_helm_real.py", "node/test_helm_node.py"),
        ("helm",),
        GO,
    ),
    Group(
        "gitops",
        ("webhook/manifests/test_argocd_health.py", "kube/test_gitops_health_real.py"),
        ("gitops-health",),
        GO,
    ),
    Group(
        "alerts",
        ("webhook/observability/test_alerts.py",),
        ("promtool",),
        "apt-get install prometheus",
    ),
)
# The tests under these folders carry their folder's marker (each module's pytestmark).
_MARKED_FOLDERS = ("kube", "node")
_WORKERINPUT = "feedbackstore_prebuilt"
_SKIPPED = "SKIPPED ALL "
_EVERY = 30.0


@dataclass
class Prebuilt:
    """What the controller found at the session's start, as handed to every worker."""

    tools: dict[str, str]  # name -> path
    failed: dict[str, str]  # name -> why its build failed
    unavailable: dict[str, str]  # group -> why it cannot run here


_prebuilt: Prebuilt | None = None
_held: list[pathlib.Path] = []


def build_on_controller(config: pytest.Config) -> None:
    """Build (or find) the tools of every group the run can select, before any worker."""
    global _prebuilt
    if hasattr(config, "workerinput"):
        return
    found = _prebuilt = Prebuilt({}, {}, {})
    groups = [group for group in GROUPS if may_select(config, group)]
    if not groups:
        return
    say = _printer(config)
    cannot: dict[str, str] = {}  # tool -> why it cannot be had on this machine
    # What takes no build first, so that the groups it rules out are named before any build.
    for group in groups:
        try:
            if group.host is not None:
                group.host()
            for name in group.tools:
                if TOOLS[name].command is not None and name not in found.tools:
                    _obtain(found, TOOLS[name], say)
        except (NodeUnavailableError, ToolUnavailableError) as missing:
            _unavailable(found, group, str(missing), say)
    for group in groups:
        if group.name in found.unavailable:
            continue
        for name in group.tools:
            if name not in cannot and name not in found.failed and name not in found.tools:
                try:
                    _obtain(found, TOOLS[name], say)
                except ToolUnavailableError as error:
                    cannot[name] = str(error)
            if name in cannot:
                _unavailable(found, group, cannot[name], say)
                break
            if name in found.failed:
                say(f"{group.name} tests: FAIL, the build of {name} failed (above)")
                break
        else:
            say(f"{group.name} tests: run with " + _ready(found, group))


def hand_to_worker(workerinput: dict[str, Any]) -> None:
    """Put the controller's findings where an xdist worker reads them (`receive`)."""
    if _prebuilt is not None:
        workerinput[_WORKERINPUT] = vars(_prebuilt)


def receive(config: pytest.Config) -> None:
    """On an xdist worker: take what the controller handed over."""
    global _prebuilt
    handed = getattr(config, "workerinput", {}).get(_WORKERINPUT)
    if handed is not None:
        _prebuilt = Prebuilt(**handed)


def tool(group: str, name: str) -> pathlib.Path:
    """The path of `name`, for a test of `group`, as built at the session's start.

    Skips the test when its group cannot run on this machine (fails under
    FEEDBACKSTORE_REQUIRE_KUBE=1), and fails it when the tool's build failed or the tool is
    missing: a test never builds one.
    """
    prebuilt = _prebuilt or Prebuilt({}, {}, {})
    if group in prebuilt.unavailable:
        skip_group(group, prebuilt.unavailable[group])
    if name in prebuilt.failed:
        pytest.fail(f"{name} failed to build at the session's start:\n{prebuilt.failed[name]}")
    if name not in prebuilt.tools:
        pytest.fail(
            f"{name} was not built at the session's start: tests/support/prebuild.py builds "
            f"it only for a run whose paths and -m can select a test of a group that needs it "
            f"({', '.join(g.name for g in GROUPS if name in g.tools)}); if this test needs it, "
            "add its module to that group's tests in GROUPS",
            pytrace=False,
        )
    path = pathlib.Path(prebuilt.tools[name])
    if not path.exists():
        pytest.fail(f"{name} was found at {path} when the session started, and is gone")
    return path


def skip_group(group: str, why: str) -> NoReturn:
    """Skip (or, under FEEDBACKSTORE_REQUIRE_KUBE=1, fail) a test of a group that cannot run
    here, with the group's one reason (`fold_skip` makes pytest's summary say it once)."""
    message = f"{_first_line(why)}; to run them: {_brings(group)}"
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(
            f"{group} tests cannot run here: {message} ({REQUIRE_ENV}=1 forbids skipping)",
            pytrace=False,
        )
    pytest.skip(f"{_SKIPPED}{group.upper()} TESTS — {message}")


def fold_skip(report: pytest.TestReport) -> None:
    """Report a group's skip at `skip_group`, not at the test.

    pytest folds skips with the same place and reason into one line of its summary, but
    puts a skip raised in a fixture at the test that asked for it: a group of 29 tests
    skipped for one reason would take 29 lines.
    """
    if report.skipped and isinstance(report.longrepr, tuple):
        message = report.longrepr[2]
        if message.startswith(f"Skipped: {_SKIPPED}"):
            report.longrepr = (__file__, skip_group.__code__.co_firstlineno, message)


def may_select(config: pytest.Config, group: Group) -> bool:
    """False when no test of `group` can run: `--collect-only`, a `-m` none of its tests'
    markers satisfies, or only paths that hold none of its tests. Anything else may."""
    if config.option.collectonly:
        return False
    here = config.invocation_params.dir
    paths = [(here / arg.split("::")[0]).resolve() for arg in config.args]
    if not all(path.exists() for path in paths):
        return True  # not a path (--pyargs, say): it may hold anything
    return any(
        _marks_allow(config.option.markexpr, test)
        and any(
            (TESTS / test).is_relative_to(path) or path.is_relative_to(TESTS / test)
            for path in paths
        )
        for test in group.tests
    )


def _marks_allow(markexpr: str, test: str) -> bool:
    """Whether `-m markexpr` can select the tests at `test` (which carry their folder's
    marker when their folder has one)."""
    folder = test.split("/")[0]
    marker = folder if folder in _MARKED_FOLDERS else None
    return not markexpr or Expression.compile(markexpr).evaluate(lambda name, **_: name == marker)


def _obtain(prebuilt: Prebuilt, tool: Tool, say: Callable[[str], None]) -> None:
    """Build or find `tool`: its path in `prebuilt.tools`, or why its build failed in
    `prebuilt.failed`; ToolUnavailableError when it cannot be had on this machine."""
    if tool.command is not None:
        found = shutil.which(tool.command)
        if found is None:
            raise ToolUnavailableError(f"{tool.command} is not on PATH")
        prebuilt.tools[tool.name] = found
        return
    assert tool.script is not None
    try:
        path = build_script.run(tool.script, say, _EVERY)
    except RuntimeError as error:
        prebuilt.failed[tool.name] = str(error)
        return
    prebuilt.tools[tool.name] = str(hold(path) if tool.held else path)


def hold(path: pathlib.Path) -> pathlib.Path:
    """A hard link to `path` in a folder of the session's own (a copy across filesystems),
    which outlives the script's deleting `path`; removed by `release` at the session's end."""
    folder = pathlib.Path(tempfile.mkdtemp(prefix="feedbackstore-held-"))
    _held.append(folder)
    held = folder / path.name
    try:
        os.link(path, held)
    except OSError:
        shutil.copy2(path, held)
    return held


def release() -> None:
    """Remove what `hold` kept (on the controller, when the session ends)."""
    while _held:
        shutil.rmtree(_held.pop(), ignore_errors=True)


def _ready(prebuilt: Prebuilt, group: Group) -> str:
    return "; ".join(f"{name} from {prebuilt.tools[name]}" for name in group.tools)


def _unavailable(prebuilt: Prebuilt, group: Group, why: str, say: Callable[[str], None]) -> None:
    prebuilt.unavailable[group.name] = why
    outcome = f"FAIL ({REQUIRE_ENV}=1)" if os.environ.get(REQUIRE_ENV) == "1" else "SKIPPED"
    say(f"{group.name} tests: {outcome}, {_first_line(why)}; to run them: {group.brings}")


def _first_line(why: str) -> str:
    return why.strip().splitlines()[0] if why.strip() else "unavailable"


def _brings(group: str) -> str:
    return next(g.brings for g in GROUPS if g.name == group)


def _printer(config: pytest.Config) -> Callable[[str], None]:
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if terminal is None:
        return lambda line: print(line, file=sys.stderr, flush=True)

    def write(line: str) -> None:
        terminal.write_line(line)
        terminal.flush()

    return write
