"""`feedbackstore-webhook validate PATH...`: the verdict for GitOps pipelines.

Exit codes: 0 all FeedbackStores valid, 1 any invalid, 2 some input could not
be read or parsed (which wins: a pipeline must not pass on a file it never
checked). Every readable document is still checked and reported.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import Any, TextIO

import yaml

from webhook.cli.exit_codes import EXIT_OK, EXIT_PROBLEMS, EXIT_UNUSABLE
from webhook.cli.kustomize_origin import origin
from webhook.cli.manifest_files import Document
from webhook.cli.validate_report import Entry, Report, Result, summary
from webhook.rules.manifest import check_manifest, is_feedbackstore, list_items


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
        choices=("text", "json", "github", "junit", "sarif"),
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
    from webhook.cli.manifest_files import ReadError, expand_paths, read_documents

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
            _check_document(document, document.content, document.node, report, args)
    changes: list[str] | None = None
    if getattr(args, "previous", None):  # the `--previous` hook: webhook/cli/previous.py
        from webhook.cli.previous import change_lines

        changes, unreadable = change_lines(read, args.previous)
        report.errors.extend(unreadable)
    if args.output == "json":
        _print_json(report, changes)
    elif args.output == "github":
        from webhook.cli import github_output

        sys.stdout.write("".join(line + "\n" for line in github_output.lines(report)))
    elif args.output == "sarif":
        from webhook.cli import sarif_output

        _write_json(sarif_output.render(report))
    elif args.output == "junit":
        from webhook.cli import junit_output

        sys.stdout.flush()
        sys.stdout.buffer.write(junit_output.render(report))
        sys.stdout.flush()
    else:
        _print_text(report, sys.stdout, changes)
    for error in report.errors:
        print(f"feedbackstore-webhook: error: {error}", file=sys.stderr)
    code = report.exit_code()
    return EXIT_PROBLEMS if code == EXIT_OK and changes and args.warnings_as_errors else code


def _check_document(
    document: Document,
    content: object,
    node: yaml.Node | None,
    report: Report,
    args: argparse.Namespace,
) -> None:
    if content is None:
        return  # an empty document (a stray `---`) is nothing at all
    if not isinstance(content, dict):
        report.skipped += 1
        return
    items = list(list_items(content))
    if items:
        item_nodes = _item_nodes(node, len(items))
        for item, item_node in zip(items, item_nodes, strict=True):
            _check_document(document, item, item_node, report, args)
        return
    if not is_feedbackstore(content):
        report.skipped += 1
        return
    checked = check_manifest(content)
    result = Result(
        document.source, document.index, checked, args.warnings_as_errors, node, origin(content)
    )
    report.results.append(result)


def _item_nodes(node: yaml.Node | None, count: int) -> list[yaml.Node | None]:
    """The nodes of a List document's items, in order (None each if there is no tree)."""
    items = None
    if isinstance(node, yaml.MappingNode):
        items = next((v for k, v in node.value if k.value == "items"), None)
    if isinstance(items, yaml.SequenceNode) and len(items.value) == count:
        return list(items.value)
    return [None] * count


def _where(result: Result, entry: Entry) -> str:
    line, column = entry.position.line, entry.position.column
    return f"{result.source}:{line}:{column}: {result.label()}: {entry.field}"


def _lines(report: Report) -> Iterator[str]:
    for result in report.results:
        for entry in result.problem_entries():
            yield f"{_where(result, entry)}: {entry.message}"
        for entry in result.warning_entries():
            yield f"{_where(result, entry)}: warning: {entry.message}"


def _print_text(report: Report, out: TextIO, changes: list[str] | None) -> None:
    for line in (*_lines(report), *(changes or ())):
        out.write(line + "\n")
    out.write(summary(report) + "\n")


def _print_json(report: Report, changes: list[str] | None) -> None:

    body = {
        "valid": report.exit_code() == EXIT_OK,
        "checked": len(report.results),
        "invalid": report.invalid,
        "skipped": report.skipped,
        "results": [_result_json(r) for r in report.results],
        "errors": [
            {"source": e.source, "line": e.line, "column": e.column, "message": e.message}
            for e in report.errors
        ],
    }
    if changes is not None:
        body["changes"] = changes
    _write_json(body)


def _write_json(body: object) -> None:
    import orjson

    sys.stdout.flush()
    sys.stdout.buffer.write(orjson.dumps(body, option=orjson.OPT_INDENT_2) + b"\n")
    sys.stdout.flush()


def _entry_json(entry: Entry, *, with_type: bool = True) -> dict[str, object]:
    body: dict[str, object] = {"field": entry.field}
    if with_type:
        body["type"] = entry.type
    body.update(message=entry.message, line=entry.position.line, column=entry.position.column)
    return body


def _result_json(result: Result) -> dict[str, object]:
    origin = {"origin": result.origin} if result.origin else {}
    return {
        **origin,
        "source": result.source,
        "document": result.document,
        "namespace": result.checked.namespace,
        "name": result.checked.name,
        "valid": result.valid,
        "problems": [_entry_json(e) for e in result.problem_entries()],
        "warnings": [_entry_json(e, with_type=False) for e in result.warning_entries()],
    }
