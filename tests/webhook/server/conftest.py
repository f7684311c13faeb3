"""pytest fixtures of the server tests: a test CA, serving files signed by it, and in-process
webhooks on the test's event loop (the `name=` keeps each fixture apart from its function)."""

from __future__ import annotations

import contextlib
import pathlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trustme

from tests.support.pki import PlainFiles, client_context, issue
from tests.support.servers import (
    Webhook,
    WebhookClient,
    WebhookFactory,
    config_for,
    running_webhook,
)


@pytest.fixture(name="ca")
def _ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(name="serving_files")
def _serving_files(tmp_path: pathlib.Path, ca: trustme.CA) -> PlainFiles:
    files = PlainFiles(tmp_path / "tls")
    files.write(issue(ca))
    return files


@pytest.fixture(name="start_webhook")
async def _start_webhook(
    ca: trustme.CA, serving_files: PlainFiles
) -> AsyncIterator[WebhookFactory]:
    """Start a server with config overrides; every server and client is stopped afterwards."""
    async with contextlib.AsyncExitStack() as stack:

        async def start(**overrides: Any) -> Webhook:
            config = config_for(serving_files.cert, serving_files.key, **overrides)
            server = await stack.enter_async_context(running_webhook(config))
            client = WebhookClient(server.port, client_context(ca))
            stack.push_async_callback(client.close)
            return Webhook(server, client, ca, serving_files)

        yield start


@pytest.fixture(name="webhook")
async def _webhook(start_webhook: WebhookFactory) -> Webhook:
    webhook: Webhook = await start_webhook()
    return webhook
