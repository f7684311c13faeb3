"""`feedbackstore-webhook certs`: a CA, serving certificate and kustomize overlay for clusters
without cert-manager. A rerun keeps what still fits and renews the serving certificate from the
same CA, so the caBundle in the cluster stays valid through a rotation. With `--ca-bundle`,
`--cert` and `--key` it installs a certificate of your own through the same overlay, checked
first as kube-apiserver will check it; a bundle of two CAs is how a CA rotation trusts both
(docs/install.md, "Rotate the CA")."""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
from collections.abc import Callable
from typing import Any, Final

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
        "--force",
        action="store_true",
        help="issue a new CA and certificate even if they fit; a new CA goes in as "
        'docs/install.md "Rotate the CA" says, never by applying it at once',
    )
    own = parser.add_argument_group(
        "a certificate of your own",
        "give all three to install your files instead of issuing any: each entry's caBundle "
        "and the Secret's ca.crt get --ca-bundle, the Secret tls.crt and tls.key; they are "
        "checked first (the chain verifies to the bundle, the certificate names NAME.NS.svc and "
        "every --host, the key is its key, nothing expired) and refused with exit 2",
    )
    own.add_argument(
        "--ca-bundle",
        type=pathlib.Path,
        metavar="FILE",
        help="PEM: the CA(s) kube-apiserver trusts; two during a CA rotation",
    )
    own.add_argument(
        "--cert",
        type=pathlib.Path,
        metavar="FILE",
        help="PEM: the serving certificate, then any intermediate CA",
    )
    own.add_argument(
        "--key", type=pathlib.Path, metavar="FILE", help="PEM: its private key, unencrypted"
    )
    parser.add_argument(
        "--base",
        default="manifests",
        help="kustomize base the overlay installs: a directory or a remote URL "
        "(default %(default)s)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from webhook.certs.files import read_optional
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
    own = (args.ca_bundle, args.cert, args.key)
    if any(own):
        return _install_own(args, *own)
    key_type = KeyType(args.key_type)
    hosts = tuple(dict.fromkeys((*service_hosts(args.service, args.namespace), *args.host)))
    try:
        previous_ca = read_optional(out_dir / "ca.crt")
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
        if previous_ca is not None and previous_ca != files.ca_cert.read_bytes():
            print(
                f"warning: a new CA replaced the one in {files.ca_cert}: applied at once, "
                "FeedbackStore writes fail until every webhook pod serves the new pair. Roll it "
                'out as docs/install.md "Rotate the CA" says (the old CA and pair are still in '
                f"the Secret {args.namespace}/{install.SECRET})",
                file=sys.stderr,
            )
        print(f"next: kubectl apply -k {out_dir}")
    except OSError as error:
        print(f"certs: cannot write to {out_dir}: {error.strerror}", file=sys.stderr)
        return EXIT_UNUSABLE
    return EXIT_OK


def _install_own(
    args: argparse.Namespace,
    ca_bundle: pathlib.Path | None,
    cert: pathlib.Path | None,
    key: pathlib.Path | None,
) -> int:
    """Your files, checked, then written where the overlay reads them: no CA key is made."""
    import datetime as dt

    from webhook.certs.files import PRIVATE_MODE, PUBLIC_MODE, ServingFiles, write_atomically
    from webhook.certs.overlay import write_overlay
    from webhook.certs.own import OwnFiles, problems

    given = {"--ca-bundle": ca_bundle, "--cert": cert, "--key": key}
    missing = [flag for flag, path in given.items() if path is None]
    issuing = [flag for flag, used in _ISSUING.items() if used(args)]
    if missing or issuing:
        why = f"also give {', '.join(missing)}" if missing else f"drop {', '.join(issuing)}"
        print(
            "certs: --ca-bundle, --cert and --key go together and replace issuing "
            f"(--force, --key-type, --days): {why}",
            file=sys.stderr,
        )
        return EXIT_UNUSABLE
    read: dict[str, bytes] = {}
    for flag, path in given.items():
        assert path is not None
        try:
            read[flag] = path.read_bytes()
        except OSError as error:
            print(f"certs: {flag} {path}: {error.strerror}", file=sys.stderr)
            return EXIT_UNUSABLE
    own = OwnFiles(read["--ca-bundle"], read["--cert"], read["--key"])
    dialled = f"{args.service}.{args.namespace}.svc"
    found = problems(own, (dialled, *args.host), dt.datetime.now(dt.UTC))
    if found:
        print("certs: not installed, kube-apiserver would refuse it:", file=sys.stderr)
        for problem in found:
            print(f"  {problem}", file=sys.stderr)
        return EXIT_UNUSABLE
    out_dir: pathlib.Path = args.out_dir
    files = ServingFiles.in_dir(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_atomically(files.key, own.key, PRIVATE_MODE)
        write_atomically(files.cert, own.cert, PUBLIC_MODE)
        write_atomically(files.ca_cert, own.ca_bundle, PUBLIC_MODE)
        write_overlay(out_dir, files, args.namespace, _base_reference(args.base, out_dir))
    except OSError as error:
        print(f"certs: cannot write to {out_dir}: {error.strerror}", file=sys.stderr)
        return EXIT_UNUSABLE
    print(f"checked: {cert} for {', '.join((dialled, *args.host))}, verified by {ca_bundle}")
    print(f"next: kubectl apply -k {out_dir}")
    return EXIT_OK


# The flags that only issuing reads, and whether each was given.
_ISSUING: Final[dict[str, Callable[[argparse.Namespace], bool]]] = {
    "--force": lambda args: bool(args.force),
    "--key-type": lambda args: args.key_type != DEFAULT_KEY_TYPE.value,
    "--days": lambda args: args.days != SERVING_DAYS,
}


def _base_reference(base: str, out_dir: pathlib.Path) -> str:
    """A local base relative to the overlay directory; a remote URL as given."""
    if "://" in base or base.startswith(("github.com/", "git@")):
        return base
    path = pathlib.Path(base)
    if not (path / "kustomization.yaml").is_file():
        print(f"warning: {base} has no kustomization.yaml; fix --base", file=sys.stderr)
    return os.path.relpath(path.resolve(), out_dir.resolve())
