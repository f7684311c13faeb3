"""Rewriting one mapping entry of a manifest in its own text, for `migrate --in-place`: the
entry's characters are replaced and every other character of the file stays as it was (comments,
order, quoting, indentation, other documents). Text surgery at the YAML composer's own marks
rather than a round-trip library: ruamel.yaml re-emits whole documents (indentation, spacing
before comments, quoting, line width, JSON layout), so a reviewer would see unchanged lines in
the diff. Every result is parsed again and compared with the object it must decode to; when the
surgery cannot be proven (an entry reached through an alias or merge key, an unusual layout),
the document is written whole from its object instead, and the caller says so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import yaml

_TRAILING_COMMENT = re.compile(r"[ \t]+#[^\r\n]*")
_DEFAULT_STEP = 2
# What JSON may carry raw in a string but a YAML stream may not (DEL, C1 controls) or reads as a
# line break inside a quoted scalar (NEL, LS, PS): written as \u escapes, which both read alike.
_NOT_FOR_YAML = re.compile("[\x7f-\x9f\u2028\u2029]")


class _PlainDumper(yaml.SafeDumper):
    """Block YAML with no anchors: a value used twice is written twice, as kubectl would."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _string(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    """Double-quoted when it holds a character YAML reads as a line break or refuses raw:
    PyYAML would write NEL raw in single quotes, where it reads back as a space."""
    style = '"' if _NOT_FOR_YAML.search(text) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_PlainDumper.add_representer(str, _string)


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace `text[start:end]` with `new`."""

    start: int
    end: int
    new: str


def render_block(value: object, indent: int, step: int, newline: str = "\n") -> str:
    """`value` as block YAML, each line indented by `indent` columns, no final newline."""
    text = yaml.dump(value, Dumper=_PlainDumper, sort_keys=False, default_flow_style=False,
                     allow_unicode=True, indent=step, width=2**16)  # fmt: skip
    pad = " " * indent
    return newline.join(pad + line if line else line for line in text.rstrip("\n").split("\n"))


def _json(value: object, option: int = 0) -> str:
    text = orjson.dumps(value, option=option).decode()
    return _NOT_FOR_YAML.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def render_json(value: object, indent: int, *, pretty: bool, newline: str = "\n") -> str:
    """`value` as JSON that is YAML too (flow context), continuation lines indented by `indent`."""
    if not pretty:
        return _json(value)
    lines = _json(value, orjson.OPT_INDENT_2).split("\n")
    return newline.join([lines[0], *(" " * indent + line for line in lines[1:])])


def entry_of(mapping: yaml.Node, key: str) -> tuple[yaml.Node, yaml.Node] | None:
    """`mapping`'s own `key: value` pair, written inside its span (not merged in from elsewhere)."""
    if not isinstance(mapping, yaml.MappingNode):
        return None
    found = None
    for key_node, value_node in mapping.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
            found = (key_node, value_node)
    if found is None or not _inside(found[0], mapping) or not _inside(found[1], mapping):
        return None
    return found


def _inside(node: yaml.Node, outer: yaml.Node) -> bool:
    start, end = outer.start_mark.index, outer.end_mark.index
    return bool(start <= node.start_mark.index <= node.end_mark.index <= end)


def replace_entry(
    text: str,
    parent_key: yaml.Node,
    mapping: yaml.MappingNode,
    old_key: str,
    new_key: str,
    value: object,
) -> Edit | None:
    """The edit turning `mapping`'s `old_key: ...` entry into `new_key: <value>` in place (same
    position, same key quoting, a trailing comment kept on the key's line), or None when the
    entry is not written in `mapping` itself."""
    pair = entry_of(mapping, old_key)
    if pair is None:
        return None
    key_node, value_node = pair
    start, end = key_node.start_mark.index, value_node.end_mark.index
    newline = "\r\n" if "\r\n" in text else "\n"
    style = key_node.style if isinstance(key_node, yaml.ScalarNode) else None
    quote = style if style in ("'", '"') else ""
    head = f"{quote}{new_key}{quote}:"
    if mapping.flow_style:
        multiline = mapping.start_mark.line != mapping.end_mark.line
        rendered = render_json(value, key_node.start_mark.column, pretty=multiline,
                               newline=newline)  # fmt: skip
        return Edit(start, end, f"{head} {rendered}")
    comment = _TRAILING_COMMENT.match(text, end)
    if comment is not None:
        end = comment.end()
    step = mapping.start_mark.column - parent_key.start_mark.column
    step = step if step > 0 else _DEFAULT_STEP
    body = render_block(value, key_node.start_mark.column + step, step, newline)
    said = comment.group(0) if comment is not None else ""
    return Edit(start, end, f"{head}{said}{newline}{body}")


def whole_document(root: yaml.Node, content: object, *, json: bool) -> Edit:
    """The edit writing a document whole from `content` (the fallback: its comments go)."""
    if json:
        rendered = render_json(content, 0, pretty=True)
    else:
        rendered = render_block(content, 0, _DEFAULT_STEP)
    return Edit(root.start_mark.index, _content_end(root), rendered)


def _content_end(node: yaml.Node) -> int:
    """Where a node's own characters end: a block collection's end mark lies at the next token,
    past any comment lines after it, which belong to what follows."""
    if isinstance(node, yaml.ScalarNode) or getattr(node, "flow_style", False):
        return int(node.end_mark.index)
    children = [part for pair in node.value for part in pair] if isinstance(
        node, yaml.MappingNode) else list(node.value)  # fmt: skip
    return max((_content_end(child) for child in children), default=int(node.start_mark.index))


def apply(text: str, edits: Iterable[Edit]) -> str:
    """`text` with non-overlapping `edits` made (from the last, so the earlier stay placed)."""
    for edit in sorted(edits, key=lambda e: e.start, reverse=True):
        text = text[: edit.start] + edit.new + text[edit.end :]
    return text


def document_text(text: str, root: yaml.Node, edits: Sequence[Edit]) -> str:
    """One document's own text with its `edits` made, for printing it alone."""
    start, end = root.start_mark.index, _content_end(root)
    line_end = _TRAILING_COMMENT.match(text, end)
    end = line_end.end() if line_end is not None else end
    inside = [Edit(e.start - start, e.end - start, e.new) for e in edits if start <= e.start < end]
    moved = max((e.end for e in edits if start <= e.start < end), default=end)
    return apply(text[start : max(end, moved)], inside)
