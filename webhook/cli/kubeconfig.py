"""How a command a person runs against a cluster (doctor, cleanup) reaches it: `--kubeconfig` and
`--context` read as kubectl reads them, else the in-cluster service account, so the same command
works from a laptop and from a Job such as the chart's cleanup hook. Declared here once, so both
commands take the same flags with the same words."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kubernetes.client import ApiClient


class ConfigurationError(Exception):
    """No usable configuration: the command cannot start (exit 2)."""


def add_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config, else in-cluster)",
    )
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context to use")


def connect(args: argparse.Namespace) -> ApiClient:
    """A client as the flags `add_flags` declared say; `ConfigurationError` when there is none."""
    from kubernetes import client as k8s
    from kubernetes import config as k8s_config

    default = os.environ.get("KUBECONFIG") or str(Path("~/.kube/config").expanduser())
    try:
        if args.kubeconfig or args.context or Path(default.split(os.pathsep)[0]).is_file():
            return k8s_config.new_client_from_config(  # type: ignore[no-any-return,no-untyped-call]
                config_file=args.kubeconfig, context=args.context
            )
        configuration = k8s.Configuration()
        k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        return k8s.ApiClient(configuration)
    except Exception as error:  # any configuration problem: the caller says so and exits 2
        raise ConfigurationError(f"cannot load Kubernetes configuration: {error}") from error
