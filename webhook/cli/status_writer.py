"""`feedbackstore-webhook status-writer`: mirror the verdict into every FeedbackStore's status.

Runs until SIGTERM or SIGINT, then stops writing, releases its Lease (so a
standby replica takes over at once, not after the lease expires) and exits 0.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

from webhook.status.ratelimit import DEFAULT_BURST, DEFAULT_QPS

_SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
EXIT_OK = 0
EXIT_CONFIG = 2


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
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="kubeconfig file (default: the in-cluster service account)",
    )
    parser.add_argument(
        "--namespace", metavar="NS", help="watch only this namespace (default: all namespaces)"
    )
    parser.add_argument(
        "--lease-namespace",
        metavar="NS",
        help="namespace of the Lease (default: $POD_NAMESPACE, the service account's, or default)",
    )
    parser.add_argument(
        "--lease-name", metavar="NAME", default="feedbackstore-status-writer", help="Lease name"
    )
    parser.add_argument(
        "--resync-seconds",
        type=_positive_float,
        default=300.0,
        metavar="N",
        help="re-check every cached object this often (costs no request when up to date)",
    )
    parser.add_argument(
        "--metrics-port",
        type=_port,
        default=8080,
        metavar="N",
        help="port for /healthz, /readyz and /metrics (0: any free port, logged)",
    )
    parser.add_argument(
        "--metrics-host",
        default="0.0.0.0",  # noqa: S104 - probes and scrapes come from outside the pod
        metavar="HOST",
        help="address for that port",
    )
    parser.add_argument(
        "--lease-duration-seconds",
        type=_positive_int,
        default=15,
        metavar="N",
        help="how long a Lease holds without renewal",
    )
    parser.add_argument(
        "--renew-deadline-seconds",
        type=_positive_float,
        default=10.0,
        metavar="N",
        help="the leader stops writing when it could not renew for this long",
    )
    parser.add_argument(
        "--retry-period-seconds",
        type=_positive_float,
        default=2.0,
        metavar="N",
        help="how often to renew (leader) or try to acquire (standby)",
    )
    parser.add_argument(
        "--workers", type=_positive_int, default=4, metavar="N", help="concurrent status writes"
    )
    parser.add_argument(
        "--qps",
        type=_non_negative_float,
        default=DEFAULT_QPS,
        metavar="N",
        help=(
            "client-side limit: requests per second to the API server, watches excepted, as "
            "client-go's (default %(default)s, what kube-controller-manager ships with; 0: no "
            "limit but kube-apiserver's own priority and fairness)"
        ),
    )
    parser.add_argument(
        "--burst",
        type=_positive_int,
        default=DEFAULT_BURST,
        metavar="N",
        help="requests allowed at once above --qps after a quiet spell (default %(default)s)",
    )
    parser.add_argument(
        "--log-level",
        default="info",
        choices=("debug", "info", "warning", "error"),
        help="log level (logs are JSON lines on stderr)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from webhook.status.logs import configure_logging

    configure_logging(args.log_level)
    try:
        api_client = _api_client(args.kubeconfig)
    except Exception as error:  # any config problem: say so, exit 2
        print(f"status-writer: cannot load Kubernetes configuration: {error}", file=sys.stderr)
        return EXIT_CONFIG
    if not 0 < args.renew_deadline_seconds < args.lease_duration_seconds:
        print(
            "status-writer: --renew-deadline-seconds must be below --lease-duration-seconds",
            file=sys.stderr,
        )
        return EXIT_CONFIG
    return _serve(args, api_client)


def _serve(args: argparse.Namespace, api_client: Any) -> int:
    import logging

    from webhook.status.controller import StatusController, WriterSettings
    from webhook.status.health import HealthServer

    log = logging.getLogger("webhook.status")
    settings = WriterSettings(
        namespace=args.namespace or None,
        lease_namespace=args.lease_namespace or _own_namespace(),
        lease_name=args.lease_name,
        resync_seconds=args.resync_seconds,
        workers=max(args.workers, 1),
        qps=args.qps,
        burst=args.burst,
        lease_duration=args.lease_duration_seconds,
        renew_deadline=args.renew_deadline_seconds,
        retry_period=args.retry_period_seconds,
    )
    controller = StatusController(api_client, settings)
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("signal received; stopping", extra={"signal": signal.Signals(signum).name})
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        health = HealthServer(
            args.metrics_host,
            args.metrics_port,
            controller.alive,
            controller.ready,
            controller.metrics.render,
        )
    except OSError as error:
        print(
            f"status-writer: cannot listen on {args.metrics_host}:{args.metrics_port}: {error}",
            file=sys.stderr,
        )
        return EXIT_CONFIG
    health.start()
    log.info("health endpoint listening", extra={"port": health.port})
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
    from_env = os.environ.get("POD_NAMESPACE")
    if from_env:
        return from_env
    try:
        return _SERVICE_ACCOUNT_NAMESPACE.read_text(encoding="utf-8").strip() or "default"
    except OSError:
        return "default"


def _positive_float(text: str) -> float:
    value = float(text)
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def _non_negative_float(text: str) -> float:
    value = float(text)
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"not a port: {text!r}")
    return value
