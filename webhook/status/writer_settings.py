"""The status writer's settings and defaults, each stated once, stdlib only: `status-writer` reads
them for its flags and `--help` without loading the Kubernetes client. Defaults of the parts it
configures (election, informer) come from those parts' settings.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass, field
from typing import Final

from webhook import install
from webhook.kube.ratelimit import DEFAULT_BURST, DEFAULT_QPS
from webhook.kube.settings import RETRY_CAP, RETRY_INITIAL, ElectionSettings, InformerSettings


def holder_identity(environ: dict[str, str] | None = None) -> str:
    """`<pod name>_<uuid>`: unique per process even when two share a pod name or host."""
    env = os.environ if environ is None else environ
    base = env.get("POD_NAME") or socket.gethostname() or "status-writer"
    return f"{base[:200]}_{uuid.uuid4()}"


_ELECTION: Final = ElectionSettings(identity="")
_INFORMER: Final = InformerSettings()


@dataclass(slots=True)
class WriterSettings:
    # In-use protection: how often to look for the AgentDeployment CRD while it is absent.
    agent_recheck_seconds: float = 30.0
    namespace: str | None = None
    lease_namespace: str = "default"
    lease_name: str = install.LEASE
    identity: str = field(default_factory=holder_identity)
    resync_seconds: float = 300.0
    workers: int = 4
    lease_duration: int = _ELECTION.lease_duration
    renew_deadline: float = _ELECTION.renew_deadline
    retry_period: float = _ELECTION.retry_period
    backoff_initial: float = _INFORMER.backoff_initial
    backoff_cap: float = _INFORMER.backoff_cap
    retry_initial: float = RETRY_INITIAL
    retry_cap: float = RETRY_CAP
    # Client-side rate limit on every request but watches (ratelimit.py); qps 0: none.
    qps: float = DEFAULT_QPS
    burst: int = DEFAULT_BURST
    # /healthz, /readyz and /metrics (port 0: any); probes come from outside the pod.
    metrics_host: str = "0.0.0.0"  # noqa: S104
    metrics_port: int = install.METRICS_PORT
    log_level: str = "info"

    def election(self) -> ElectionSettings:
        return ElectionSettings(
            identity=self.identity,
            lease_duration=self.lease_duration,
            renew_deadline=self.renew_deadline,
            retry_period=self.retry_period,
        )

    def informer(self) -> InformerSettings:
        return InformerSettings(backoff_initial=self.backoff_initial, backoff_cap=self.backoff_cap)
