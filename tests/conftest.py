"""Set-up for the whole session that runs once, on the pytest controller, before any
xdist worker starts: building (or finding) every tool the selected tests need
(tests/support/prebuild.py); and, on each worker, what the controller found, and the
`xdist_group` of every test where the scheduler sees it. With them the fixtures more than
one folder's tests use (a folder's own are in its conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

# The asserts of helpers that hold a test's checks report their values, as in a test module.
# Registered here, before any test module is imported: tests/docs imports from tests/kube, and
# is collected before tests/kube's own conftest runs.
pytest.register_assert_rewrite("tests.kube.kubectl_support")

from hypothesis import HealthCheck, settings  # noqa: E402

from tests.support import prebuild  # noqa: E402 (after the registration above)
from tests.support.emulator import ApiServerEmulator  # noqa: E402

# The property tests state what holds of every example, not how fast one runs: hypothesis's
# default 200 ms deadline per example and its too-slow health check fail them when another
# suite shares the 2 cores (an example of the inline gauge's test took 412 ms at load 30).
# Speed has its own benchmarks (bench/). One profile for the whole suite, so no test restates it.
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")


@pytest.fixture
def apiserver() -> Iterator[ApiServerEmulator]:
    """A started API-server emulator (bookmarks every 0.5 s), stopped after the test: the status
    writer's, the doctor's and the alerts' tests run against it, and its own tests."""
    emulator = ApiServerEmulator(bookmark_interval=0.5)
    emulator.start()
    try:
        yield emulator
    finally:
        emulator.stop()


def pytest_sessionstart(session: pytest.Session) -> None:
    # xdist starts its workers in its own sessionstart, marked trylast: after this one.
    prebuild.build_on_controller(session.config)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist's hook, called for each worker before it starts (`node` is its WorkerController)."""
    prebuild.hand_to_worker(node.workerinput)


def pytest_configure(config: pytest.Config) -> None:
    prebuild.receive(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        prebuild.release()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> object:
    report = yield
    prebuild.fold_skip(report)
    return report


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep `--dist loadgroup` working: one worker per `xdist_group`.

    pytest-xdist (3.8) tells the scheduler a test's group by setting `item._nodeid` to
    `nodeid@group` on the worker; pytest 9.2 derives `nodeid` from `item._id`
    instead, so the suffix never reached the scheduler and the `kube` and `node`
    groups were split over both workers (each starting its own control plane or
    node). Put the suffix where pytest 9.2 reads it.
    """
    if not getattr(config.option, "loadgroup", False):
        return
    try:
        from _pytest.nodeid import NodeId  # pytest >= 9.2
    except ImportError:
        return  # older pytest reads `_nodeid`, as xdist sets it
    for item in items:
        names = {
            str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
            for mark in item.iter_markers("xdist_group")
        }
        suffix = "@" + "_".join(sorted(names))
        if names and not item.nodeid.endswith(suffix) and hasattr(item, "_id"):
            item._id = NodeId.parse(item.nodeid + suffix)
