"""Settings of the Kubernetes plumbing and their defaults, stdlib only: a command reads them for its
flags and `--help` without loading the Kubernetes client.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Final

# Objects per list request: client-go's pager `defaultPageSize`.
PAGE_SIZE: Final = 500
# A work-queue key's retries: from this delay, doubling per failure, up to the cap.
RETRY_INITIAL: Final = 0.05
RETRY_CAP: Final = 30.0
# Seconds a Lease holds once renewed: client-go's leader election default.
LEASE_DURATION: Final = 15


@dataclass(slots=True)
class ElectionSettings:
    identity: str
    lease_duration: int = LEASE_DURATION
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def check(self) -> None:
        """A leader must stop writing before its Lease can expire, or two would write at once."""
        if not 0 < self.renew_deadline < self.lease_duration:
            raise ValueError("renew deadline must be positive and shorter than the lease")

    @property
    def write_timeout(self) -> float:
        """How long a write may take, connect to answer (`fencing.Fence`). It is checked to lead
        as it leaves, at most `renew_deadline` after the renewal the Lease stands on, and a standby
        may take the Lease `lease_duration` after that renewal: a write that gives up within half
        the gap ends before then, the other half left for the server, which may still apply a
        write its client gave up on."""
        return (self.lease_duration - self.renew_deadline) / 2


@dataclass(slots=True)
class InformerSettings:
    # Server-side watch timeout: random in [t, 2t), as client-go's, so watchers reconnect apart.
    watch_timeout_seconds: int = 300
    backoff_initial: float = 0.8
    backoff_cap: float = 30.0
    rng: random.Random = field(default_factory=random.Random)
