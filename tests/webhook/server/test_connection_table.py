"""A full connection table makes room rather than lock anyone out: at `--max-connections` a new
connection takes the slot of the one idle longest (a TLS handshake not done, a keep-alive
connection with no request, a request head not complete), and is refused only when every slot
holds a request being answered. Real TLS, real sockets, on loopback."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable

import orjson
import pytest
import uvloop

from tests.support.admission_apiserver import accepted_answer
from tests.support.pki import SERVICE_DNS, client_context
from tests.support.reviews import create, valid_spec
from tests.support.servers import Webhook, WebhookFactory
from tests.support.waiting import eventually_async
from webhook.server.connections import HANDSHAKE, IDLE, ConnectionTable, Slot

# pytest-asyncio's replacement for this fixture is a hook that parametrizes every test under
# a conftest; here only this module's tests run on both loops.
pytestmark = pytest.mark.filterwarnings('ignore:Overriding the "event_loop_policy" fixture')

CAP = 8
Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]


@pytest.fixture(
    params=[asyncio.DefaultEventLoopPolicy, uvloop.EventLoopPolicy],
    ids=["on asyncio's loop", "on uvloop (what serve runs on)"],
)
def event_loop_policy(request: pytest.FixtureRequest) -> asyncio.AbstractEventLoopPolicy:
    """Each loop shows a connection to its protocols in its own order; both are served."""
    policy: asyncio.AbstractEventLoopPolicy = request.param()
    return policy


def test_a_full_table_gives_the_slot_idle_longest_to_a_newcomer() -> None:
    table = ConnectionTable(3)
    first, second, third, newcomer = (Slot(lambda: None) for _ in range(4))
    for slot in (first, second, third):
        assert table.admit(slot).admitted
    table.busy(first)
    table.idle(first)  # answered a request: idle from now, the youngest
    admission = table.admit(newcomer)
    assert (admission.admitted, admission.evicted) == (True, second)
    assert len(table) == 3


def test_a_table_whose_every_slot_is_answering_refuses_the_newcomer() -> None:
    table = ConnectionTable(2)
    slots = [Slot(lambda: None) for _ in range(2)]
    for slot in slots:
        table.admit(slot)
        table.busy(slot)
    assert table.admit(Slot(lambda: None)).admitted is False
    table.idle(slots[1])
    assert table.admit(Slot(lambda: None)).evicted is slots[1]


def test_a_closed_or_evicted_slot_leaves_no_trace() -> None:
    table = ConnectionTable(1)
    old, new = Slot(lambda: None), Slot(lambda: None)
    table.admit(old)
    assert table.admit(new).evicted is old
    table.remove(old)  # its connection_lost, after the eviction
    table.busy(old)
    table.idle(old)
    assert len(table) == 1
    table.remove(new)
    assert len(table) == 0


def review_request() -> bytes:
    body = orjson.dumps(create(valid_spec()))
    head = (
        "POST /validate HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def answered(stream: Stream) -> int:
    """Send one review on a kept-alive connection and read its answer; the status code."""
    reader, writer = stream
    writer.write(review_request())
    status = int((await asyncio.wait_for(reader.readuntil(b"\r\n"), 20)).split()[1])
    length = 0
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    await reader.readexactly(length)
    return status


async def tls(webhook: Webhook) -> Stream:
    return await asyncio.open_connection(
        "127.0.0.1", webhook.port, ssl=client_context(webhook.ca), server_hostname=SERVICE_DNS
    )


async def tcp_silent(webhook: Webhook) -> Stream:
    return await asyncio.open_connection("127.0.0.1", webhook.port)


async def tls_hello_unfinished(webhook: Webhook) -> Stream:
    stream = await asyncio.open_connection("127.0.0.1", webhook.port)
    stream[1].write(b"\x16\x03\x01")  # the first bytes of a ClientHello, then nothing
    return stream


async def tls_silent(webhook: Webhook) -> Stream:
    return await tls(webhook)


async def keep_alive_after_a_review(webhook: Webhook) -> Stream:
    stream = await tls(webhook)
    assert await answered(stream) == 200
    return stream


async def head_unfinished(webhook: Webhook) -> Stream:
    stream = await tls(webhook)
    stream[1].write(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Ty")
    return stream


async def closed_by_the_server(reader: asyncio.StreamReader, seconds: float = 20.0) -> bool:
    try:
        while await asyncio.wait_for(reader.read(65536), seconds):
            pass
    except (ConnectionError, ssl.SSLError):
        pass
    except TimeoutError:
        return False
    return True


def close_all(streams: list[Stream]) -> None:
    for _, writer in streams:
        writer.close()


def evicted(state: str) -> str:
    return f'feedbackstore_webhook_connections_evicted_total{{state="{state}"}}'


@pytest.mark.parametrize(
    ("hold", "state"),
    [
        pytest.param(tcp_silent, HANDSHAKE, id="TCP connections that never start a handshake"),
        pytest.param(tls_hello_unfinished, HANDSHAKE, id="TLS handshakes left unfinished"),
        pytest.param(tls_silent, IDLE, id="TLS connections that never send a request"),
        pytest.param(keep_alive_after_a_review, IDLE, id="keep-alive connections after a review"),
        pytest.param(head_unfinished, IDLE, id="request heads that stop halfway"),
    ],
)
async def test_a_review_succeeds_while_idle_connections_fill_every_slot(
    start_webhook: WebhookFactory, hold: Callable[[Webhook], Awaitable[Stream]], state: str
) -> None:
    webhook: Webhook = await start_webhook(max_connections=CAP, idle_timeout=60.0)
    table = webhook.server.site.table
    held = [await hold(webhook) for _ in range(CAP)]
    await eventually_async(lambda: len(table) == CAP, "every slot held")
    if state == IDLE:
        await eventually_async(lambda: not table.handshaking(), "every handshake done")
    sent = create(valid_spec())
    assert accepted_answer(sent, *await webhook.client.review(sent))["allowed"] is True
    assert await closed_by_the_server(held[0][0]), "the one idle longest made room"
    assert await webhook.client.metric(evicted(state)) == 1.0
    close_all(held)


async def test_the_connection_idle_longest_goes_not_the_oldest(
    start_webhook: WebhookFactory,
) -> None:
    webhook: Webhook = await start_webhook(max_connections=CAP, idle_timeout=60.0)
    table = webhook.server.site.table
    held = [await tls(webhook) for _ in range(CAP)]
    await eventually_async(lambda: len(table) == CAP and not table.handshaking(), "every slot held")
    assert await answered(held[0]) == 200  # the oldest, busy a moment ago: idle the shortest
    newcomer = await tls(webhook)
    assert await answered(newcomer) == 200
    assert await closed_by_the_server(held[1][0]), "the second opened had been idle longest"
    assert await answered(held[0]) == 200, "the oldest keeps its slot"
    assert not held[2][0].at_eof()
    close_all([*held, newcomer])


async def test_a_newcomer_is_refused_only_when_every_slot_is_answering_a_request(
    start_webhook: WebhookFactory,
) -> None:
    webhook: Webhook = await start_webhook(max_connections=CAP, body_timeout=60.0)
    table = webhook.server.site.table
    held = [await tls(webhook) for _ in range(CAP)]
    for _, writer in held:  # a complete head, then a body that stalls: answering, not idle
        writer.write(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n")
        writer.write(b"Content-Length: 1000\r\n\r\n{")
    await eventually_async(lambda: table.answering() == CAP, "every slot answering a request")
    # Closed without a word (a reset, or an end of stream), never a certificate or a timeout.
    closed = r"\A\Z|0 bytes read|UNEXPECTED_EOF|EOF occurred"
    with pytest.raises((ConnectionError, ssl.SSLError, asyncio.IncompleteReadError), match=closed):
        await answered(await tls(webhook))
    assert all(not reader.at_eof() for reader, _ in held), "no request in hand was dropped"
    close_all(held)
    await eventually_async(lambda: len(table) == 0, "the held ones gone")
    sample = 'feedbackstore_webhook_bad_requests_total{reason="too_many_connections"}'
    assert await webhook.client.metric(sample) == 1.0
