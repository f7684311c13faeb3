"""One active writer among replicas through a Lease, by client-go's rules (resourceVersion-guarded
updates, expiry measured on our own clock, a renew deadline under the lease, release on shutdown).
Not the client's `leaderelection`: it cannot release, and writes times with `isoformat()`.
"""

from __future__ import annotations

import http
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from prometheus_client import Counter, Gauge

from webhook.kube.client import LeaseApi, error_text, status_code
from webhook.kube.objects import metadata_of
from webhook.kube.settings import ElectionSettings
from webhook.kube.timestamps import micro_time, parse_time, utc_now
from webhook.observability.logs import logger

log = logger("kube.leader")


class ElectionMetrics(Protocol):
    """The owner names them (prometheus-client objects)."""

    leader: Gauge
    lease_transitions: Counter


@dataclass(frozen=True, slots=True)
class LeaseRecord:
    holder: str
    duration: int | None
    renew_time: str | None
    transitions: int
    resource_version: str
    spec: dict[str, Any]


def read_record(lease: dict[str, Any]) -> LeaseRecord:
    """Tolerant of missing or odd values."""
    found = lease.get("spec")
    spec: dict[str, Any] = found if isinstance(found, dict) else {}
    holder = spec.get("holderIdentity")
    duration = spec.get("leaseDurationSeconds")
    transitions = spec.get("leaseTransitions")
    renew = spec.get("renewTime")
    return LeaseRecord(
        holder=holder if isinstance(holder, str) else "",
        duration=duration if type(duration) is int and duration > 0 else None,
        renew_time=renew if isinstance(renew, str) else None,
        transitions=transitions if type(transitions) is int and transitions >= 0 else 0,
        resource_version=str(metadata_of(lease).get("resourceVersion") or ""),
        spec=spec,
    )


def lapses_at(record: LeaseRecord, default_duration: int) -> datetime | None:
    """When a held Lease lapses unless renewed: `renewTime` + `leaseDurationSeconds`, by the
    holder's clock. None when it is released (no holder) or was never renewed: nobody leads.

    For a one-off reader: a candidate measures expiry on its own clock since it last saw the
    record change (`held_by_other`), which needs watching it for a whole duration.
    """
    renewed = parse_time(record.renew_time)
    if not record.holder or renewed is None:
        return None
    return renewed + timedelta(seconds=record.duration or default_duration)


def held_by_other(
    record: LeaseRecord, identity: str, observed_at: float, now: float, default_duration: int
) -> bool:
    """Someone else holds an unexpired lease, by our clock since we saw it change (no skew)."""
    if not record.holder or record.holder == identity:
        return False
    duration = record.duration or default_duration
    return observed_at + duration > now


def claimed_spec(
    record: LeaseRecord | None, identity: str, duration: int, now: datetime
) -> dict[str, Any]:
    """The Lease spec that makes us the holder (renewing keeps acquireTime and the count)."""
    stamp = micro_time(now)
    spec = dict(record.spec) if record is not None else {}
    renewing = record is not None and record.holder == identity
    acquire_time = spec.get("acquireTime") if renewing else None
    transitions = record.transitions if record is not None else 0
    if record is not None and record.holder and not renewing:
        transitions += 1
    spec.update(
        holderIdentity=identity,
        leaseDurationSeconds=duration,
        acquireTime=acquire_time if isinstance(acquire_time, str) else stamp,
        renewTime=stamp,
        leaseTransitions=transitions,
    )
    return spec


def released_spec(record: LeaseRecord, now: datetime) -> dict[str, Any]:
    """What client-go writes on release: no holder, a 1 s duration, times set to now."""
    stamp = micro_time(now)
    spec = dict(record.spec)
    spec.update(
        holderIdentity="",
        leaseDurationSeconds=1,
        acquireTime=stamp,
        renewTime=stamp,
        leaseTransitions=record.transitions,
    )
    return spec


class LeaderElector:
    def __init__(
        self,
        api: LeaseApi,
        settings: ElectionSettings,
        metrics: ElectionMetrics,
        on_started_leading: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        settings.check()
        self._api = api
        self._settings = settings
        self._metrics = metrics
        self._on_started = on_started_leading
        self._clock = clock
        self._stop = threading.Event()
        self._lock = threading.Lock()  # leading or not: the elector's thread and `resign`
        self._observed: LeaseRecord | None = None
        self._observed_at = 0.0
        self._leading = False
        self._renewed_at = 0.0
        self.identity = settings.identity

    def is_leader(self) -> bool:
        """Only while a renewal is recent enough that nobody else can hold the Lease, and not
        once we resigned."""
        return (
            self._leading
            and not self._stop.is_set()
            and self._clock() - self._renewed_at < self._settings.renew_deadline
        )

    def run(self) -> None:
        """Acquire and renew until `resign`; the Lease is kept until `release`."""
        while not self._stop.is_set():
            self.step()
            self._stop.wait(self._settings.retry_period)

    def step(self) -> None:
        try:
            renewed = self._try_acquire_or_renew()
        except Exception as error:  # an unreachable server is a failed renewal
            renewed = None
            log.warning(
                "lease request failed",
                extra={"fields": {"status": status_code(error), "error": error_text(error)}},
            )
        self._settle(renewed)

    def resign(self) -> None:
        """Stop leading now and renew no more; `release` gives the Lease up once what was written
        under it has ended (client-go's ReleaseOnCancel leaves that to its caller too)."""
        with self._lock:
            self._stop.set()
            if self._leading:
                self._step_down("shutting down")

    def release(self) -> None:
        """Give the Lease up if we still hold it (empty holder, 1 s), so a standby takes over."""
        try:
            lease = self._api.get()
            if lease is None:
                return
            record = read_record(lease)
            if record.holder != self.identity:
                return
            self._api.replace(record.resource_version, released_spec(record, utc_now()))
        except Exception as error:  # the lease then simply expires
            log.warning("lease release failed", extra={"fields": {"error": error_text(error)}})
            return
        log.info("lease released", extra={"fields": {"identity": self.identity}})

    def _settle(self, renewed: float | None) -> None:
        """`renewed`: when the write that renewed the Lease was sent (None: not renewed). A lapse
        is a step down even if this renewal succeeded: objects were skipped meanwhile, so leading
        restarts with `on_started_leading`'s resync. A renewal older than the deadline is not
        led on.
        """
        with self._lock:
            started = self._settle_locked(renewed)
        if started:
            self._on_started()

    def _settle_locked(self, renewed: float | None) -> bool:
        now = self._clock()
        deadline = self._settings.renew_deadline
        if self._leading and now - self._renewed_at >= deadline:
            self._step_down("renewal deadline passed")
        if renewed is not None and now - renewed < deadline and not self._stop.is_set():
            self._renewed_at = renewed
            if not self._leading:
                self._leading = True
                self._metrics.leader.set(1)
                self._metrics.lease_transitions.labels("leader").inc()
                log.info("started leading", extra={"fields": {"identity": self.identity}})
                return True
        return False

    def _step_down(self, why: str) -> None:
        self._leading = False
        self._metrics.leader.set(0)
        self._metrics.lease_transitions.labels("standby").inc()
        log.info("stopped leading", extra={"fields": {"identity": self.identity, "why": why}})

    def _try_acquire_or_renew(self) -> float | None:
        """When the write that made us the holder was sent, None when we are not."""
        if self.is_leader() and (renewed := self._renew_optimistically()) is not None:
            return renewed
        lease = self._api.get()
        if lease is None:
            return self._claim(None)
        record = read_record(lease)
        # Any change restarts the expiry clock, as client-go compares raw records.
        if self._observed is None or self._observed.spec != record.spec:
            self._observed, self._observed_at = record, self._clock()
        if held_by_other(
            record, self.identity, self._observed_at, self._clock(), self._settings.lease_duration
        ):
            return None
        return self._claim(record)

    def _renew_optimistically(self) -> float | None:
        """One update of the Lease last written, as client-go's leader; any error: read and decide.

        A GET before each renewal would be a second request per renewal (counted by
        bench/controlplane/writer.py).
        """
        observed = self._observed
        if observed is None or observed.holder != self.identity:
            return None
        try:
            return self._claim(observed)
        except Exception as error:
            log.info(
                "optimistic lease renewal failed; reading the lease",
                extra={"fields": {"status": status_code(error), "error": error_text(error)}},
            )
            return None

    def _claim(self, record: LeaseRecord | None) -> float | None:
        """When the write was sent, None when another candidate won the round (409).

        A renewal counts from there, not from a read before it: the server records it no earlier,
        and another candidate counts the Lease's expiry from when it sees the write. Counted from
        the read, a candidate whose read and write together outlast the renew deadline never led,
        though it held the Lease and renewed it every round.
        """
        spec = claimed_spec(record, self.identity, self._settings.lease_duration, utc_now())
        sent = self._clock()
        try:
            if record is None:
                written = self._api.create(spec)
            else:
                written = self._api.replace(record.resource_version, spec)
        except Exception as error:
            if status_code(error) == http.HTTPStatus.CONFLICT:
                return None  # another candidate won this round
            raise
        self._observed, self._observed_at = read_record(written), self._clock()
        return sent
