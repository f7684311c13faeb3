"""`validate -o github`: GitHub Actions workflow commands, one per problem and warning.

The runner turns `::error file=F,line=L,col=C,title=T::message` into an
annotation on the pull request's diff. Values are escaped as the runner's own
toolkit escapes them (actions/toolkit `command.ts`): `%`, CR and LF in the
message; those and `:` and `,` in properties.
"""

from __future__ import annotations

from collections.abc import Iterator

from webhook.cli.validate_report import Entry, Report, Result, summary

_DATA = str.maketrans({"%": "%25", "\r": "%0D", "\n": "%0A"})
_PROPERTY = str.maketrans({"%": "%25", "\r": "%0D", "\n": "%0A", ":": "%3A", ",": "%2C"})


def escape_data(text: str) -> str:
    return text.translate(_DATA)


def escape_property(text: str) -> str:
    return text.translate(_PROPERTY)


def command(level: str, message: str, **properties: object) -> str:
    props = ",".join(
        f"{k}={escape_property(str(v))}" for k, v in properties.items() if v is not None
    )
    return f"::{level} {props}::{escape_data(message)}"


def _entry(result: Result, entry: Entry, level: str) -> str:
    return command(
        level,
        f"{result.label()}: {entry.field}: {entry.message}",
        file=result.source,
        line=entry.position.line,
        col=entry.position.column,
        title=f"FeedbackStore {result.label()}: {entry.type}",
    )


def lines(report: Report) -> Iterator[str]:
    for result in report.results:
        for entry in result.problem_entries():
            yield _entry(result, entry, "error")
        for entry in result.warning_entries():
            yield _entry(result, entry, "warning")
    for error in report.errors:
        yield command("error", error.message, file=error.source, line=error.line, col=error.column)
    yield summary(report)
