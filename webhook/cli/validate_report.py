"""What `validate` found: each declaration's verdict (a FeedbackStore, or an AgentDeployment's
`spec.feedback`) placed in its source, so every output
format says a problem with one field, message and position. A position is the YAML composer's
own mark on the node a field path leads to (JSON is YAML too), never a search of the text."""

from __future__ import annotations

from dataclasses import dataclass, field

import yaml

from webhook.cli import EXIT_OK, EXIT_PROBLEMS, EXIT_UNUSABLE
from webhook.cli.manifest_files import ReadError
from webhook.rules.field_errors import ErrorType
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


def locate(root: yaml.Node | None, field_path: str, *, at_key: bool = False) -> Position:
    """Start of the value at `field_path`, else of the mapping that should hold it (1:1 without
    a tree); with `at_key`, of an entry's key: an unknown field is the key, whatever its value."""
    if root is None:
        return _START
    node, rest = root, field_path
    key_node: yaml.Node | None = None
    while rest:
        step = _step(node, rest)
        if step is None:
            return _at(node)
        key_node, node, rest = step
    return _at(key_node if at_key and key_node is not None else node)


def _step(node: yaml.Node, rest: str) -> tuple[yaml.Node | None, yaml.Node, str] | None:
    """One path element down: (key node or None, child node, the path still to walk)."""
    if isinstance(node, yaml.SequenceNode) and rest.startswith("["):
        index_text, _, tail = rest[1:].partition("]")
        if not index_text.isdigit() or int(index_text) >= len(node.value):
            return None
        return None, node.value[int(index_text)], tail.removeprefix(".")
    if isinstance(node, yaml.MappingNode):
        best: tuple[yaml.Node, yaml.Node, str] | None = None
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if not isinstance(key, str) or not rest.startswith(key):
                continue
            tail = rest[len(key) :]
            # the longest key that ends at a path boundary wins (a key may contain a dot);
            # of equals, the later one, as a key written after a merge (`<<:`) overrides it
            at_boundary = not tail or tail[0] in ".["
            if at_boundary and (best is None or len(tail) <= len(best[2])):
                best = (key_node, value_node, tail.removeprefix("."))
        return best
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

    def position(self, field_path: str, *, at_key: bool = False) -> Position:
        return self.start if self.node is None else locate(self.node, field_path, at_key=at_key)

    def problem_entries(self) -> list[Entry]:
        """Each problem, then the omitted count, then (when strict) the warnings."""
        verdict = self.checked.verdict
        entries = [
            Entry(
                p.field,
                str(p.type),
                p.message,
                self.position(p.field, at_key=p.type is ErrorType.FORBIDDEN),
            )
            for p in verdict.problems
        ]
        if verdict.omitted:
            message = more_problems(verdict.omitted)
            path = INLINE.path if self.checked.kind == INLINE.kind else STORE.path
            entries.append(Entry(path, "Omitted", message, self.position(path)))
        if self.warnings_are_errors:
            entries.extend(self.warning_entries())
        return entries

    def warning_entries(self) -> list[Entry]:
        return [
            Entry(w.field, "Warning", w.message, self.position(w.field))
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
    if report.errors:
        text += f", {counted(len(report.errors), 'input')} unreadable"
    return text
