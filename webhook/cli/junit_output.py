"""`validate -o junit`: JUnit XML, as GitLab and Jenkins show test reports.

One test suite per file, one test case per FeedbackStore (`namespace/name`),
a `<failure>` per invalid store listing its problems at `file:line:col`;
warnings go to the case's `<system-out>`. An input that could not be read is a
suite with one errored case, so the report never hides an unchecked file.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from webhook.cli.validate_report import Entry, Report, Result

_CLASSNAME = "feedbackstore-webhook.validate"


def _line(result: Result, entry: Entry) -> str:
    where = f"{result.source}:{entry.position.line}:{entry.position.column}"
    return f"{where}: {entry.field}: {entry.message}"


def _case(suite: ET.Element, result: Result) -> None:
    case = ET.SubElement(
        suite, "testcase", name=result.label(), classname=f"{_CLASSNAME}.{result.source}"
    )
    case.set("file", result.source)
    case.set("line", str(result.start().line))
    problems = result.problem_entries()
    if not result.valid:
        failure = ET.SubElement(
            case,
            "failure",
            message=f"{len(problems)} problem{'s' if len(problems) != 1 else ''}",
            type="FeedbackStoreInvalid",
        )
        failure.text = "\n".join(_line(result, e) for e in problems)
    warnings = result.warning_entries()
    if warnings:
        ET.SubElement(case, "system-out").text = "\n".join(
            f"warning: {_line(result, e)}" for e in warnings
        )


def render(report: Report) -> bytes:
    root = ET.Element("testsuites", name="feedbackstore-webhook validate")
    suites: dict[str, ET.Element] = {}
    for result in report.results:
        suite = suites.get(result.source)
        if suite is None:
            suite = suites[result.source] = ET.SubElement(root, "testsuite", name=result.source)
        _case(suite, result)
    for error in report.errors:
        suite = ET.SubElement(root, "testsuite", name=error.source)
        case = ET.SubElement(suite, "testcase", name=error.source, classname=_CLASSNAME)
        ET.SubElement(case, "error", message=str(error), type="Unreadable").text = str(error)
    for suite in root:
        cases = list(suite)
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
        suite.set("errors", str(sum(1 for c in cases if c.find("error") is not None)))
    ET.indent(root)
    body: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return body + b"\n"
