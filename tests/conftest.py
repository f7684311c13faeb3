"""Set-up for the whole session that runs once, on the pytest controller, before any
xdist worker starts: building (or finding) the `kube` tests' control plane."""

from __future__ import annotations

from typing import Any

import pytest

from tests.kube import prebuild


def pytest_sessionstart(session: pytest.Session) -> None:
    # xdist starts its workers in its own sessionstart, marked trylast: after this one.
    prebuild.build_on_controller(session.config)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist's hook, called for each worker before it starts (`node` is its WorkerController)."""
    prebuild.hand_to_worker(node.config, node.workerinput)
