"""The list pager (client-go's `tools/pager`) and the client-side token bucket, pure.

The pager is driven by a fake page function over a list of names; the token bucket by a
fake clock whose `sleep` moves time on, so every delay is exact.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, cast

import pytest
from kubernetes.client import ApiClient, Configuration
from kubernetes.client.exceptions import ApiException

from webhook.kube.pager import Page, list_all, list_pages
from webhook.kube.ratelimit import DEFAULT_BURST, DEFAULT_QPS, TokenBucket, is_watch, throttle
from webhook.kube.settings import PAGE_SIZE

# -- pager -----------------------------------------------------------------------------


class Collection:
    """A server's list endpoint over `count` objects; tokens may expire after some pages."""

    def __init__(self, count: int, expire_after_pages: int | None = None) -> None:
        self.objects = [{"metadata": {"name": f"o-{i:05d}"}} for i in range(count)]
        self.calls: list[tuple[int | None, str | None]] = []
        self.expire_after_pages = expire_after_pages

    def __call__(self, limit: int | None, token: str | None) -> Page:
        self.calls.append((limit, token))
        expiring = token is not None and self.expire_after_pages is not None
        if expiring and len(self.calls) > (self.expire_after_pages or 0):
            raise ApiException(status=410, reason="Gone")
        start = int(token) if token else 0
        end = len(self.objects) if limit is None else min(start + limit, len(self.objects))
        more = str(end) if end < len(self.objects) else None
        # Pages come from the first request's snapshot; a full list is served later, fresher.
        return Page(self.objects[start:end], "100" if limit is not None else "200", more)


@pytest.mark.parametrize(
    ("count", "page_size", "requests"),
    [
        pytest.param(0, 500, 1, id="an empty collection is one request"),
        pytest.param(500, 500, 1, id="exactly one page is one request (no continue token)"),
        pytest.param(501, 500, 2, id="one more than a page is two requests"),
        pytest.param(10_000, 500, 20, id="ten thousand objects are twenty pages of 500"),
        pytest.param(10_000, None, 1, id="no page size lists everything at once"),
    ],
)
def test_the_pager_asks_page_by_page_and_returns_everything(
    count: int, page_size: int | None, requests: int
) -> None:
    collection = Collection(count)
    listed = list_all(collection, page_size)
    assert listed.items == collection.objects
    assert listed.requests == len(collection.calls) == requests
    assert not listed.full_list_fallback
    assert collection.calls[0] == (page_size, None), "the first request carries no token"
    for (_, previous), (limit, token) in zip(collection.calls, collection.calls[1:], strict=False):
        assert limit == page_size
        assert token is not None
        assert token != previous


def test_the_default_page_size_is_client_gos() -> None:
    assert PAGE_SIZE == 500
    collection = Collection(1200)
    list_all(collection)
    assert [limit for limit, _ in collection.calls] == [500, 500, 500]


def test_an_expired_continue_token_falls_back_to_one_full_list_as_client_go_does() -> None:
    collection = Collection(1200, expire_after_pages=1)
    listed = list_all(collection, 500)
    assert collection.calls == [(500, None), (500, "500"), (None, None)]
    assert listed.full_list_fallback
    assert listed.items == collection.objects, "the full list replaces the pages already read"
    assert listed.resource_version == "200", "and its resourceVersion is the one to watch from"
    assert listed.requests == 3


class Item(dict[str, Any]):
    """A decoded object a test can hold a weak reference to."""


def test_each_page_is_let_go_before_the_next_is_fetched() -> None:
    """A consumer keeping nothing of a page holds one page at a time, never the list."""
    collection = Collection(1200)
    collection.objects = [Item(obj) for obj in collection.objects]
    handed: list[weakref.ref[Item]] = []
    alive_at_fetch: list[int] = []
    fetch_page = collection.__call__

    def fetch(limit: int | None, token: str | None) -> Page:
        alive_at_fetch.append(sum(ref() is not None for ref in handed))
        page = fetch_page(limit, token)
        # Copies, as a decoded answer is: only the page holds them.
        return Page([Item(item) for item in page.items], page.resource_version, page.continue_token)

    names: list[str] = []

    def consume(page: Page, restarted: bool) -> None:
        assert not restarted
        handed.extend(weakref.ref(cast("Item", item)) for item in page.items)
        names.extend(item["metadata"]["name"] for item in page.items)

    listing = list_pages(fetch, consume, 500)
    assert alive_at_fetch == [0, 0, 0]
    assert names == [obj["metadata"]["name"] for obj in collection.objects]
    assert (listing.requests, listing.resource_version) == (3, "100")


def test_after_an_expired_token_the_full_list_comes_as_one_restarted_page() -> None:
    collection = Collection(1200, expire_after_pages=1)
    handed: list[tuple[int, bool]] = []
    listing = list_pages(
        collection, lambda page, restarted: handed.append((len(page.items), restarted)), 500
    )
    assert handed == [(500, False), (1200, True)], "the first page is void: its objects may be gone"
    assert (listing.requests, listing.full_list_fallback, listing.resource_version) == (
        3,
        True,
        "200",
    )


@pytest.mark.parametrize(
    ("status", "token_seen"),
    [
        pytest.param(410, False, id="410 on the first page is the caller's (relist)"),
        pytest.param(500, True, id="a 500 on a later page is not an expired token"),
        pytest.param(429, True, id="a 429 on a later page is not an expired token"),
    ],
)
def test_other_failures_are_raised_for_the_informer_to_handle(
    status: int, token_seen: bool
) -> None:
    calls: list[str | None] = []

    def fetch(limit: int | None, token: str | None) -> Page:
        calls.append(token)
        if token_seen and token is None:
            return Page([{"metadata": {"name": "a"}}], "1", "next")
        raise ApiException(status=status)

    with pytest.raises(ApiException) as raised:
        list_all(fetch, 1)
    assert raised.value.status == status
    assert len(calls) == (2 if token_seen else 1), "no fallback list"


# -- token bucket ----------------------------------------------------------------------


class FakeTime:
    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def bucket(qps: float, burst: int, time: FakeTime) -> TokenBucket:
    return TokenBucket(qps, burst, clock=time.clock, sleep=time.sleep)


def test_a_full_bucket_lets_burst_requests_through_then_spaces_them_at_qps() -> None:
    time = FakeTime()
    limiter = bucket(5.0, 3, time)
    waits = [limiter.wait() for _ in range(7)]
    assert waits[:3] == [0.0, 0.0, 0.0]
    assert waits[3:] == pytest.approx([0.2, 0.2, 0.2, 0.2])
    assert time.now - 1000.0 == pytest.approx(0.8), "(7 - burst) / qps seconds in all"


@pytest.mark.parametrize(
    ("qps", "burst", "requests"),
    [
        pytest.param(5.0, 10, 100, id="client-go's default 5/10"),
        pytest.param(DEFAULT_QPS, DEFAULT_BURST, 1000, id="the writer's default 50/100"),
        pytest.param(0.5, 1, 10, id="half a request per second, no burst"),
    ],
)
def test_no_window_ever_holds_more_than_burst_plus_qps_times_its_length(
    qps: float, burst: int, requests: int
) -> None:
    time = FakeTime()
    limiter = bucket(qps, burst, time)
    sent = []
    for _ in range(requests):
        limiter.wait()
        sent.append(time.now)
    for i, start in enumerate(sent):
        for j in range(i, len(sent)):
            assert j - i + 1 <= burst + qps * (sent[j] - start) + 1e-6
    assert sent[-1] - sent[0] == pytest.approx((requests - burst) / qps)


def test_idle_time_refills_the_bucket_but_never_beyond_burst() -> None:
    time = FakeTime()
    limiter = bucket(2.0, 4, time)
    for _ in range(4):
        limiter.wait()
    time.now += 3600.0
    assert [limiter.reserve() for _ in range(5)] == pytest.approx([0, 0, 0, 0, 0.5])


def test_concurrent_callers_reserve_in_turn_like_golangs_rate_limiter() -> None:
    time = FakeTime()
    limiter = TokenBucket(10.0, 1, clock=time.clock, sleep=lambda _: None)
    delays: list[float] = []
    lock = threading.Lock()

    def take() -> None:
        delay = limiter.reserve()
        with lock:
            delays.append(delay)

    threads = [threading.Thread(target=take) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(delays) == pytest.approx([i / 10.0 for i in range(8)])


@pytest.mark.parametrize(("qps", "burst"), [(0.0, 1), (-1.0, 1), (1.0, 0)])
def test_a_bucket_without_rate_or_room_is_refused(qps: float, burst: int) -> None:
    with pytest.raises(ValueError, match="token bucket"):
        TokenBucket(qps, burst)


@pytest.mark.parametrize(
    ("url", "watch"),
    [
        ("https://h/apis/g/v1/fs?watch=true&resourceVersion=5", True),
        ("https://h/apis/g/v1/fs?resourceVersion=5&watch=True", True),
        ("https://h/apis/g/v1/fs?watch=1", True),
        ("https://h/apis/g/v1/fs?limit=500", False),
        ("https://h/apis/g/v1/fs?watch=false", False),
        ("https://h/apis/g/v1/namespaces/watch/fs", False),
    ],
)
def test_only_watch_requests_are_long_running(url: str, watch: bool) -> None:
    assert is_watch(url) is watch


def test_throttle_waits_before_every_request_but_watches() -> None:
    time = FakeTime()
    api_client = ApiClient(Configuration(host="https://127.0.0.1:1"))
    sent: list[tuple[str, float]] = []

    def fake_call_api(method: str, url: str, *args: Any, **kwargs: Any) -> str:
        sent.append((url, time.now))
        return "response"

    api_client.call_api = fake_call_api  # type: ignore[method-assign]
    throttle(api_client, bucket(1.0, 1, time))
    assert api_client.call_api("GET", "https://h/x?limit=500") == "response"
    api_client.call_api("GET", "https://h/x?watch=true")
    api_client.call_api("PATCH", "https://h/x/status")
    assert [at - 1000.0 for _, at in sent] == [0.0, 0.0, 1.0], "the watch neither waited nor paid"


def test_no_bucket_means_no_limit() -> None:
    api_client = ApiClient(Configuration(host="https://127.0.0.1:1"))
    original = api_client.call_api
    assert throttle(api_client, None).call_api == original
