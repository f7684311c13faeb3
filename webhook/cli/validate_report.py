"""What `validate` found: each FeedbackStore's verdict, placed in its source.

Every output format reads these same entries, so a problem has one field, one
message and one position whatever the format.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import yaml

from webhook.cli.exit_codes import EXIT_OK, EXIT_PROBLEMS, EXIT_UNUSABLE
from webhook.cli.positions import Position, locate
from webhook.rules import messages
from webhook.rules.field_errors import ErrorType
from webhook.rules.manifest import ManifestVerdict
from webhook.rules.messages import counted

if TYPE_CHECKING:
    from webhook.cli.manifest_files import ReadError

WARNING = "Warning"
OMITTED = "Omitted"
_START = Position(1, 1)


@dataclass(frozen=True, slots=True)
class Entry:
    """One problem or warning: field path, error type, message and where it starts."""

    field: str
    type: str
    message: str
    position: Position


@dataclass(frozen=True, slots=True)
class Result:
    """One checked FeedbackStore: where it was, who it is, what is wrong with it.

    `node` (the document's node tree) is kept only when there is something to
    place in it; `start` is where the store itself starts.
    """

    source: str
    document: int
    checked: ManifestVerdict
    warnings_are_errors: bool = False
    node: yaml.Node | None = None
    origin: str | None = None
    start: Position = _START

    @classmethod
    def placed(
        cls,
        source: str,
        document: int,
        checked: ManifestVerdict,
        warnings_are_errors: bool,
        node: yaml.Node | None,
        origin: str | None,
    ) -> Result:
        """The result, holding on to `node` only if a problem or warning needs a position."""
        start = _START if node is None else locate(node, "")
        verdict = checked.verdict
        if verdict.valid and not verdict.warnings:
            node = None
        return cls(source, document, checked, warnings_are_errors, node, origin, start)

    @property
    def valid(self) -> bool:
        verdict = self.checked.verdict
        return verdict.valid and not (self.warnings_are_errors and verdict.warnings)

    def position(self, field_path: str, *, at_key: bool = False) -> Position:
        """Where `field_path` starts (`""`: the store itself); its start without a node tree."""
        if self.node is None:
            return self.start
        return locate(self.node, field_path, at_key=at_key)

    def problem_entries(self) -> list[Entry]:
        """Each problem, then the omitted count, then (when strict) the warnings."""
        verdict = self.checked.verdict
        entries = [
            Entry(
                p.field,
                str(p.type),
                p.message,
                # an unknown field is the key that should not be there
                self.position(p.field, at_key=p.type is ErrorType.FORBIDDEN),
            )
            for p in verdict.problems
        ]
        if verdict.omitted:
            message = messages.more_problems(verdict.omitted)
            entries.append(Entry("spec", OMITTED, message, self.position("spec")))
        if self.warnings_are_errors:
            entries.extend(self.warning_entries())
        return entries

    def warning_entries(self) -> list[Entry]:
        return [
            Entry(w.field, WARNING, w.message, self.position(w.field))
            for w in self.checked.verdict.warnings
        ]

    def label(self) -> str:
        """`namespace/name`, and the source file kustomize built it from when it says."""
        name = self.checked.name or "<unnamed>"
        label = f"{self.checked.namespace}/{name}" if self.checked.namespace else name
        return f"{label} (from {self.origin})" if self.origin else label


@dataclass(frozen=True, slots=True)
class ChangeWarning:
    """What a change from the previous manifests does (`validate --previous`), where it shows.

    `field` is empty for a store deleted outright (it is placed where it stood).
    """

    source: str
    position: Position
    label: str
    field: str
    message: str

    @property
    def said(self) -> str:
        """`ns/name: field: message` (no field for a deleted store)."""
        return ": ".join(part for part in (self.label, self.field, self.message) if part)


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


def summary(report: Report) -> str:
    checked = len(report.results)
    text = (
        f"{counted(checked, 'FeedbackStore')} checked, {report.invalid} invalid, "
        f"{counted(report.skipped, 'other document')} skipped"
    )
    if report.errors:
        text += f", {counted(len(report.errors), 'input')} unreadable"
    return text
