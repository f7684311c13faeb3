"""pytest fixtures: ``from tests.support.emulator.fixtures import apiserver  # noqa: F401``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.emulator.emulator import ApiServerEmulator


@pytest.fixture
def apiserver() -> Iterator[ApiServerEmulator]:
    """A started emulator (bookmarks every 0.5 s), stopped after the test."""
    emulator = ApiServerEmulator(bookmark_interval=0.5)
    emulator.start()
    try:
        yield emulator
    finally:
        emulator.stop()


@pytest.fixture
def api_client(apiserver: ApiServerEmulator) -> Iterator[object]:
    """A ``kubernetes.client.ApiClient`` talking to the ``apiserver`` fixture."""
    client = apiserver.api_client()
    try:
        yield client
    finally:
        client.close()
