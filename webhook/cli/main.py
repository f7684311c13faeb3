"""`feedbackstore-webhook`: a module per subcommand with `register(subparsers)`; each imports
aiohttp or kubernetes only when run, so `validate` in a pre-commit hook starts fast."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from webhook import version

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
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in SUBCOMMANDS:
        importlib.import_module(f"webhook.cli.{name}").register(subparsers)
    return parser


class _Version(argparse.Action):
    """argparse's `version` action, with the version read only when asked for: every command
    builds this parser, and `validate` in a pre-commit hook should not pay for the lookup."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(f"{parser.prog} {version()}")
        parser.exit()


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
