"""`validate -o sarif`: SARIF 2.1.0 for code-scanning dashboards.

One rule per problem type (apimachinery's error types, plus `Warning` and
`Unreadable`), one result per problem at `physicalLocation.region`
(startLine, startColumn); warnings are `level: warning`.
"""

from __future__ import annotations

from typing import Any

from webhook.cli.validate_report import WARNING, Entry, Report, Result

SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
UNREADABLE = "Unreadable"


def _location(uri: str, line: int | None, column: int | None) -> dict[str, Any]:
    region = {"startLine": line or 1, "startColumn": column or 1}
    return {"physicalLocation": {"artifactLocation": {"uri": uri}, "region": region}}


def _result(
    rules: dict[str, int], rule: str, level: str, text: str, location: dict[str, Any]
) -> dict[str, Any]:
    index = rules.setdefault(rule, len(rules))
    return {
        "ruleId": rule,
        "ruleIndex": index,
        "level": level,
        "message": {"text": text},
        "locations": [location],
    }


def _entry(rules: dict[str, int], result: Result, entry: Entry) -> dict[str, Any]:
    level = "error" if entry.type != WARNING or result.warnings_are_errors else "warning"
    location = _location(result.source, entry.position.line, entry.position.column)
    text = f"{result.label()}: {entry.field}: {entry.message}"
    return _result(rules, entry.type, level, text, location)


def render(report: Report) -> dict[str, Any]:
    rules: dict[str, int] = {}
    results: list[dict[str, Any]] = []
    for result in report.results:
        results.extend(_entry(rules, result, e) for e in result.problem_entries())
        if not result.warnings_are_errors:
            results.extend(_entry(rules, result, e) for e in result.warning_entries())
    for error in report.errors:
        location = _location(error.source, error.line, error.column)
        results.append(_result(rules, UNREADABLE, "error", error.message, location))
    driver = {
        "name": "feedbackstore-webhook",
        "rules": [{"id": rule, "name": rule, "shortDescription": {"text": rule}} for rule in rules],
    }
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{"tool": {"driver": driver}, "results": results}],
    }
