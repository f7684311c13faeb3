"""Settings of the Kubernetes plumbing (election, informer) and their defaults, stdlib only.

Light to import, so a command can read these defaults for its flags and `--help`
without loading the Kubernetes client.
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


@dataclass(slots=True)
class ElectionSettings:
    identity: str
    lease_duration: int = 15
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def check(self) -> None:
        """Raise ValueError unless 0 < renew_deadline < lease_duration.

        A leader must stop writing before its Lease can expire and another replica
        take over, or two would write at once.
        """
        if not 0 < self.renew_deadline < self.lease_duration:
            raise ValueError("renew deadline must be positive and shorter than the lease")


@dataclass(slots=True)
class InformerSettings:
    # Server-side watch timeout: a random value in [t, 2t), as client-go's reflector
    # does, so many watchers do not all reconnect at the same moment.
    watch_timeout_seconds: int = 300
    backoff_initial: float = 0.8
    backoff_cap: float = 30.0
    rng: random.Random = field(default_factory=random.Random)
