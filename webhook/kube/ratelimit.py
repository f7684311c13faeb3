"""Client-side rate limit: a token bucket before every request and retry but watches, as client-go's
(`Request.tryThrottle`; "We specifically don't want to rate limit watches"), by wrapping `call_api`.
Defaults 50/100, as Kubernetes' own controllers in v1.37 (client-go's bare 5/10 is for one-offs).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qs, urlsplit

from webhook.observability.logs import logger

if TYPE_CHECKING:  # the CLI reads the defaults below without importing the client
    from kubernetes.client import ApiClient

log = logger("kube.ratelimit")

DEFAULT_QPS: Final = 50.0
DEFAULT_BURST: Final = 100
# client-go logs a throttled request at info level past this wait (extraLongThrottleLatency).
LONG_THROTTLE_SECONDS: Final = 1.0


class TokenBucket:
    """`burst` tokens, refilled at `qps` per second; as golang's `rate.Limiter.Wait`, a request
    reserves its token at once (maybe going negative) and sleeps until due: callers keep order.
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
        """Take a token; return the seconds to wait before using it."""
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
        delay = self.reserve()
        if delay > 0:
            self._sleep(delay)
        return delay


def is_watch(url: str) -> bool:
    """`?watch=true`, in any spelling the client sends."""
    values = parse_qs(urlsplit(url).query).get("watch", ())
    return any(value.lower() in ("true", "1") for value in values)


def throttle(api_client: ApiClient, bucket: TokenBucket | None) -> ApiClient:
    """Make every non-watch request through `api_client` wait on `bucket` first (None: no limit).

    At `call_api`, where every generated API method meets the REST layer, retries included.
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
