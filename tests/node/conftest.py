"""The `node` tests: the project's image, built from its Dockerfile, run as the Deployments do.

A missing prerequisite (docker.io, mmdebstrap) skips them with one loud reason,
unless FEEDBACKSTORE_REQUIRE_KUBE=1, which makes it a failure.
"""

from __future__ import annotations

import os

import pytest

from tests.node.image_support import REQUIRE_ENV, Docker, NodeUnavailableError

_BUILT = pytest.StashKey["tuple[Docker, str] | Exception"]()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start Docker and build (or find) the image before any test runs.

    Here, not in a fixture: a cold build takes minutes, longer than a test's timeout.
    """
    if not any(item.get_closest_marker("node") for item in session.items):
        return
    docker = Docker()
    try:
        docker.start()
        name, _ = docker.ensure_image()
    except (NodeUnavailableError, RuntimeError) as error:
        docker.stop()
        session.config.stash[_BUILT] = error
        return
    session.config.stash[_BUILT] = (docker, name)


def pytest_sessionfinish(session: pytest.Session) -> None:
    built = session.config.stash.get(_BUILT, None)
    if isinstance(built, tuple):
        built[0].stop()


@pytest.fixture(scope="session", name="image")
def _image(pytestconfig: pytest.Config) -> tuple[Docker, str]:
    built = pytestconfig.stash.get(_BUILT, None)
    if isinstance(built, NodeUnavailableError):
        message = f"node tests need Docker and mmdebstrap: {built}"
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{message} ({REQUIRE_ENV}=1 forbids skipping)", pytrace=False)
        pytest.skip(f"SKIPPED ALL NODE TESTS — {message}")
    if isinstance(built, Exception):
        pytest.fail(str(built), pytrace=False)
    assert built is not None
    return built
