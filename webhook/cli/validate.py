"""`feedbackstore-webhook validate PATH...`: the verdict for GitOps pipelines.

Exit codes: 0 all FeedbackStores valid, 1 any invalid, 2 some input could not
be read or parsed (which wins: a pipeline must not pass on a file it never
checked). Every readable document is still checked and reported.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from webhook import messages
from webhook.cli.exit_codes import EXIT_OK, EXIT_PROBLEMS, EXIT_UNUSABLE
from webhook.rules.manifest import ManifestVerdict, check_manifest, is_feedbackstore, list_items

if TYPE_CHECKING:
    from webhook.cli.manifest_files import ReadError


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
        "-o", "--output", choices=("text", "json"), default="text", help="output format"
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


@dataclass(frozen=True, slots=True)
class Result:
    """One checked FeedbackStore: where it was, who it is, what is wrong with it."""

    source: str
    document: int
    checked: ManifestVerdict
    warnings_are_errors: bool = False

    @property
    def valid(self) -> bool:
        verdict = self.checked.verdict
        return verdict.valid and not (self.warnings_are_errors and verdict.warnings)

    def problem_entries(self) -> list[tuple[str, str, str]]:
        """(field, type, message) per problem, then the omitted count, then strict warnings."""
        verdict = self.checked.verdict
        entries = [(p.field, str(p.type), p.message) for p in verdict.problems]
        if verdict.omitted:
            entries.append(("spec", "Omitted", messages.more_problems(verdict.omitted)))
        if self.warnings_are_errors:
            entries.extend((w.field, "Warning", w.message) for w in verdict.warnings)
        return entries

    def label(self) -> str:
        name = self.checked.name or "<unnamed>"
        return f"{self.checked.namespace}/{name}" if self.checked.namespace else name

    def as_json(self) -> dict[str, object]:
        return {
            "source": self.source,
            "document": self.document,
            "namespace": self.checked.namespace,
            "name": self.checked.name,
            "valid": self.valid,
            "problems": [
                {"field": f, "type": t, "message": m} for f, t, m in self.problem_entries()
            ],
            "warnings": [str(w) for w in self.checked.verdict.warnings],
        }


@dataclass(slots=True)
class Report:
    results: list[Result] = field(default_factory=list)
    skipped: int = 0
    errors: list[ReadError] = field(default_factory=list)

    @property
    def invalid(self) -> int:
        return sum(1 for r in self.results if not r.valid)

    def exit_code(self) -> int:
        if self.errors:
            return EXIT_UNUSABLE
        return EXIT_PROBLEMS if self.invalid else EXIT_OK


def run(args: argparse.Namespace) -> int:
    from webhook.cli.manifest_files import Document, ReadError, expand_paths, read_documents

    report = Report()
    read: list[Document] = []
    for path in expand_paths(args.paths):
        if isinstance(path, ReadError):
            report.errors.append(path)
            continue
        documents, error = read_documents(path)
        if error is not None:
            report.errors.append(error)
        read.extend(documents)
        for document in documents:
            _check_document(document.source, document.index, document.content, report, args)
    changes: list[str] | None = None
    if getattr(args, "previous", None):  # the `--previous` hook: webhook/cli/previous.py
        from webhook.cli.previous import change_lines

        changes, unreadable = change_lines(read, args.previous)
        report.errors.extend(unreadable)
    if args.output == "json":
        _print_json(report, changes)
    else:
        _print_text(report, sys.stdout, changes)
    for error in report.errors:
        print(f"feedbackstore-webhook: error: {error}", file=sys.stderr)
    code = report.exit_code()
    return EXIT_PROBLEMS if code == EXIT_OK and changes and args.warnings_as_errors else code


def _check_document(
    source: str, index: int, content: object, report: Report, args: argparse.Namespace
) -> None:
    if content is None:
        return  # an empty document (a stray `---`) is nothing at all
    if not isinstance(content, dict):
        report.skipped += 1
        return
    items = list(list_items(content))
    if items:
        for item in items:
            _check_document(source, index, item, report, args)
        return
    if not is_feedbackstore(content):
        report.skipped += 1
        return
    report.results.append(Result(source, index, check_manifest(content), args.warnings_as_errors))


def _lines(report: Report) -> Iterator[str]:
    for result in report.results:
        where = f"{result.source}:{result.document}: {result.label()}"
        for field_path, _, message in result.problem_entries():
            yield f"{where}: {field_path}: {message}"
        for warning in result.checked.verdict.warnings:
            yield f"{where}: {warning.field}: warning: {warning.message}"


def summary(report: Report) -> str:
    checked = len(report.results)
    text = (
        f"{checked} FeedbackStore{'s' if checked != 1 else ''} checked, "
        f"{report.invalid} invalid, {report.skipped} other document"
        f"{'s' if report.skipped != 1 else ''} skipped"
    )
    if report.errors:
        count = len(report.errors)
        text += f", {count} input{'s' if count != 1 else ''} unreadable"
    return text


def _print_text(report: Report, out: TextIO, changes: list[str] | None) -> None:
    for line in (*_lines(report), *(changes or ())):
        out.write(line + "\n")
    out.write(summary(report) + "\n")


def _print_json(report: Report, changes: list[str] | None) -> None:
    import orjson

    body = {
        "valid": report.exit_code() == EXIT_OK,
        "checked": len(report.results),
        "invalid": report.invalid,
        "skipped": report.skipped,
        "results": [r.as_json() for r in report.results],
        "errors": [
            {"source": e.source, "line": e.line, "column": e.column, "message": e.message}
            for e in report.errors
        ],
    }
    if changes is not None:
        body["changes"] = changes
    sys.stdout.buffer.write(orjson.dumps(body, option=orjson.OPT_INDENT_2) + b"\n")
    sys.stdout.flush()
