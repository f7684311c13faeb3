"""`feedbackstore-webhook doctor`: one command to run when something is off in a cluster."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from webhook.cli import EXIT_OK, EXIT_PROBLEMS, EXIT_UNUSABLE, flags, kubeconfig


def register(subparsers: Any) -> None:
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
            "condition; AgentDeployments whose inline declaration (spec.feedback) is invalid.\n\n"
            f"Exit {EXIT_OK}: all is well (warnings allowed); {EXIT_PROBLEMS}: something is wrong; "
            f"{EXIT_UNUSABLE}: the cluster\n"
            "could not be examined. Needs read access to those objects and create on\n"
            "feedbackstores in the probe namespace (dry-run: nothing is stored): a cluster\n"
            "admin's kubeconfig."
        ),
    )
    kubeconfig.add_flags(parser)
    named = (
        ("--namespace", "NS", "the install namespace: Service, Secret, Lease (default: the "
         "shipped one)"),
        ("--webhook-configuration", "NAME", "ValidatingWebhookConfiguration name (default: the "
         "shipped name)"),
        ("--service", "NAME", "the webhook's Service, checked for ready endpoints when the "
         "registration calls a url: (a service: registration names its own) (default: the "
         "shipped name)"),
        ("--secret", "NAME", "Secret holding the serving certificate, tls.crt (default: the "
         "shipped name)"),
        ("--lease", "NAME", "the status writer's Lease (default: the shipped name)"),
        ("--probe-namespace", "NS", "an existing namespace the webhook's namespaceSelector "
         "matches, where the doctor dry-runs creating a FeedbackStore in mode Monitor (nothing "
         "is stored) and expects the webhook's warning back, proving kube-apiserver -> Service "
         "-> pod (default: the `default` namespace)"),
        ("--store-namespace", "NS", "count FeedbackStores with a missing or stale Validated "
         "condition, and invalid inline declarations, only here (default: all namespaces)"),
    )  # fmt: skip
    for flag, metavar, help_text in named:
        parser.add_argument(flag, metavar=metavar, help=help_text)
    parser.add_argument(
        "-o", "--output", choices=("text", "json"), default="text", help="output format"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import datetime as dt

    import orjson

    from webhook.doctor.checks import run_checks
    from webhook.doctor.cluster import UnreachableError, fetch
    from webhook.doctor.result import as_json, as_text, healthy

    target = target_from(args)
    try:
        api_client = kubeconfig.connect(args)
    except kubeconfig.ConfigurationError as error:
        print(f"doctor: {error}", file=sys.stderr)
        return EXIT_UNUSABLE
    try:
        snapshot = fetch(api_client, target)
    except UnreachableError as error:
        print(f"doctor: cannot examine the cluster: {error}", file=sys.stderr)
        return EXIT_UNUSABLE
    finally:
        api_client.close()  # type: ignore[no-untyped-call]
    results = run_checks(snapshot, target, dt.datetime.now(dt.UTC))
    if args.output == "json":
        sys.stdout.write(orjson.dumps(as_json(results), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        sys.stdout.write(as_text(results))
    return EXIT_OK if healthy(results) else EXIT_PROBLEMS


def target_from(args: argparse.Namespace) -> Any:
    """The `Target` the flags name: the shipped names wherever a flag was left out."""
    from webhook.doctor.snapshot import Target

    return flags.settings_from(Target, args, store_namespace=args.store_namespace or None)
