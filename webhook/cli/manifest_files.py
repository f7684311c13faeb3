"""Reading manifests from files, directories and stdin, as GitOps tools lay them out. YAML is
decoded as Kubernetes' YAML-to-JSON step sees it: timestamps stay strings, a key repeated in
one mapping is an error (kubectl refuses it too), not a silent last-one-wins, and so is a
document that aliases expand past what kubectl's YAML decoder (go-yaml) accepts."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson
import yaml

from webhook.cli.repository_layout import excluded
from webhook.rules.forms import INLINE, STORE
from webhook.rules.manifest import list_items

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
STDIN = "-"
# A source larger than this is refused before it is parsed: kube-apiserver takes objects of
# ~1.5 MiB, so this is thousands of them, and past it pure-Python parsing takes minutes.
MAX_SOURCE_BYTES: Final = 64 * 2**20
# The kinds whose declarations `validate` judges, as a text that holds one must name them.
DECLARING_KINDS: Final = (STORE.kind, INLINE.kind)

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
        if not isinstance(key, Hashable):  # `{{ name }}: x`, as a template writes it
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                "found a mapping or list as a key (kubectl refuses it: invalid map key)",
                key_node.start_mark,
            )
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
    JSON source YAML cannot compose); `text` is the whole source, which the nodes' marks index
    (one string shared by its documents), for a command that rewrites it (`migrate`)."""

    source: str
    index: int
    content: object
    node: yaml.Node | None = None
    text: str = ""


@dataclass(frozen=True, slots=True)
class ReadError:
    """Why a source could not be read; `line` counts from 1 when known. `names_a_kind` is False
    for a text that failed to parse and names no kind `validate` judges (DECLARING_KINDS): YAML
    of another tool (a template, a custom tag), which holds no declaration to miss."""

    source: str
    message: str
    line: int | None = None
    column: int | None = None
    names_a_kind: bool = True

    def __str__(self) -> str:
        place = (self.source, self.line, self.column if self.line is not None else None)
        where = ":".join(str(part) for part in place if part is not None)
        return f"{where}: {self.message}"


@dataclass(frozen=True, slots=True)
class Skipped:
    """A source, or one document of it (`document`, from 1), not judged, and why: `validate`'s
    note."""

    source: str
    reason: str
    document: int | None = None

    def __str__(self) -> str:
        where = self.source if self.document is None else f"{self.source}:{self.document}"
        return f"{where}: not judged: {self.reason}"


def read_all(
    paths: Sequence[str],
    exclude: Sequence[str] = (),
    skip: Callable[[str], str | None] | None = None,
) -> Iterator[Document | ReadError | Skipped]:
    """Each document under `paths` as soon as it is parsed, so a caller keeps only what it needs
    of each node tree (all at once cost time and memory: bench/validate/run.py). What the
    `exclude` globs match is left out silently (a directory is not entered); a file `skip`
    gives a reason for is not read."""
    for path in paths:
        if path != STDIN and os.path.isdir(path):
            for found in _walk(path, exclude):
                yield from _read_unless_skipped(found, skip)
        elif path != STDIN and exclude and excluded(path, exclude):
            continue
        elif path == STDIN or os.path.exists(path):
            yield from _read_unless_skipped(path, skip)
        else:
            yield ReadError(path, "no such file or directory")


def _read_unless_skipped(
    path: str, skip: Callable[[str], str | None] | None
) -> Iterator[Document | ReadError | Skipped]:
    reason = skip(path) if skip is not None and path != STDIN else None
    if reason is None:
        yield from read_documents(path)
    else:
        yield Skipped(path, reason)


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


def _walk(top: str, exclude: Sequence[str] = ()) -> list[str]:
    """The manifests below `top` in a stable order, dot-directories and what `exclude`
    matches skipped."""
    found: list[str] = []
    for root, dirs, files in os.walk(top):
        dirs[:] = [
            d for d in dirs
            if not d.startswith(".") and not (exclude and excluded(os.path.join(root, d), exclude))
        ]  # fmt: skip
        found += [
            path
            for path in (os.path.join(root, n) for n in files if n.endswith(MANIFEST_SUFFIXES))
            if not (exclude and excluded(path, exclude))
        ]
    return sorted(found, key=lambda path: Path(os.path.relpath(path, top)).parts)


def read_documents(source: str) -> Iterator[Document | ReadError]:
    """Every document of one source; on a parse error, the documents before it, then the error."""
    try:
        raw = _read_bytes(source)
    except OSError as err:
        yield ReadError(source, f"cannot read: {err.strerror or err}")
        return
    if len(raw) > MAX_SOURCE_BYTES:
        yield ReadError(source, f"larger than {MAX_SOURCE_BYTES // 2**20} MiB: split it")
        return
    if b"\x00" in raw:
        yield ReadError(source, "not a text file (contains NUL bytes)")
        return
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        yield ReadError(source, f"not UTF-8 text (invalid byte at offset {err.start})")
        return
    yield from parse_text(source, text)


def parse_text(source: str, text: str) -> Iterator[Document | ReadError]:
    """The documents of `text`, JSON when `source` names a .json file, else YAML."""
    yield from (_parse_json if source.endswith(".json") else _parse_yaml)(source, text)


def excessive_aliasing(root: yaml.Node) -> str | None:
    """Why a document must not be decoded, as go-yaml (kubectl's YAML decoder) refuses alias
    bombs ("billion laughs"): an alias of a node that contains it; or, past 100 values from
    aliases and 1000 in all, more of them from aliases than `_allowed_alias_ratio` allows.
    Counted without expanding anything: each node's expanded size once, then the document in
    order, a node met again being an alias of it (the composer hands both the same node)."""
    sizes = _expanded_sizes(root)
    if sizes is None:
        return "an alias refers to a node that contains it"
    values = aliases = 0
    met: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in met:
            values += sizes[id(node)]
            aliases += sizes[id(node)]
            if aliases > 100 and values > 1000 and aliases / values > _allowed_alias_ratio(values):
                return f"excessive aliasing ({aliases} of {values} values from aliases)"
            continue
        met.add(id(node))
        values += 1
        stack.extend(reversed(_children(node)))
    return None


def _expanded_sizes(root: yaml.Node) -> dict[int, int] | None:
    """Each node's value count with aliases expanded (post-order, no recursion); None when a
    node contains itself."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            on_path.discard(id(node))
            sizes[id(node)] = 1 + sum(sizes[id(child)] for child in _children(node))
            continue
        if id(node) in sizes:
            continue
        if id(node) in on_path:
            return None
        on_path.add(id(node))
        stack.append((node, True))
        for child in _children(node):
            if id(child) in on_path:
                return None
            if id(child) not in sizes:
                stack.append((child, False))
    return sizes


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _allowed_alias_ratio(values: int) -> float:
    """go-yaml's allowedAliasRatio: 99 % up to 400k values, 10 % from 4M, linear between."""
    low, high = 400_000, 4_000_000
    if values <= low:
        return 0.99
    if values >= high:
        return 0.10
    return 0.99 - 0.89 * (values - low) / (high - low)


def _read_bytes(source: str) -> bytes:
    """At most one byte past the limit: a huge file is not read whole to be refused."""
    if source == STDIN:
        return sys.stdin.buffer.read(MAX_SOURCE_BYTES + 1)
    with open(source, "rb") as handle:
        return handle.read(MAX_SOURCE_BYTES + 1)


def _names(text: str) -> bool:
    return any(kind in text for kind in DECLARING_KINDS)


def _parse_json(name: str, text: str) -> Iterator[Document | ReadError]:
    try:
        content = orjson.loads(text)
    except orjson.JSONDecodeError as err:
        yield ReadError(name, f"cannot parse JSON: {err.msg}", err.lineno, err.colno, _names(text))
        return
    try:  # JSON is YAML: its node tree places problems, while orjson decodes it
        node: yaml.Node | None = yaml.compose(text, Loader=_BaseLoader)
    except (yaml.YAMLError, RecursionError):
        node = None
    yield Document(name, 1, content, node, text)


def _parse_yaml(name: str, text: str) -> Iterator[Document | ReadError]:
    loader = _ManifestLoader(text)
    index = 0
    try:
        # yaml.load_all's own loop, keeping each document's node tree for positions
        while loader.check_node():
            node = loader.get_node()
            index += 1
            if node is not None and (excess := excessive_aliasing(node)) is not None:
                line = node.start_mark.line + 1
                message = f"cannot parse YAML: document {index}: {excess}"
                yield ReadError(name, message, line, names_a_kind=_names(text))
                return
            yield Document(name, index, loader.construct_document(node), node, text)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (None, None)
        problem = err.problem or err.context or "invalid YAML"
        yield ReadError(name, f"cannot parse YAML: {problem}", line, column, _names(text))
    except yaml.YAMLError as err:
        yield ReadError(name, f"cannot parse YAML: {err}", names_a_kind=_names(text))
    except RecursionError:
        yield ReadError(name, "cannot parse YAML: nesting too deep", names_a_kind=_names(text))
    finally:
        loader.dispose()
