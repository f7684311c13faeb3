"""`feedbackstore-webhook status-writer`: mirror the verdict into every FeedbackStore's status
until SIGTERM or SIGINT, then release the Lease (a standby takes over at once) and exit 0."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

from webhook.cli import EXIT_OK, EXIT_UNUSABLE, flags
from webhook.status.writer_settings import WriterSettings

_SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "status-writer",
        help="write the Validated condition on every FeedbackStore in the cluster",
        description=(
            "Watch FeedbackStores and keep each one's status condition Validated in step with "
            "the same rules the admission webhook applies. Several replicas may run; one holds "
            "a coordination.k8s.io Lease and writes, the others stand by."
        ),
    )
    for flag, metavar, help_text in (
        ("--kubeconfig", "PATH", "kubeconfig file (default: the in-cluster service account)"),
        ("--namespace", "NS", "watch only this namespace (default: all namespaces)"),
        ("--lease-namespace", "NS",
         "namespace of the Lease (default: $POD_NAMESPACE, the service account's, or default)"),
    ):  # fmt: skip
        parser.add_argument(flag, metavar=metavar, help=help_text)

    def setting(flag: str, help_text: str, field: str = "", **options: Any) -> None:
        options.setdefault("metavar", "N")
        flags.setting(parser, WriterSettings, flag, help_text, field, **options)

    setting("--lease-name", "Lease name", metavar="NAME")
    setting(
        "--resync-seconds",
        "re-check every cached object this often, costing no request when up to date",
        type=flags.positive_float,
    )
    setting(
        "--metrics-port",
        "port for /healthz, /readyz and /metrics (default: %(default)s; 0: any free port, logged)",
        type=flags.port,
    )
    setting("--metrics-host", "address for that port", metavar="HOST")
    setting(
        "--lease-duration-seconds",
        "how long a Lease holds without renewal",
        "lease_duration",
        type=flags.positive_int,
    )
    setting(
        "--renew-deadline-seconds",
        "the leader stops writing when it could not renew for this long",
        "renew_deadline",
        type=flags.positive_float,
    )
    setting(
        "--retry-period-seconds",
        "how often to renew (leader) or try to acquire (standby)",
        "retry_period",
        type=flags.positive_float,
    )
    setting("--workers", "concurrent status writes", type=flags.positive_int)
    setting(
        "--qps",
        "client-side limit: requests per second to the API server, watches excepted, as "
        "client-go's (default %(default)s, what kube-controller-manager ships with; 0: no "
        "limit but kube-apiserver's own priority and fairness)",
        type=flags.non_negative_float,
    )
    setting(
        "--burst",
        "requests allowed at once above --qps after a quiet spell (default %(default)s)",
        type=flags.positive_int,
    )
    flags.add_log_level(parser, WriterSettings, "log level (logs are JSON lines on stderr)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from webhook.observability.logs import configure

    settings = flags.settings_from(
        WriterSettings,
        args,
        namespace=args.namespace or None,
        lease_namespace=args.lease_namespace or _own_namespace(),
    )
    # The client logs every request at DEBUG through urllib3; keep that out of ours.
    configure(settings.log_level, quiet=["urllib3"])
    try:
        api_client = _api_client(args.kubeconfig)
    except Exception as error:  # any config problem: say so, exit 2
        print(f"status-writer: cannot load Kubernetes configuration: {error}", file=sys.stderr)
        return EXIT_UNUSABLE
    try:
        settings.election().check()
    except ValueError:
        print(
            "status-writer: --renew-deadline-seconds must be below --lease-duration-seconds",
            file=sys.stderr,
        )
        return EXIT_UNUSABLE
    return _serve(settings, api_client)


def _serve(settings: WriterSettings, api_client: Any) -> int:
    from webhook.observability.logs import logger
    from webhook.status.controller import StatusController
    from webhook.status.health import HealthServer

    log = logger("status")
    controller = StatusController(api_client, settings)
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info(
            "signal received; stopping", extra={"fields": {"signal": signal.Signals(signum).name}}
        )
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    host, port = settings.metrics_host, settings.metrics_port
    try:
        health = HealthServer(
            host, port, controller.alive, controller.ready, controller.metrics.exposition
        )
    except OSError as error:
        print(f"status-writer: cannot listen on {host}:{port}: {error}", file=sys.stderr)
        return EXIT_UNUSABLE
    health.start()
    log.info("health endpoint listening", extra={"fields": {"port": health.port}})
    controller.start()
    while not stop.wait(1.0):
        pass
    controller.stop()
    health.stop()
    api_client.close()
    return EXIT_OK


def _api_client(kubeconfig: str | None) -> Any:
    from kubernetes import client, config

    if kubeconfig:
        return config.new_client_from_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]
    configuration = client.Configuration()
    config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    return client.ApiClient(configuration)


def _own_namespace() -> str:
    """Where this pod runs: the downward API, then the service account, then `default`."""
    if from_env := os.environ.get("POD_NAMESPACE"):
        return from_env
    try:
        return _SERVICE_ACCOUNT_NAMESPACE.read_text(encoding="utf-8").strip() or "default"
    except OSError:
        return "default"
