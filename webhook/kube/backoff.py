"""Capped exponential backoff with jitter, for reconnecting and retrying.

Jitter keeps a fleet of writers (or one writer's many retried objects) from
hammering a recovering API server in lockstep; the cap keeps a long outage from
turning into a long wait after the server is back.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


def backoff_delay(attempt: int, initial: float, cap: float, draw: float) -> float:
    """Delay before retry number `attempt` (0-based): "equal jitter" within [d/2, d].

    `d` doubles per attempt from `initial` up to `cap`; `draw` is a uniform
    random number in [0, 1), passed in so the function stays pure.
    """
    exponent = min(max(attempt, 0), 62)
    ceiling = min(cap, initial * (2.0**exponent))
    return ceiling * (0.5 + 0.5 * draw)


@dataclass(slots=True)
class Backoff:
    """A backoff that remembers how many failures in a row it has seen.

    No defaults of its own: each owner's settings state its figures once.
    """

    initial: float
    cap: float
    rng: random.Random = field(default_factory=random.Random)
    attempt: int = 0

    def next_delay(self) -> float:
        delay = backoff_delay(self.attempt, self.initial, self.cap, self.rng.random())
        self.attempt += 1
        return delay

    def reset(self) -> None:
        self.attempt = 0
