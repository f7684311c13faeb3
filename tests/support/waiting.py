"""Waiting for something to become true: the one poll loop every test uses, threads or asyncio.

A test waits on what it can observe (a condition, a count, a log line) rather than sleeping for a
guessed time: on a loaded machine a guess is too short, and everywhere else it is too long.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


def eventually(
    check: Callable[[], T], *, timeout: float = 30.0, interval: float = 0.1, what: str = "condition"
) -> T:
    """Poll `check` until it returns a truthy value (returned) or raise with the last answer.

    An AssertionError from `check` counts as "not yet", so a check may assert what it waits for.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            last: Any = check()
        except AssertionError as error:
            last = error
        else:
            if last:
                return last
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what} not met within {timeout} s; last: {last!r}")
        time.sleep(interval)


async def eventually_async(
    check: Callable[[], Awaitable[bool] | bool], what: str = "condition", within: float = 20.0
) -> None:
    """`eventually` on the test's own event loop: `check` may await (an HTTP call) or not (a
    server's state read between two turns of the loop)."""
    try:
        async with asyncio.timeout(within):
            while True:
                done = check()
                if inspect.isawaitable(done):
                    done = await done
                if done:
                    return
                await asyncio.sleep(0.01)
    except TimeoutError:
        raise AssertionError(f"{what} not met within {within} s") from None
