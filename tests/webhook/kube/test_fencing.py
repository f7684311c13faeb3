"""Writes fenced by the Lease: checked to lead as each leaves, after any throttling, with the
fence's timeout, and counted while in flight so a shutdown can wait for the last one."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from kubernetes.client import ApiClient, Configuration

from webhook.kube.fencing import Fence, NotLeadingError
from webhook.kube.ratelimit import TokenBucket, throttle
from webhook.kube.settings import ElectionSettings


class Sent:
    """An ApiClient whose requests are recorded, not sent."""

    def __init__(self) -> None:
        self.client = ApiClient(Configuration(host="http://127.0.0.1:1"))
        self.calls: list[tuple[str, Any]] = []
        self.client.call_api = self.call_api  # type: ignore[method-assign]

    def call_api(self, method: str, url: str, *args: Any, **kwargs: Any) -> str:
        self.calls.append((method, kwargs.get("_request_timeout")))
        return "answer"


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_a_write_leaves_only_while_leading_and_with_the_fences_timeout(method: str) -> None:
    leading = [True]
    sent = Sent()
    Fence(lambda: leading[0], 1.5).install(sent.client)
    assert sent.client.call_api(method, "/x", _request_timeout=(10.0, 30.0)) == "answer"
    leading[0] = False
    with pytest.raises(NotLeadingError):
        sent.client.call_api(method, "/x")
    assert sent.calls == [(method, 1.5)]


def test_reads_pass_whoever_leads() -> None:
    sent = Sent()
    Fence(lambda: False, 1.5).install(sent.client)
    sent.client.call_api("GET", "/x?watch=true", _request_timeout=(10.0, 30.0))
    assert sent.calls == [("GET", (10.0, 30.0))]


def test_leadership_is_checked_after_the_wait_for_a_token_not_before() -> None:
    """A write queued behind the client's rate limit while the Lease lapses stays home."""
    leading = [True]

    def sleep(_seconds: float) -> None:
        leading[0] = False  # the Lease lapsed while this write waited for its token

    sent = Sent()
    bucket = TokenBucket(1.0, 1, sleep=sleep)
    bucket.reserve()  # the next request waits
    throttle(Fence(lambda: leading[0], 1.5).install(sent.client), bucket)
    with pytest.raises(NotLeadingError):
        sent.client.call_api("PATCH", "/x")
    assert sent.calls == []


def test_a_shutdown_waits_for_the_write_in_flight_and_no_longer_than_its_deadline() -> None:
    release = threading.Event()
    sent = Sent()
    sent.client.call_api = lambda *a, **k: release.wait(5)  # type: ignore[method-assign]
    fence = Fence(lambda: True, 1.5)
    fence.install(sent.client)
    writer = threading.Thread(target=lambda: sent.client.call_api("PATCH", "/x"))
    writer.start()
    deadline = time.monotonic() + 5
    while fence.in_flight() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert fence.in_flight() == 1
    assert fence.wait_idle(time.monotonic() + 0.05) is False
    release.set()
    assert fence.wait_idle(time.monotonic() + 5) is True
    writer.join(5)


@pytest.mark.parametrize(
    ("lease", "renew", "timeout"),
    [(15, 10.0, 2.5), (5, 2.0, 1.5), (60, 30.0, 15.0)],
    ids=["the defaults give 2.5 s", "a 5 s lease renewed within 2 s gives 1.5 s", "60/30: 15 s"],
)
def test_a_write_times_out_within_half_the_gap_between_lease_and_renew_deadline(
    lease: int, renew: float, timeout: float
) -> None:
    settings = ElectionSettings("me", lease_duration=lease, renew_deadline=renew)
    assert settings.write_timeout == timeout
    assert settings.renew_deadline + settings.write_timeout < settings.lease_duration
