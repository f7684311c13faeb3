"""`feedbackstore-webhook serve`: the admission webhook over HTTPS. aiohttp, cryptography and
prometheus-client are imported by `run`, so other subcommands start fast."""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
from typing import Any

from webhook.admission.envelope import CREATE
from webhook.cli import EXIT_UNUSABLE, flags
from webhook.rules import api
from webhook.server.config import ServerConfig

DEV_CERTS_DIR = pathlib.Path("certs") / "dev"
DEV_HOST = "127.0.0.1"

# A CREATE the dev server refuses (one score name twice), to try it with curl.
_EXAMPLE_STORE = {"name": "support-feedback", "namespace": "agents"}
_EXAMPLE_REVIEW = {
    "apiVersion": "admission.k8s.io/v1",
    "kind": "AdmissionReview",
    "request": {
        "uid": "0f3c6a9e-1d2b-4c5d-8e7f-a1b2c3d4e5f6",
        "kind": {"group": api.GROUP, "version": api.VERSION, "kind": api.KIND},
        "resource": {"group": api.GROUP, "version": api.VERSION, "resource": api.PLURAL},
        **_EXAMPLE_STORE,
        "operation": CREATE,
        "userInfo": {"username": "dev"},
        "object": {
            "apiVersion": api.API_VERSION,
            "kind": api.KIND,
            "metadata": _EXAMPLE_STORE,
            "spec": {"human": {"scores": [{"name": "thumbs"}, {"name": "thumbs"}]}},
        },
    },
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run the validating admission webhook (HTTPS)",
        description=(
            "Serve POST /validate (AdmissionReview admission.k8s.io/v1 and v1beta1), "
            "GET /healthz, /readyz and /metrics over TLS 1.2+. The certificate and key "
            "are re-read when their files change. SIGTERM: not ready, finish in-flight "
            "requests, exit 0."
        ),
    )
    tls = parser.add_argument_group("TLS")
    for flag, help_text in (
        ("--tls-cert-file", "PEM serving certificate (leaf first, then any intermediates)"),
        ("--tls-private-key-file", "PEM private key of the serving certificate (unencrypted)"),
        (
            "--client-ca-file",
            "PEM CA bundle: require, on every connection to --port, a client certificate it "
            "signed (give kube-apiserver that certificate in its AdmissionConfiguration); "
            "re-read when it changes; needs --probe-port",
        ),
    ):
        tls.add_argument(flag, type=pathlib.Path, metavar="PATH", help=help_text)
    tls.add_argument(
        "--dev",
        action="store_true",
        help=f"make (or reuse) a throwaway CA and serving certificate in "
        f"--dev-certs-dir, listen on {DEV_HOST} unless --host is given, "
        f"and print a curl command to try it",
    )
    tls.add_argument(
        "--dev-certs-dir",
        type=pathlib.Path,
        default=DEV_CERTS_DIR,
        metavar="DIR",
        help="where --dev keeps its certificates (default: %(default)s)",
    )
    net = parser.add_argument_group("listening")
    flags.setting(net, ServerConfig, "--host", "address to listen on (default: all interfaces)")
    flags.setting(
        net, ServerConfig, "--port", "TLS port (default: %(default)s; 0 picks a free one)", type=int
    )
    flags.setting(
        net,
        ServerConfig,
        "--probe-port",
        "a second TLS port serving only /healthz, /readyz and /metrics, never asking for a "
        "client certificate (for the kubelet's probes; 0 picks a free one)",
        type=flags.port,
        metavar="N",
    )
    limits = parser.add_argument_group("limits")

    def limit(flag: str, help_text: str, kind: Any = flags.positive_float) -> None:
        metavar = "N" if kind is flags.positive_int else "SECONDS"
        flags.setting(limits, ServerConfig, flag, help_text, type=kind, metavar=metavar)

    mib = flags.default_of(ServerConfig, "max_body_bytes") / 2**20
    limit("--max-body-bytes", f"larger request bodies get 413 (default: {mib:g} MiB)",
          flags.positive_int)  # fmt: skip
    limit(
        "--max-connections",
        "connections open at once; at the cap a new one takes the place of the one idle "
        "longest, and is refused only when every one is answering a request (default: "
        "%(default)s)",
        flags.positive_int,
    )
    limit("--idle-timeout", "close a connection with no complete request for this long")
    limit(
        "--shutdown-delay",
        "after SIGTERM, keep serving while not ready for this long before closing the port",
        flags.non_negative_float,
    )
    limit("--shutdown-timeout", "then wait at most this long for requests in flight")
    flags.add_log_level(parser, ServerConfig, "JSON log lines on stderr from this level")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from webhook.observability.logs import configure

    try:
        cert_file, key_file, host = _serving_files(args)
        _check_ports(args)
    except ValueError as error:
        print(f"feedbackstore-webhook serve: {error}", file=sys.stderr)
        return EXIT_UNUSABLE
    config = flags.settings_from(
        ServerConfig, args, cert_file=cert_file, key_file=key_file, host=host
    )
    configure(config.log_level)

    def on_serving(port: int) -> None:
        if args.dev:
            print(dev_hint(args.dev_certs_dir, host or DEV_HOST, port), flush=True)

    from webhook.server.run import run_server

    return run_server(config, on_serving)


def _serving_files(args: argparse.Namespace) -> tuple[pathlib.Path, pathlib.Path, str | None]:
    if args.dev:
        if args.tls_cert_file or args.tls_private_key_file:
            raise ValueError("--dev makes its own certificate; drop --tls-cert-file/--tls-...")
        from webhook.certs.dev import ensure_dev_certificates

        files = ensure_dev_certificates(args.dev_certs_dir)
        return files.cert, files.key, args.host or DEV_HOST
    if not args.tls_cert_file or not args.tls_private_key_file:
        raise ValueError(
            "--tls-cert-file and --tls-private-key-file are required (or --dev for local use)"
        )
    return args.tls_cert_file, args.tls_private_key_file, args.host


def _check_ports(args: argparse.Namespace) -> None:
    if args.client_ca_file and args.probe_port is None:
        raise ValueError(
            "--client-ca-file needs --probe-port: the kubelet's probes carry no client "
            "certificate, so /healthz and /readyz must be served on a port that asks for none"
        )
    if args.probe_port is not None and args.probe_port == args.port != 0:
        raise ValueError(f"--probe-port must differ from --port (both {args.port})")


def dev_hint(certs_dir: pathlib.Path, host: str, port: int) -> str:
    """How to call the dev server: a curl command posting a review it refuses."""
    review = json.dumps(_EXAMPLE_REVIEW, separators=(",", ":"))
    target = "localhost" if host in (DEV_HOST, "localhost", "0.0.0.0") else host  # noqa: S104
    return (
        f"Dev certificates: {certs_dir}/ (CA: {certs_dir / 'ca.crt'})\n"
        f"Try it (a FeedbackStore declaring the score name 'thumbs' twice):\n"
        f"  curl --cacert {certs_dir / 'ca.crt'} -H 'Content-Type: application/json' \\\n"
        f"    https://{target}:{port}/validate --data '{review}'\n"
    )
