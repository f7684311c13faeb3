"""What `validate` found: each declaration's verdict (a FeedbackStore, or an AgentDeployment's
`spec.feedback`) placed in its source, so every output
format says a problem with one field, message and position. A position is the YAML composer's
own mark on the node a field path's steps lead to (JSON is YAML too), never a search of the
text, nor a parse of the path's."""

from __future__ import annotations

from dataclasses import dataclass, field

import yaml

from webhook.cli import EXIT_OK, EXIT_PROBLEMS, EXIT_UNUSABLE
from webhook.cli.manifest_files import ReadError, Skipped
from webhook.rules.field_errors import ErrorType
from webhook.rules.field_path import Path, Step
from webhook.rules.forms import INLINE, STORE
from webhook.rules.manifest import ManifestVerdict
from webhook.rules.messages import more_problems
from webhook.text import counted


@dataclass(frozen=True, slots=True)
class Position:
    """1-based line and column (in characters, as editors count)."""

    line: int
    column: int


_START = Position(1, 1)


def _at(node: yaml.Node) -> Position:
    return Position(node.start_mark.line + 1, node.start_mark.column + 1)


def locate(root: yaml.Node | None, path: Path, *, at_key: bool = False) -> Position:
    """Start of the value at `path`, else of the mapping that should hold it (1:1 without a
    tree); with `at_key`, of an entry's key: an unknown field is the key, whatever its value."""
    if root is None:
        return _START
    node = root
    key_node: yaml.Node | None = None
    for step in path.steps:
        found = _child(node, step)
        if found is None:
            return _at(node)
        key_node, node = found
    return _at(key_node if at_key and key_node is not None else node)


def _child(node: yaml.Node, step: Step) -> tuple[yaml.Node | None, yaml.Node] | None:
    """One step down: (key node or None, child node); None where the tree has no such child."""
    if isinstance(step, int):
        if isinstance(node, yaml.SequenceNode) and step < len(node.value):
            return None, node.value[step]
        return None
    if isinstance(node, yaml.MappingNode):
        # of equal keys, the later one, as a key written after a merge (`<<:`) overrides it
        for key_node, value_node in reversed(node.value):
            if isinstance(key_node, yaml.ScalarNode) and key_node.value == step:
                return key_node, value_node
    return None


@dataclass(frozen=True, slots=True)
class Entry:
    field: str
    type: str
    message: str
    position: Position


@dataclass(frozen=True, slots=True)
class Result:
    """One checked declaration; `node` (its document's tree) is kept only when something is to
    be placed in it, `start` is where the store itself starts."""

    source: str
    document: int
    checked: ManifestVerdict
    warnings_are_errors: bool = False
    node: yaml.Node | None = None
    origin: str | None = None
    start: Position = _START

    @property
    def valid(self) -> bool:
        verdict = self.checked.verdict
        return verdict.valid and not (self.warnings_are_errors and verdict.warnings)

    def position(self, path: Path, *, at_key: bool = False) -> Position:
        return self.start if self.node is None else locate(self.node, path, at_key=at_key)

    def problem_entries(self) -> list[Entry]:
        """Each problem, then the omitted count, then (when strict) the warnings."""
        verdict = self.checked.verdict
        entries = [
            Entry(
                p.field,
                str(p.type),
                p.message,
                self.position(p.path, at_key=p.type is ErrorType.FORBIDDEN),
            )
            for p in verdict.problems
        ]
        if verdict.omitted:
            message = more_problems(verdict.omitted)
            path = INLINE.path if self.checked.kind == INLINE.kind else STORE.path
            entries.append(Entry(str(path), "Omitted", message, self.position(path)))
        if self.warnings_are_errors:
            entries.extend(self.warning_entries())
        return entries

    def warning_entries(self) -> list[Entry]:
        return [
            Entry(w.field, "Warning", w.message, self.position(w.path))
            for w in self.checked.verdict.warnings
        ]

    def label(self) -> str:
        """`namespace/name`, and the source file kustomize built it from when it says."""
        name = self.checked.name or "<unnamed>"
        label = f"{self.checked.namespace}/{name}" if self.checked.namespace else name
        return f"{label} (from {self.origin})" if self.origin else label


@dataclass(frozen=True, slots=True)
class ChangeWarning:
    """What a change from the previous manifests does (`validate --previous`), where it shows;
    no `field` for a store deleted outright (placed where it stood); `kind` is the declaring
    object's."""

    source: str
    position: Position
    label: str
    field: str
    message: str
    kind: str = STORE.kind

    @property
    def said(self) -> str:
        return ": ".join(part for part in (self.label, self.field, self.message) if part)


@dataclass(slots=True)
class Report:
    results: list[Result] = field(default_factory=list)
    skipped: int = 0
    errors: list[ReadError] = field(default_factory=list)
    notes: list[Skipped] = field(default_factory=list)

    @property
    def invalid(self) -> int:
        return sum(1 for r in self.results if not r.valid)

    def exit_code(self) -> int:
        if self.errors:
            return EXIT_UNUSABLE
        return EXIT_PROBLEMS if self.invalid else EXIT_OK


def summary(report: Report) -> str:
    """`2 FeedbackStores checked, ...`; with agents `2 FeedbackStores and 1 AgentDeployment`."""
    agents = sum(1 for r in report.results if r.checked.kind == INLINE.kind)
    counts = ((STORE.kind, len(report.results) - agents), (INLINE.kind, agents))
    checked = [counted(n, kind) for kind, n in counts if n] or [counted(0, STORE.kind)]
    text = (
        f"{' and '.join(checked)} checked, {report.invalid} invalid, "
        f"{counted(report.skipped, 'other document')} skipped"
    )
    if files := sum(1 for note in report.notes if note.document is None):
        text += f", {counted(files, 'file')} not judged"
    if report.errors:
        text += f", {counted(len(report.errors), 'input')} unreadable"
    return text
