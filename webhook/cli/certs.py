"""`feedbackstore-webhook certs`: a CA, serving certificate and kustomize overlay for clusters
without cert-manager. A rerun keeps what still fits and renews the serving certificate from the
same CA, so the caBundle in the cluster stays valid through a rotation."""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
from typing import Any

from webhook import install
from webhook.certs.defaults import CA_DAYS, DEFAULT_KEY_TYPE, SERVING_DAYS, KeyType
from webhook.cli import EXIT_OK, EXIT_UNUSABLE


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "certs",
        help="issue a CA and serving certificate plus a kustomize overlay that installs them",
        description=(
            "Write a CA and a serving certificate for the webhook Service "
            "(NAME, NAME.NS, NAME.NS.svc, NAME.NS.svc.cluster.local) into OUT_DIR, with a "
            "kubernetes.io/tls Secret and a caBundle patch; `kubectl apply -k OUT_DIR` then "
            "installs everything. Existing files are kept while they still fit."
        ),
    )
    parser.add_argument("--namespace", default=install.NAMESPACE, help="the webhook's namespace")
    parser.add_argument("--service", default=install.SERVICE, help="the webhook's Service name")
    parser.add_argument(
        "--host",
        action="append",
        default=[],
        metavar="NAME_OR_IP",
        help=(
            "also valid for this DNS name or IP address (repeatable): for a webhook "
            "registered by `url:` instead of a Service, e.g. --host 127.0.0.1; repeat the "
            "same options on every run, a renewal issues exactly the names asked for"
        ),
    )
    parser.add_argument("--out-dir", type=pathlib.Path, default=pathlib.Path("certs"))
    parser.add_argument(
        "--key-type", choices=[key.value for key in KeyType], default=DEFAULT_KEY_TYPE.value
    )
    parser.add_argument(
        "--days",
        type=int,
        default=SERVING_DAYS,
        help="serving certificate lifetime (default %(default)s)",
    )
    parser.add_argument(
        "--force", action="store_true", help="issue a new CA and certificate even if they fit"
    )
    parser.add_argument(
        "--base",
        default="manifests",
        help="kustomize base the overlay installs: a directory or a remote URL "
        "(default %(default)s)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from webhook.certs.issue import check_host, is_dns_label, service_hosts
    from webhook.certs.overlay import write_overlay
    from webhook.certs.renewal import ensure_certificates

    if not 1 <= args.days <= CA_DAYS:
        print(f"certs: --days must be between 1 and {CA_DAYS}, not {args.days}", file=sys.stderr)
        return EXIT_UNUSABLE
    for option, value in (("--namespace", args.namespace), ("--service", args.service)):
        if not is_dns_label(value):
            print(
                f"certs: {option} must be a Kubernetes name (a DNS label: a-z, 0-9 and '-', "
                f"at most 63 characters), not {value!r}",
                file=sys.stderr,
            )
            return EXIT_UNUSABLE
    for host in args.host:
        try:
            check_host(host)
        except ValueError as error:
            print(f"certs: --host {error}", file=sys.stderr)
            return EXIT_UNUSABLE
    out_dir: pathlib.Path = args.out_dir
    key_type = KeyType(args.key_type)
    hosts = tuple(dict.fromkeys((*service_hosts(args.service, args.namespace), *args.host)))
    try:
        files, outcome = ensure_certificates(
            out_dir, hosts, key_type=key_type, days=args.days, force=args.force
        )
        write_overlay(out_dir, files, args.namespace, _base_reference(args.base, out_dir))
        print(f"{outcome}: {files.cert} for {', '.join(hosts)} ({key_type.value})")
        print(f"CA: {files.ca_cert} (its key {files.ca_key} stays here; keep it out of git)")
        if (args.namespace, args.service) != (install.NAMESPACE, install.SERVICE):
            print(
                "note: the base manifests install into "
                f"{install.NAMESPACE}/{install.SERVICE}; write an overlay that moves them too",
                file=sys.stderr,
            )
        print(f"next: kubectl apply -k {out_dir}")
    except OSError as error:
        print(f"certs: cannot write to {out_dir}: {error.strerror}", file=sys.stderr)
        return EXIT_UNUSABLE
    return EXIT_OK


def _base_reference(base: str, out_dir: pathlib.Path) -> str:
    """A local base relative to the overlay directory; a remote URL as given."""
    if "://" in base or base.startswith(("github.com/", "git@")):
        return base
    path = pathlib.Path(base)
    if not (path / "kustomization.yaml").is_file():
        print(f"warning: {base} has no kustomization.yaml; fix --base", file=sys.stderr)
    return os.path.relpath(path.resolve(), out_dir.resolve())
