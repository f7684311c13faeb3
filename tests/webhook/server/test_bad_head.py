"""A request head aiohttp's parser refuses is the client's fault: a 4xx JSON
Status (431 for oversized or too many headers), one warning line without a traceback, counted
with the other bad requests; and the server keeps serving."""

from __future__ import annotations

import asyncio
import logging

import orjson
import pytest

from tests.support.pki import SERVICE_DNS, client_context
from tests.support.reviews import create, valid_spec
from tests.support.servers import Webhook
from tests.webhook.server.test_admission import admitted
from webhook.observability.logs import JsonFormatter

START = f"POST /validate HTTP/1.1\r\nHost: {SERVICE_DNS}\r\n".encode()
END = b"Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"

HEADS = [
    pytest.param(
        START + b"X-Big: " + b"a" * 100 * 1024 + b"\r\n" + END,
        431,
        "header_too_large",
        "a request or header line exceeds 8190 bytes",
        id="a 100 KiB header line is 431",
    ),
    pytest.param(
        b"POST /validate?" + b"q" * 100 * 1024 + b" HTTP/1.1\r\n" + END,
        431,
        "header_too_large",
        "a request or header line exceeds 8190 bytes",
        id="a 100 KiB request line is 431",
    ),
    pytest.param(
        START + b"".join(b"X-H%d: v\r\n" % i for i in range(500)) + END,
        431,
        "too_many_headers",
        "more than 128 header lines",
        id="500 headers are 431",
    ),
    pytest.param(
        b"POST /validate HTTP/1.1\r\nNo colon here\r\n" + END,
        400,
        "bad_http",
        "malformed HTTP request: ",
        id="a header line without a colon is 400",
    ),
]


@pytest.mark.parametrize(("head", "status", "reason", "message"), HEADS)
async def test_a_head_the_parser_refuses_is_a_counted_bad_request(
    webhook: Webhook,
    caplog: pytest.LogCaptureFixture,
    head: bytes,
    status: int,
    reason: str,
    message: str,
) -> None:
    caplog.set_level(logging.DEBUG)
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", webhook.port, ssl=client_context(webhook.ca), server_hostname=SERVICE_DNS
    )
    writer.write(head)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 10)  # answered, then closed
    writer.close()
    status_line, _, body = answer.partition(b"\r\n\r\n")
    assert status_line.split(b" ", 2)[1] == str(status).encode()  # HTTP/1.0: no request parsed
    assert b"application/json" in status_line
    sent = orjson.loads(body)
    assert (sent["kind"], sent["code"]) == ("Status", status)
    assert sent["message"].startswith(message)
    problems = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [(r.name, r.levelname, r.getMessage()) for r in problems] == [
        ("feedbackstore.admission", "WARNING", "bad request")
    ]
    assert problems[0].exc_info is None
    entry = orjson.loads(JsonFormatter().format(problems[0]))
    assert (entry["status"], entry["reason"]) == (status, reason)
    sample = f'feedbackstore_webhook_bad_requests_total{{reason="{reason}"}}'
    assert await webhook.client.metric(sample) == 1.0
    assert (await admitted(webhook, create(valid_spec())))["allowed"] is True
