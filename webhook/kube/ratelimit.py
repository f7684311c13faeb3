"""Client-side rate limit: a token bucket in front of every request but watches, as client-go's.

client-go gives each REST client a token bucket (`flowcontrol.NewTokenBucketRateLimiter(qps,
burst)`, golang.org/x/time/rate underneath) and waits on it before every request and every
retry (`Request.tryThrottle`), except `Request.Watch`: "We specifically don't want to rate
limit watches". This module does the same for the official Python client, by wrapping
`ApiClient.call_api`, through which every generated API method goes.

Defaults, QPS 50 and burst 100: what Kubernetes' own controllers ship with in v1.37
(component-base's `RecommendedDefaultClientConnectionConfiguration`, used by
kube-controller-manager and kube-scheduler); client-go's bare default (5/10) is meant for
one-off clients. The writer only writes when a condition must change, so the limit bites
only on a cold start or a mass edit; kube-apiserver's own API Priority and Fairness
protects it further, with 429 and Retry-After, which the writer honours.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qs, urlsplit

if TYPE_CHECKING:  # the CLI reads the defaults below without importing the client
    from kubernetes.client import ApiClient

log = logging.getLogger("feedbackstore.kube.ratelimit")

DEFAULT_QPS: Final = 50.0
DEFAULT_BURST: Final = 100
# client-go logs a throttled request at info level past this wait (extraLongThrottleLatency).
LONG_THROTTLE_SECONDS: Final = 1.0


class TokenBucket:
    """`burst` tokens, refilled at `qps` per second; each request takes one, waiting if none.

    As golang's `rate.Limiter.Wait`: a request reserves its token at once (the bucket may go
    negative) and sleeps until the token is due, so concurrent callers are served in order
    and a burst of N callers is spread at exactly `qps` after the first `burst`.
    """

    def __init__(
        self,
        qps: float,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError(f"token bucket needs qps > 0 and burst >= 1, got {qps}, {burst}")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._last = clock()

    def reserve(self) -> float:
        """Take a token; return how many seconds to wait before using it."""
        with self._lock:
            self._refill()
            self._tokens -= 1.0
            return max(0.0, -self._tokens / self.qps)

    def try_take(self) -> bool:
        """Take a token only if one is there now (`TryAccept`); never waits."""
        with self._lock:
            self._refill()
            if self._tokens < 1.0:
                return False
            self._tokens -= 1.0
            return True

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now

    def wait(self) -> float:
        """Block until a token is ours; return the seconds waited."""
        delay = self.reserve()
        if delay > 0:
            self._sleep(delay)
        return delay


def is_watch(url: str) -> bool:
    """A watch request (`?watch=true`, any spelling the client sends), long-running, unthrottled."""
    values = parse_qs(urlsplit(url).query).get("watch", ())
    return any(value.lower() in ("true", "1") for value in values)


def throttle(api_client: ApiClient, bucket: TokenBucket | None) -> ApiClient:
    """Make every non-watch request through `api_client` wait on `bucket` first (None: no limit).

    Applied where the generated API methods meet the REST layer (`call_api`), so it covers
    every request the writer makes through this client, retries included, whatever API class
    made it.
    """
    if bucket is None:
        return api_client
    call_api = api_client.call_api

    def throttled_call_api(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        if not is_watch(url):
            waited = bucket.wait()
            if waited > LONG_THROTTLE_SECONDS:
                log.info(
                    "waited for client-side throttling",
                    extra={
                        "fields": {"seconds": round(waited, 3), "method": method, "qps": bucket.qps}
                    },
                )
        return call_api(method, url, *args, **kwargs)

    api_client.call_api = throttled_call_api  # type: ignore[method-assign]
    return api_client
