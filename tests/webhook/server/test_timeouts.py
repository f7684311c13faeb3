"""Slow and idle clients cannot hold connections: an unfinished TLS handshake, a connection that
never sends a request, headers dripped byte by byte and a stalled body are all cut off."""

from __future__ import annotations

import asyncio
import ssl
import time

import pytest

from tests.support.admission_apiserver import accepted_answer
from tests.support.pki import SERVICE_DNS, client_context
from tests.support.reviews import create, valid_spec
from tests.support.servers import Webhook, WebhookFactory


async def closed_within(
    reader: asyncio.StreamReader, seconds: float, since: float | None = None
) -> float:
    """Read until the server closes; how long that took from `since` (default: now), failing
    past `seconds` of silence."""
    started = time.monotonic() if since is None else since
    try:
        while await asyncio.wait_for(reader.read(65536), seconds):
            pass
    except (ConnectionResetError, ssl.SSLError):
        pass
    return time.monotonic() - started


# How late a loaded machine may close a connection past its timeout; well under the defaults
# (10 s for a handshake, 120 s idle), so a timeout that was not applied cannot pass.
LATE_SECONDS = 4.0


async def still_serving(webhook: Webhook) -> None:
    sent = create(valid_spec())
    assert accepted_answer(sent, *await webhook.client.review(sent))["allowed"] is True


async def test_a_client_that_never_finishes_the_tls_handshake_is_dropped(
    start_webhook: WebhookFactory,
) -> None:
    webhook: Webhook = await start_webhook(handshake_timeout=0.5)
    opened = time.monotonic()  # before the server's clock starts, at accept
    reader, writer = await asyncio.open_connection("127.0.0.1", webhook.port)
    writer.write(b"\x16\x03\x01")  # the first bytes of a ClientHello, then nothing
    assert 0.5 <= await closed_within(reader, 10, since=opened) < 0.5 + LATE_SECONDS
    writer.close()
    await still_serving(webhook)


@pytest.mark.parametrize(
    "sent_before_stalling",
    [
        pytest.param(b"", id="a connection that never sends a request"),
        pytest.param(
            b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Ty", id="headers that stop halfway"
        ),
    ],
)
async def test_an_idle_or_slow_connection_is_closed_after_the_idle_timeout(
    start_webhook: WebhookFactory, sent_before_stalling: bytes
) -> None:
    webhook: Webhook = await start_webhook(idle_timeout=0.5)
    opened = time.monotonic()  # before the server's clock starts
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", webhook.port, ssl=client_context(webhook.ca), server_hostname=SERVICE_DNS
    )
    writer.write(sent_before_stalling)
    assert 0.5 <= await closed_within(reader, 10, since=opened) < 0.5 + LATE_SECONDS
    writer.close()
    await still_serving(webhook)


async def test_headers_dripped_a_byte_at_a_time_do_not_extend_the_deadline(
    start_webhook: WebhookFactory,
) -> None:
    webhook: Webhook = await start_webhook(idle_timeout=1.0)
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", webhook.port, ssl=client_context(webhook.ca), server_hostname=SERVICE_DNS
    )
    started = time.monotonic()
    request = b"POST /validate HTTP/1.1\r\nHost: x\r\n" + b"X-Padding: " + b"a" * 200
    for byte in request:
        if reader.at_eof():
            break
        writer.write(bytes([byte]))
        await asyncio.sleep(0.05)
    await closed_within(reader, 10)
    assert time.monotonic() - started < 8
    writer.close()
    await still_serving(webhook)
