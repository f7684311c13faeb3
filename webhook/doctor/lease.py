"""Is a status writer leading: its Lease held, and renewed within the lease duration?

Times are compared with the doctor's clock; a leader renews every couple of
seconds, so a Lease older than its own duration means nobody is writing
`status` (the same test a standby uses before it takes over).
"""

from __future__ import annotations

import datetime as dt
from typing import Final

from webhook.doctor.result import CheckResult, fail, ok, refused
from webhook.doctor.snapshot import Fetched, Unreadable
from webhook.kube.leader import read_record
from webhook.kube.timestamps import parse_time

NAME: Final = "status-writer-lease"
DEFAULT_DURATION: Final = 15


def check_lease(lease: Fetched, lease_ref: str, now: dt.datetime) -> CheckResult:
    namespace = lease_ref.partition("/")[0]
    look = (
        f"kubectl -n {namespace} get pods -l app.kubernetes.io/component=status-writer; "
        f"kubectl -n {namespace} logs deploy/feedbackstore-status-writer"
    )
    if isinstance(lease, Unreadable):
        return refused(NAME, f"read Lease {lease_ref}", lease, "get on leases")
    if lease is None:
        return fail(NAME, f"Lease {lease_ref} not found: no status writer has ever led", look)
    record = read_record(lease)
    if not record.holder:
        return fail(NAME, f"Lease {lease_ref} is released: no status writer leads", look)
    renewed = parse_time(record.renew_time)
    if renewed is None:
        return fail(NAME, f"Lease {lease_ref} held by {record.holder} was never renewed", look)
    duration = record.duration or DEFAULT_DURATION
    age = (now - renewed).total_seconds()
    if age > duration:
        return fail(
            NAME,
            f"Lease {lease_ref} held by {record.holder}, last renewed {_ago(age)} "
            f"(it lasts {duration} s): the leader stopped renewing",
            look,
        )
    return ok(NAME, f"held by {record.holder}, renewed {_ago(age)} (lasts {duration} s)")


def _ago(seconds: float) -> str:
    if seconds < 0:
        return f"{-seconds:.0f} s in the future (clock skew)"
    if seconds < 120:
        return f"{seconds:.0f} s ago"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min ago"
    return f"{seconds / 3600:.0f} h ago"
