"""The emulator's own tests' fixture: a client of the started emulator (`apiserver`, in
tests/conftest.py, is shared with the status writer's tests)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.emulator.emulator import ApiServerEmulator


@pytest.fixture
def api_client(apiserver: ApiServerEmulator) -> Iterator[object]:
    """A ``kubernetes.client.ApiClient`` talking to the ``apiserver`` fixture."""
    client = apiserver.api_client()
    try:
        yield client
    finally:
        client.close()
