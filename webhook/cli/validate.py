"""`feedbackstore-webhook validate PATH...`: the verdict for GitOps pipelines.

An unreadable input outweighs invalid stores in the exit code (a pipeline must
not pass on a file it never checked), yet every readable document is still
checked and reported.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import yaml

from webhook.cli.exit_codes import EXIT_OK, EXIT_PROBLEMS, EXIT_UNUSABLE
from webhook.cli.kustomize_origin import origin
from webhook.cli.manifest_files import Document
from webhook.cli.validate_output import RENDERERS
from webhook.cli.validate_report import ChangeWarning, Report, Result
from webhook.rules.manifest import check_manifest, is_feedbackstore


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="check FeedbackStore manifests offline (files, directories, - for stdin)",
        description=(
            "Check every FeedbackStore in YAML/JSON files (multi-document files, directories "
            "recursively: *.yaml, *.yml, *.json; - reads stdin) with the same rules as the "
            f"admission webhook. Other kinds are skipped. Exit {EXIT_OK}: all valid; "
            f"{EXIT_PROBLEMS}: some invalid; {EXIT_UNUSABLE}: some input could not be read or "
            "parsed."
        ),
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="file, directory or -")
    parser.add_argument(
        "-o",
        "--output",
        choices=tuple(RENDERERS),
        default="text",
        help="output format",
    )
    parser.add_argument(
        "--warnings-as-errors",
        action="store_true",
        help="count a FeedbackStore with warnings as invalid",
    )
    parser.add_argument(
        "--previous",
        nargs="+",
        metavar="PATH",
        help="the previous versions (file, directory or -; after the paths): warn of what the "
        "change does to score ingestion, per FeedbackStore matched by namespace and name",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from webhook.cli.manifest_files import ReadError, objects, read_all

    report = Report()
    current: list[Document] = []  # for --previous: what was read
    for read in read_all(args.paths):
        if isinstance(read, ReadError):
            report.errors.append(read)
            continue
        for content, node in objects(read.content, read.node):
            _check(read, content, node, report, args.warnings_as_errors)
        if args.previous:
            current.append(read)
    changes: list[ChangeWarning] | None = None
    if args.previous:
        from webhook.cli.previous import change_warnings

        changes, unreadable = change_warnings(current, args.previous)
        report.errors.extend(unreadable)
    sys.stdout.flush()
    sys.stdout.buffer.write(RENDERERS[args.output](report, changes))
    sys.stdout.flush()
    for error in report.errors:
        print(f"feedbackstore-webhook: error: {error}", file=sys.stderr)
    code = report.exit_code()
    return EXIT_PROBLEMS if code == EXIT_OK and changes and args.warnings_as_errors else code


def _check(
    document: Document, content: object, node: yaml.Node | None, report: Report, strict: bool
) -> None:
    if content is None:
        return  # an empty document (a stray `---`) is nothing at all
    if not isinstance(content, dict) or not is_feedbackstore(content):
        report.skipped += 1
        return
    checked = check_manifest(content)
    report.results.append(
        Result.placed(document.source, document.index, checked, strict, node, origin(content))
    )
