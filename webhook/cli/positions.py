"""Where a field path's value starts in its source, from the YAML composer's node marks.

The verdict speaks in field paths (`spec.human.scores[2].name`) and knows
nothing of files. The CLI keeps the node tree the parser composed for each
document (PyYAML marks every node with where it starts) and walks it along the
path, so a position is the parser's own answer, never a search of the text.
JSON is YAML, so JSON sources are composed the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml


@dataclass(frozen=True, slots=True)
class Position:
    """1-based line and column (in characters, as editors count)."""

    line: int
    column: int


def _at(node: yaml.Node) -> Position:
    return Position(node.start_mark.line + 1, node.start_mark.column + 1)


def locate(root: yaml.Node, field_path: str, *, at_key: bool = False) -> Position:
    """Start of the value at `field_path`; of the deepest node that exists if it is missing.

    A missing field is reported at the mapping that should hold it. With
    `at_key`, a mapping entry is reported at its key (an unknown field is the
    key that should not be there, whatever its value).
    """
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
