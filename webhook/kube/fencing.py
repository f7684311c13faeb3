"""Writes fenced by the Lease: every write through a client goes out only while we lead, checked
as it leaves (after any client-side throttling), and gives up within a timeout short enough to
end before another replica can take the Lease (`ElectionSettings.write_timeout`). Reads pass.

A leader stalled mid-reconcile (a GC pause, a frozen node, SIGSTOP) then finds, on waking, that
its renewal is stale and sends nothing, where a check once per reconcile would let its queued
writes land after a successor's. The fence also counts the writes in flight, so a shutdown can
wait for the last one to end before it gives the Lease up.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:  # the CLI reads settings without importing the client
    from kubernetes.client import ApiClient

WRITE_METHODS: Final = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class NotLeadingError(Exception):
    """A write withheld at the fence: leadership had lapsed or been given up."""


class Fence:
    def __init__(self, is_leader: Callable[[], bool], timeout: float) -> None:
        self._is_leader = is_leader
        self.timeout = timeout
        self._idle = threading.Condition()
        self._in_flight = 0

    def install(self, api_client: ApiClient) -> ApiClient:
        """Fence every write through `api_client`; wrap a throttle around it afterwards, so the
        check is made when the write leaves, not before a wait for a token."""
        call_api = api_client.call_api

        def fenced_call_api(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            if method.upper() not in WRITE_METHODS:
                return call_api(method, url, *args, **kwargs)
            with self._idle:
                if not self._is_leader():
                    raise NotLeadingError(f"{method} {url.split('?')[0]}: not leading")
                self._in_flight += 1
            try:
                # The fence's timeout, not the caller's: the write must end while we may lead.
                return call_api(method, url, *args, **{**kwargs, "_request_timeout": self.timeout})
            finally:
                with self._idle:
                    self._in_flight -= 1
                    self._idle.notify_all()

        api_client.call_api = fenced_call_api  # type: ignore[method-assign]
        return api_client

    def in_flight(self) -> int:
        with self._idle:
            return self._in_flight

    def wait_idle(self, deadline: float) -> bool:
        """Until no write is in flight or the monotonic `deadline`; True when none is."""
        with self._idle:
            while self._in_flight:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
            return True
