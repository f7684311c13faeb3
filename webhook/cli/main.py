"""`feedbackstore-webhook`: a module per subcommand with `register(subparsers)`; each imports
aiohttp or kubernetes only when run, so `validate` in a pre-commit hook starts fast."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from webhook import __version__

# Subcommand modules under webhook.cli, in the order `--help` lists them.
SUBCOMMANDS = (
    "validate",
    "migrate",
    "serve",
    "status_writer",
    "cleanup",
    "certs",
    "manifests",
    "doctor",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="feedbackstore-webhook",
        description="Admission webhook, status writer and offline validator for FeedbackStores.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in SUBCOMMANDS:
        importlib.import_module(f"webhook.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
