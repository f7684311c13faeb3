"""Build (or find) the control plane once, on the pytest controller, where it shows.

A first build compiles kube-apiserver, kube-controller-manager and etcd for
minutes: in a fixture it would outlast any test's timeout, and in an xdist
worker nothing it prints reaches the screen. So the controller runs build.sh
when the session starts, before any worker exists, printing build.sh's lines
(what it builds, how long a first build takes) and a line every 30 s while go
compiles, and hands each worker the result in its `workerinput` (without
xdist, the controller is the one process and keeps it in its stash). A run
that cannot select a `kube` test (only modules directly in tests/, a `-m`
that excludes `kube`, `--collect-only`) builds nothing.
"""

from __future__ import annotations

import os
import pathlib
import sys
from typing import Any

import pytest
from _pytest.mark.expression import Expression

from tests.kube.controlplane import REQUIRE_ENV, ControlPlaneUnavailableError, binaries

TESTS = pathlib.Path(__file__).resolve().parents[1]
# Where no `kube` test lives: a run given only paths in these needs no control plane.
_NO_KUBE_TESTS = (TESTS / "webhook", TESTS / "support", TESTS / "docs")
_RESULT = pytest.StashKey["pathlib.Path | Exception"]()
_WORKERINPUT = "feedbackstore_controlplane"
_KINDS: dict[str, type[Exception]] = {
    "unavailable": ControlPlaneUnavailableError,
    "failed": RuntimeError,
}


def build_on_controller(config: pytest.Config) -> None:
    if hasattr(config, "workerinput") or not may_select_kube_tests(config):
        return
    say = _printer(config)
    try:
        built = binaries(say)
    except (ControlPlaneUnavailableError, RuntimeError) as error:
        config.stash[_RESULT] = error
        skips = (
            isinstance(error, ControlPlaneUnavailableError) and os.environ.get(REQUIRE_ENV) != "1"
        )
        outcome = "is skipped" if skips else "fails"
        say(f"control plane: not available; every `kube` test {outcome}, saying why")
        return
    config.stash[_RESULT] = built
    say(f"control plane: kube-apiserver, kube-controller-manager and etcd from {built}")


def hand_to_worker(config: pytest.Config, workerinput: dict[str, Any]) -> None:
    """Put the controller's result where an xdist worker finds it (`config.workerinput`)."""
    result = config.stash.get(_RESULT, None)
    if isinstance(result, Exception):
        kind = next(k for k, cls in _KINDS.items() if isinstance(result, cls))
        workerinput[_WORKERINPUT] = [kind, str(result)]
    elif result is not None:
        workerinput[_WORKERINPUT] = ["built", str(result)]


def built(config: pytest.Config) -> pathlib.Path | Exception | None:
    """What the controller found: the binaries' directory, why there are none, or None when
    it did not look (then the caller builds)."""
    if not hasattr(config, "workerinput"):
        return config.stash.get(_RESULT, None)
    handed = config.workerinput.get(_WORKERINPUT)
    if handed is None:
        return None
    kind, text = handed
    return pathlib.Path(text) if kind == "built" else _KINDS[kind](text)


def may_select_kube_tests(config: pytest.Config) -> bool:
    """False when no `kube` test can run: `--collect-only`, a `-m` that excludes `kube`, or
    only paths under the folders where none lives (the package's unit tests, the support
    code's, the docs'). Anything else may select one."""
    if config.option.collectonly:
        return False
    markexpr = config.option.markexpr
    if markexpr and not Expression.compile(markexpr).evaluate(lambda name, **_: name == "kube"):
        return False
    here = config.invocation_params.dir
    paths = [(here / arg.split("::")[0]).resolve() for arg in config.args]
    return not all(any(path.is_relative_to(f) for f in _NO_KUBE_TESTS) for path in paths)


def _printer(config: pytest.Config) -> Any:
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if terminal is None:
        return lambda line: print(line, file=sys.stderr, flush=True)

    def write(line: str) -> None:
        terminal.write_line(line)
        terminal.flush()

    return write
