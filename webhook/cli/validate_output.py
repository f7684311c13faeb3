"""`validate -o FORMAT`: one thin renderer per format over the same entries. `github` escapes as
actions/toolkit `command.ts` does; `junit` has a case per store and an errored case per unreadable
input, so a report never hides an unchecked file; `sarif` (2.1.0) has a rule per error type."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import orjson

from webhook.cli import EXIT_OK
from webhook.cli.validate_report import ChangeWarning, Entry, Report, Result, summary
from webhook.rules.field_path import Path
from webhook.text import counted

Changes = list[ChangeWarning] | None
UNREADABLE = "Unreadable"
CHANGE = "SpecChange"
SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
_DATA = str.maketrans({"%": "%25", "\r": "%0D", "\n": "%0A"})
_PROPERTY = str.maketrans({"%": "%25", "\r": "%0D", "\n": "%0A", ":": "%3A", ",": "%2C"})


def _entries(report: Report) -> Iterator[tuple[Result, Entry, bool]]:
    """(store, entry, whether it is from the warning list) in the order every format says them."""
    for result in report.results:
        yield from ((result, entry, False) for entry in result.problem_entries())
        yield from ((result, entry, True) for entry in result.warning_entries())


def _at(result: Result, entry: Entry) -> str:
    return f"{result.source}:{entry.position.line}:{entry.position.column}"


def _said(result: Result, entry: Entry) -> str:
    return f"{result.label()}: {entry.field}: {entry.message}"


def _lines(lines: list[str]) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


def _json(body: object) -> bytes:
    return orjson.dumps(body, option=orjson.OPT_INDENT_2) + b"\n"


def text(report: Report, changes: Changes) -> bytes:
    return _lines([*text_lines(report, changes), summary(report)])


def text_lines(report: Report, changes: Changes = None) -> list[str]:
    """The text format's line per problem and warning (`migrate` prints a store's with them)."""
    lines = [
        f"{_at(r, e)}: {r.label()}: {e.field}: {'warning: ' if warned else ''}{e.message}"
        for r, e, warned in _entries(report)
    ]
    lines += [
        f"{c.source}:{c.position.line}:{c.position.column}: {c.label}: "
        + (f"{c.field}: " if c.field else "")
        + f"warning: {c.message}"
        for c in changes or ()
    ]
    return lines


def _entry_json(entry: Entry, *, with_type: bool = True) -> dict[str, object]:
    typed = {"type": entry.type} if with_type else {}
    where = {"line": entry.position.line, "column": entry.position.column}
    return {"field": entry.field, **typed, "message": entry.message, **where}


def _result_json(result: Result) -> dict[str, object]:
    return {
        **({"origin": result.origin} if result.origin else {}),
        "source": result.source,
        "document": result.document,
        "kind": result.checked.kind,
        "namespace": result.checked.namespace,
        "name": result.checked.name,
        "valid": result.valid,
        "problems": [_entry_json(e) for e in result.problem_entries()],
        "warnings": [_entry_json(e, with_type=False) for e in result.warning_entries()],
    }


def json(report: Report, changes: Changes) -> bytes:
    body: dict[str, object] = {
        "valid": report.exit_code() == EXIT_OK,
        "checked": len(report.results),
        "invalid": report.invalid,
        "skipped": report.skipped,
        "results": [_result_json(r) for r in report.results],
        "errors": [
            {"source": e.source, "line": e.line, "column": e.column, "message": e.message}
            for e in report.errors
        ],
        "notes": [
            {"source": n.source, "document": n.document, "message": n.reason} for n in report.notes
        ],
    }
    if changes is not None:
        body["changes"] = [
            {"source": c.source, "line": c.position.line, "column": c.position.column,
             "name": c.label, "field": c.field, "message": c.message}
            for c in changes
        ]  # fmt: skip
    return _json(body)


def command(level: str, message: str, **properties: object) -> str:
    """One workflow command; properties that are None are left out."""
    props = ",".join(
        f"{k}={str(v).translate(_PROPERTY)}" for k, v in properties.items() if v is not None
    )
    return f"::{level} {props}::{message.translate(_DATA)}"


def github(report: Report, changes: Changes) -> bytes:
    lines = [
        command("warning" if warned else "error", _said(r, e), file=r.source,
                line=e.position.line, col=e.position.column,
                title=f"{r.checked.kind} {r.label()}: {e.type}")
        for r, e, warned in _entries(report)
    ]  # fmt: skip
    lines += [
        command("warning", c.said, file=c.source, line=c.position.line, col=c.position.column,
                title=f"{c.kind} {c.label}: {CHANGE}")
        for c in changes or ()
    ]  # fmt: skip
    lines += [
        command("error", e.message, file=e.source, line=e.line, col=e.column) for e in report.errors
    ]
    return _lines([*lines, summary(report)])


def _junit_line(result: Result, entry: Entry) -> str:
    return f"{_at(result, entry)}: {entry.field}: {entry.message}"


def junit(report: Report, changes: Changes) -> bytes:
    import xml.etree.ElementTree as ET

    classname = "feedbackstore-webhook.validate"
    root = ET.Element("testsuites", name="feedbackstore-webhook validate")
    suites: dict[str, ET.Element] = {}
    for result in report.results:
        if result.source not in suites:
            suites[result.source] = ET.SubElement(root, "testsuite", name=result.source)
        case = ET.SubElement(
            suites[result.source],
            "testcase",
            name=result.label(),
            classname=f"{classname}.{result.source}",
            file=result.source,
            line=str(result.position(Path()).line),
        )
        if problems := result.problem_entries():
            count = counted(len(problems), "problem")
            invalid = f"{result.checked.kind}Invalid"
            failure = ET.SubElement(case, "failure", message=count, type=invalid)
            failure.text = "\n".join(_junit_line(result, e) for e in problems)
        if warnings := result.warning_entries():
            out = ET.SubElement(case, "system-out")
            out.text = "\n".join(f"warning: {_junit_line(result, e)}" for e in warnings)
    for error in report.errors:
        suite = ET.SubElement(root, "testsuite", name=error.source)
        case = ET.SubElement(suite, "testcase", name=error.source, classname=classname)
        ET.SubElement(case, "error", message=str(error), type=UNREADABLE).text = str(error)
    for suite in root:
        suite.set("tests", str(len(suite)))
        suite.set("failures", str(sum(1 for c in suite if c.find("failure") is not None)))
        suite.set("errors", str(sum(1 for c in suite if c.find("error") is not None)))
    ET.indent(root)
    body: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return body + b"\n"


def _sarif_result(
    rules: dict[str, int], rule: str, level: str, text: str, uri: str, line: int | None,
    col: int | None,
) -> dict[str, Any]:  # fmt: skip
    region = {"startLine": line or 1, "startColumn": col or 1}
    location = {"physicalLocation": {"artifactLocation": {"uri": uri}, "region": region}}
    index = rules.setdefault(rule, len(rules))
    found = {"ruleId": rule, "ruleIndex": index, "level": level, "message": {"text": text}}
    return {**found, "locations": [location]}


def sarif(report: Report, changes: Changes) -> bytes:
    rules: dict[str, int] = {}
    results = [
        _sarif_result(rules, e.type, "warning" if warned else "error", _said(r, e), r.source,
                      e.position.line, e.position.column)
        for r, e, warned in _entries(report)
        if not (warned and r.warnings_are_errors)  # already among the problems
    ]  # fmt: skip
    results += [
        _sarif_result(rules, CHANGE, "warning", c.said, c.source,
                      c.position.line, c.position.column)
        for c in changes or ()
    ]  # fmt: skip
    results += [
        _sarif_result(rules, UNREADABLE, "error", e.message, e.source, e.line, e.column)
        for e in report.errors
    ]
    described = [{"id": rule, "name": rule, "shortDescription": {"text": rule}} for rule in rules]
    driver = {"name": "feedbackstore-webhook", "rules": described}
    run = {"tool": {"driver": driver}, "results": results}
    return _json({"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]})


RENDERERS: dict[str, Callable[[Report, Changes], bytes]] = {
    render.__name__: render for render in (text, json, github, junit, sarif)
}
