"""The `kube` tests: a real etcd and kube-apiserver, started once per session.

The binaries are built when the session starts (tests/support/prebuild.py). Without a
Go toolchain they cannot be, and every `kube` test is skipped with one loud reason —
unless FEEDBACKSTORE_REQUIRE_KUBE=1 (set by `.ci/run`), which turns that skip into a
failure so CI always runs them.
"""

from __future__ import annotations

import pathlib
from collections.abc import Iterator

import pytest

from tests.kube.controlplane import ControlPlane
from tests.kube.status_writer_support import Writers
from tests.support import prebuild


@pytest.fixture(scope="session", name="control_plane_binaries")
def _control_plane_binaries() -> pathlib.Path:
    return prebuild.tool("kube", "control plane")


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
    """A failing `kube` test shows the last lines of etcd's and kube-apiserver's logs, and of
    each status writer it started."""
    report = yield
    if report.failed and "control_plane" in getattr(item, "fixturenames", ()):
        plane = getattr(item, "funcargs", {}).get("control_plane")
        if isinstance(plane, ControlPlane):
            report.sections.append(("control plane logs", plane.logs()))
        writers = getattr(item, "funcargs", {}).get("writers")
        if isinstance(writers, Writers) and writers.started:
            report.sections.append(("status writer logs", writers.logs()))
    return report
