"""`feedbackstore-webhook cleanup`: at uninstall, take back what the status writer put on the
FeedbackStores it does not own (webhook/status/cleanup.py plans it), once no writer runs: a
writer still leading would put it all back."""

from __future__ import annotations

import argparse
import http
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from webhook import install
from webhook.cli import EXIT_OK, EXIT_PROBLEMS, EXIT_UNUSABLE, flags, kubeconfig

# A 409 (another write came between our read and ours) is decided again from a fresh list.
PASSES: Final = 5


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "cleanup",
        help="at uninstall: remove the status writer's finalizer and conditions from every "
        "FeedbackStore",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Remove what the status writer put on FeedbackStores, in every namespace: its\n"
            f"finalizer and the conditions its field manager ({install.FIELD_MANAGER})\n"
            "alone owns (Stalled, InUse, and Validated where no other controller writes it).\n"
            "A condition or finalizer another field manager owns part of is left as it is;\n"
            "nothing else of a store, no CRD and no Event is touched. Run it once the status\n"
            "writer is gone: it refuses while a writer holds its Lease. A second run writes\n"
            "nothing.\n\n"
            f"Exit {EXIT_OK}: done (or nothing to do); {EXIT_PROBLEMS}: some stores could not be "
            f"cleaned (named); {EXIT_UNUSABLE}: refused\n"
            "(a status writer holds the Lease, named) or the cluster could not be reached.\n"
            "Needs list and patch on feedbackstores and feedbackstores/status in every\n"
            "namespace, and get on the Lease (docs/install.md, Uninstall)."
        ),
    )
    kubeconfig.add_flags(parser)
    parser.add_argument(
        "--namespace",
        metavar="NS",
        help="only the FeedbackStores of this namespace (default: every namespace, as an "
        "uninstall needs)",
    )

    def setting(flag: str, help_text: str, **options: Any) -> None:
        flags.setting(parser, CleanupSettings, flag, help_text, **options)

    setting("--lease-namespace", "namespace of the status writer's Lease", metavar="NS")
    setting("--lease-name", "the status writer's Lease", metavar="NAME")
    setting(
        "--wait-for-lease",
        "while a writer holds the Lease, wait up to this many seconds for it to be released or "
        "to lapse before refusing",
        metavar="SECONDS",
        type=flags.non_negative_float,
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="list what would change; write nothing"
    )
    parser.set_defaults(func=run)


@dataclass(frozen=True, slots=True)
class CleanupSettings:
    lease_namespace: str = install.NAMESPACE
    lease_name: str = install.LEASE
    wait_for_lease: float = 0.0


def run(args: argparse.Namespace) -> int:
    from webhook.kube.client import error_text

    settings = flags.settings_from(CleanupSettings, args)
    try:
        api_client = kubeconfig.connect(args)
    except kubeconfig.ConfigurationError as error:
        print(f"cleanup: {error}", file=sys.stderr)
        return EXIT_UNUSABLE
    try:
        refusal = _writer_leading(api_client, settings)
        if refusal is not None:
            print(f"cleanup: {refusal}", file=sys.stderr)
            return EXIT_UNUSABLE
        return _clean(api_client, args.namespace or None, dry_run=args.dry_run)
    except _UnreachableError as error:
        print(f"cleanup: {error.what}: {error_text(error.cause)}", file=sys.stderr)
        return EXIT_UNUSABLE
    finally:
        api_client.close()  # type: ignore[no-untyped-call]


@dataclass
class _UnreachableError(Exception):
    what: str
    cause: Exception


def _writer_leading(api_client: Any, settings: CleanupSettings) -> str | None:
    """Why not to start (a writer leads), or None: no Lease, released, or lapsed, at last."""
    from webhook.kube.client import LeaseApi
    from webhook.kube.leader import lapses_at, read_record
    from webhook.kube.settings import LEASE_DURATION
    from webhook.kube.timestamps import utc_now

    leases = LeaseApi(api_client, settings.lease_namespace, settings.lease_name)
    where = f"{settings.lease_namespace}/{settings.lease_name}"
    deadline = time.monotonic() + settings.wait_for_lease
    while True:
        try:
            lease = leases.get()
        except Exception as error:
            raise _UnreachableError(f"cannot read Lease {where}", error) from error
        record = read_record(lease) if lease is not None else None
        until = lapses_at(record, LEASE_DURATION) if record is not None else None
        now = utc_now()
        if record is None or until is None or until <= now:
            return None
        if time.monotonic() >= deadline:
            return _refusal(where, record.holder, until, now)
        time.sleep(min(1.0, max(deadline - time.monotonic(), 0.0)))


def _refusal(where: str, holder: str, until: datetime, now: datetime) -> str:
    left = (until - now).total_seconds()
    return (
        f"a status writer is running: Lease {where} is held by {holder} for {left:.0f} s more "
        "unless renewed. Stop it first (docs/install.md, Uninstall), or pass "
        "--wait-for-lease SECONDS; nothing written"
    )


def _clean(api_client: Any, namespace: str | None, *, dry_run: bool) -> int:
    from webhook.kube.client import error_text, status_code
    from webhook.status.cleanup import Tally, describe, plan_cleanup
    from webhook.status.kubeapi import FeedbackStoreApi

    stores = FeedbackStoreApi(api_client, namespace)
    tally = Tally()
    failed: list[str] = []
    pending: set[tuple[str, str]] | None = None  # None: every store (the first pass)
    for _ in range(PASSES):
        try:
            items = stores.list().items
        except Exception as error:
            raise _UnreachableError("cannot list FeedbackStores", error) from error
        if pending is None:
            tally.stores = len(items)
        plans = [plan_cleanup(obj) for obj in items]
        if pending is None:  # what stays as it is counts too: left to another manager
            for plan in plans:
                if not plan.writes:
                    tally.add(plan)
        plans = [
            p for p in plans if p.writes and (pending is None or (p.namespace, p.name) in pending)
        ]
        pending = set()
        for plan in plans:
            key = (plan.namespace, plan.name)
            if dry_run:
                print(describe(plan, dry_run=True))
                tally.add(plan)
                continue
            try:
                if plan.status.body is not None:
                    stores.apply_status(*key, plan.status.body, force=False)
                if plan.finalizer.body is not None:
                    stores.apply_finalizer(*key, plan.finalizer.body, force=False)
            except Exception as error:
                code = status_code(error)
                if code == http.HTTPStatus.CONFLICT:
                    pending.add(key)
                elif code != http.HTTPStatus.NOT_FOUND:  # gone: nothing left to take back
                    failed.append(f"{plan.namespace}/{plan.name}: not cleaned: {error_text(error)}")
                continue
            print(describe(plan, dry_run=False))
            tally.add(plan)
        if not pending:
            break
    failed += [
        f"{ns}/{name}: not cleaned: still changing after {PASSES} tries"
        for ns, name in sorted(pending or ())
    ]
    for line in failed:
        print(line, file=sys.stderr)
    print(tally.summary(dry_run=dry_run))
    return EXIT_PROBLEMS if failed else EXIT_OK
