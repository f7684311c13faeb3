"""Reading manifests from files, directories and stdin, as GitOps tools lay them out. YAML is
decoded as Kubernetes' YAML-to-JSON step sees it: timestamps stay strings, and a key repeated in
one mapping is an error (kubectl refuses it too), not a silent last-one-wins."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import yaml

from webhook.rules.manifest import list_items

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _ManifestLoader(_BaseLoader):  # type: ignore[misc]
    """SafeLoader, minus YAML 1.1 timestamps, plus duplicate-key detection."""


def _construct_mapping(loader: Any, node: yaml.MappingNode) -> dict[Any, Any]:
    # Keys written in this mapping must be distinct; keys merged in with `<<:` may be
    # overridden by them, as YAML's merge key specifies.
    own: set[Any] = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        if key in own:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                f"found duplicate key {key!r}",
                key_node.start_mark,
            )
        own.add(key)
    loader.flatten_mapping(node)
    return {
        loader.construct_object(k, deep=True): loader.construct_object(v, deep=True)
        for k, v in node.value
    }


_ManifestLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_ManifestLoader.add_constructor(
    "tag:yaml.org,2002:timestamp", yaml.constructor.SafeConstructor.construct_yaml_str
)


@dataclass(frozen=True, slots=True)
class Document:
    """`index` counts from 1; `node` is the composed tree that places problems (None only for a
    JSON source YAML cannot compose)."""

    source: str
    index: int
    content: object
    node: yaml.Node | None = None


@dataclass(frozen=True, slots=True)
class ReadError:
    """Why a source could not be read; `line` counts from 1 when known."""

    source: str
    message: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        place = (self.source, self.line, self.column if self.line is not None else None)
        where = ":".join(str(part) for part in place if part is not None)
        return f"{where}: {self.message}"


def read_all(paths: Sequence[str]) -> Iterator[Document | ReadError]:
    """Each document under `paths` as soon as it is parsed, so a caller keeps only what it needs
    of each node tree (all at once cost time and memory: bench/README.md)."""
    for path in paths:
        if path != STDIN and os.path.isdir(path):
            for found in _walk(path):
                yield from read_documents(found)
        elif path == STDIN or os.path.exists(path):
            yield from read_documents(path)
        else:
            yield ReadError(path, "no such file or directory")


def objects(content: object, node: yaml.Node | None) -> Iterator[tuple[object, yaml.Node | None]]:
    """A document's objects with their nodes: itself, or each item of a `kind: List` in turn."""
    items = list(list_items(content)) if isinstance(content, dict) else []
    if not items:
        yield content, node
        return
    for item, item_node in zip(items, _item_nodes(node, len(items)), strict=True):
        yield from objects(item, item_node)


def _item_nodes(node: yaml.Node | None, count: int) -> list[yaml.Node | None]:
    """The nodes of a List document's items, in order (None each if there is no tree)."""
    items = None
    if isinstance(node, yaml.MappingNode):
        items = next((v for k, v in node.value if k.value == "items"), None)
    if isinstance(items, yaml.SequenceNode) and len(items.value) == count:
        return list(items.value)
    return [None] * count


def _walk(top: str) -> list[str]:
    """The manifests below `top` in a stable order, dot-directories skipped."""
    found: list[str] = []
    for root, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found += [os.path.join(root, n) for n in files if n.endswith(MANIFEST_SUFFIXES)]
    return sorted(found, key=lambda path: Path(os.path.relpath(path, top)).parts)


def read_documents(source: str) -> Iterator[Document | ReadError]:
    """Every document of one source; on a parse error, the documents before it, then the error."""
    try:
        raw = sys.stdin.buffer.read() if source == STDIN else Path(source).read_bytes()
    except OSError as err:
        yield ReadError(source, f"cannot read: {err.strerror or err}")
        return
    if b"\x00" in raw:
        yield ReadError(source, "not a text file (contains NUL bytes)")
        return
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        yield ReadError(source, f"not UTF-8 text (invalid byte at offset {err.start})")
        return
    yield from (_parse_json if source.endswith(".json") else _parse_yaml)(source, text)


def _parse_json(name: str, text: str) -> Iterator[Document | ReadError]:
    try:
        content = orjson.loads(text)
    except orjson.JSONDecodeError as err:
        yield ReadError(name, f"cannot parse JSON: {err.msg}", err.lineno, err.colno)
        return
    try:  # JSON is YAML: its node tree places problems, while orjson decodes it
        node: yaml.Node | None = yaml.compose(text, Loader=_BaseLoader)
    except (yaml.YAMLError, RecursionError):
        node = None
    yield Document(name, 1, content, node)


def _parse_yaml(name: str, text: str) -> Iterator[Document | ReadError]:
    loader = _ManifestLoader(text)
    index = 0
    try:
        # yaml.load_all's own loop, keeping each document's node tree for positions
        while loader.check_node():
            node = loader.get_node()
            index += 1
            yield Document(name, index, loader.construct_document(node), node)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (None, None)
        problem = err.problem or err.context or "invalid YAML"
        yield ReadError(name, f"cannot parse YAML: {problem}", line, column)
    except yaml.YAMLError as err:
        yield ReadError(name, f"cannot parse YAML: {err}")
    except RecursionError:
        yield ReadError(name, "cannot parse YAML: nesting too deep")
    finally:
        loader.dispose()
