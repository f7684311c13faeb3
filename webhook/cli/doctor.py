"""`feedbackstore-webhook doctor`: one command to run when something is off in a cluster.

Exit codes: 0 all is well (warnings allowed), 1 something is wrong, 2 the
cluster could not be examined (no answer, bad credentials, bad flags), as the
other commands use 2 for input they cannot work with.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

EXIT_OK = 0
EXIT_UNHEALTHY = 1
EXIT_CANNOT_CHECK = 2


def register(subparsers: Any) -> None:
    from webhook.certs.kustomize import SECRET_NAME, WEBHOOK_CONFIGURATION
    from webhook.doctor import snapshot

    parser = subparsers.add_parser(
        "doctor",
        help="check an installed webhook end to end and say how to fix what is wrong",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Check the install in a cluster, one line per check, with the fix when one fails:\n"
            "the CRD; the ValidatingWebhookConfiguration (failurePolicy, sideEffects,\n"
            "timeoutSeconds, admissionReviewVersions, a namespaceSelector that leaves out\n"
            "kube-system and the install namespace); the serving certificate in the Secret\n"
            "(trusted by the caBundle, named for the Service or url: host, days to expiry);\n"
            "ready endpoints of the Service; a server-side dry-run the webhook must answer;\n"
            "the status writer's Lease; FeedbackStores with a missing or stale Validated\n"
            "condition.\n\n"
            "Exit 0: all is well (warnings allowed); 1: something is wrong; 2: the cluster\n"
            "could not be examined. Needs read access to those objects and create on\n"
            "feedbackstores in the probe namespace (dry-run: nothing is stored): a cluster\n"
            "admin's kubeconfig."
        ),
    )
    parser.add_argument(
        "--kubeconfig",
        metavar="PATH",
        help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config, else in-cluster)",
    )
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context to use")
    parser.add_argument(
        "--namespace",
        default=snapshot.DEFAULT_NAMESPACE,
        metavar="NS",
        help="the install namespace: Service, Secret, Lease (default %(default)s)",
    )
    parser.add_argument(
        "--webhook-configuration",
        default=WEBHOOK_CONFIGURATION,
        metavar="NAME",
        help="ValidatingWebhookConfiguration name (default %(default)s)",
    )
    parser.add_argument(
        "--service",
        default=snapshot.DEFAULT_SERVICE,
        metavar="NAME",
        help="the webhook's Service, checked for ready endpoints when the registration calls a "
        "url: (a service: registration names its own) (default %(default)s)",
    )
    parser.add_argument(
        "--secret",
        default=SECRET_NAME,
        metavar="NAME",
        help="Secret holding the serving certificate, tls.crt (default %(default)s)",
    )
    parser.add_argument(
        "--lease",
        default=snapshot.DEFAULT_LEASE,
        metavar="NAME",
        help="the status writer's Lease (default %(default)s)",
    )
    parser.add_argument(
        "--probe-namespace",
        default=snapshot.DEFAULT_PROBE_NAMESPACE,
        metavar="NS",
        help="an existing namespace the webhook's namespaceSelector matches, where the doctor "
        "dry-runs creating a FeedbackStore in mode Monitor (nothing is stored) and expects the "
        "webhook's warning back, proving kube-apiserver -> Service -> pod (default %(default)s)",
    )
    parser.add_argument(
        "--store-namespace",
        metavar="NS",
        help="count FeedbackStores with a missing or stale Validated condition only here "
        "(default: all namespaces)",
    )
    parser.add_argument(
        "-o", "--output", choices=("text", "json"), default="text", help="output format"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import datetime as dt

    import orjson

    from webhook.doctor.checks import run_checks
    from webhook.doctor.cluster import UnreachableError, connect, fetch
    from webhook.doctor.render import as_json, as_text
    from webhook.doctor.result import healthy
    from webhook.doctor.snapshot import Target

    target = Target(
        namespace=args.namespace,
        webhook_configuration=args.webhook_configuration,
        service=args.service,
        secret=args.secret,
        lease=args.lease,
        probe_namespace=args.probe_namespace,
        store_namespace=args.store_namespace or None,
    )
    try:
        api_client = connect(args.kubeconfig, args.context)
    except Exception as error:  # any configuration problem: say so, exit 2
        print(f"doctor: cannot load Kubernetes configuration: {error}", file=sys.stderr)
        return EXIT_CANNOT_CHECK
    try:
        snapshot = fetch(api_client, target)
    except UnreachableError as error:
        print(f"doctor: cannot examine the cluster: {error}", file=sys.stderr)
        return EXIT_CANNOT_CHECK
    finally:
        api_client.close()  # type: ignore[no-untyped-call]
    results = run_checks(snapshot, target, dt.datetime.now(dt.UTC))
    if args.output == "json":
        sys.stdout.write(orjson.dumps(as_json(results), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        sys.stdout.write(as_text(results))
    return EXIT_OK if healthy(results) else EXIT_UNHEALTHY
