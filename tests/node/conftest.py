"""The `node` tests: the project's image, built from its Dockerfile, run as the Deployments do.

A missing prerequisite (docker.io, mmdebstrap) skips them with one loud reason,
unless FEEDBACKSTORE_REQUIRE_KUBE=1, which makes it a failure.

The image is built (or found in the cache) when the first `node` test sets up,
on the one xdist worker that runs the `node` group; `.ci/run` builds it
beforehand, where a cold build's progress is visible.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.node.image_support import REQUIRE_ENV, Docker, NodeUnavailableError


@pytest.fixture(scope="session", name="image")
def _image() -> Iterator[tuple[Docker, str]]:
    docker = Docker()
    try:
        docker.start()
        name, _ = docker.ensure_image()
    except NodeUnavailableError as missing:
        docker.stop()
        message = f"node tests need Docker and mmdebstrap: {missing}"
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{message} ({REQUIRE_ENV}=1 forbids skipping)", pytrace=False)
        pytest.skip(f"SKIPPED ALL NODE TESTS — {message}")
    except BaseException:
        docker.stop()
        raise
    yield docker, name
    docker.stop()
