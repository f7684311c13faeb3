"""The `kube` tests: a real etcd and kube-apiserver, started once per session.

Without a Go toolchain the binaries cannot be built, and every `kube` test is
skipped with one loud reason — unless FEEDBACKSTORE_REQUIRE_KUBE=1 (set by
`.ci/run`), which turns that skip into a failure so CI always runs them.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Iterator

import pytest

from tests.kube import prebuild
from tests.kube.controlplane import (
    REQUIRE_ENV,
    ControlPlane,
    ControlPlaneUnavailableError,
    binaries,
)

_BUILT = pytest.StashKey["pathlib.Path | Exception"]()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build (or find) the binaries before any test runs, when a `kube` test is selected and
    the controller did not (tests/kube/prebuild.py: it does, unless the run looked as if it
    could select none).

    Here, not in a fixture: a first build takes minutes, longer than any test's
    timeout, and collection has none. The build script's lock makes a second
    caller wait for the first and reuse its result.
    """
    found = prebuild.built(session.config)
    if found is None and any(item.get_closest_marker("kube") for item in session.items):
        try:
            found = binaries()
        except (ControlPlaneUnavailableError, RuntimeError) as error:
            found = error
    if found is not None:
        session.config.stash[_BUILT] = found


@pytest.fixture(scope="session", name="control_plane_binaries")
def _control_plane_binaries(pytestconfig: pytest.Config) -> pathlib.Path:
    built = pytestconfig.stash.get(_BUILT, None)
    try:
        if isinstance(built, Exception):
            raise built
        return built if built is not None else binaries()
    except ControlPlaneUnavailableError as missing:
        message = f"kube tests need a real kube-apiserver, and it cannot be built here: {missing}"
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{message} ({REQUIRE_ENV}=1 forbids skipping)", pytrace=False)
        pytest.skip(f"SKIPPED ALL KUBE TESTS — {message}")


@pytest.fixture(scope="session", name="control_plane")
def _control_plane(
    control_plane_binaries: pathlib.Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ControlPlane]:
    plane = ControlPlane(
        control_plane_binaries, tmp_path_factory.mktemp("controlplane"), namespace_controller=True
    )
    try:
        plane.start()
    except Exception:
        plane.stop()
        raise
    yield plane
    plane.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> object:
    """A failing `kube` test shows the last lines of etcd's and kube-apiserver's logs."""
    report = yield
    if report.failed and "control_plane" in getattr(item, "fixturenames", ()):
        plane = getattr(item, "funcargs", {}).get("control_plane")
        if isinstance(plane, ControlPlane):
            report.sections.append(("control plane logs", plane.logs()))
    return report
