"""`validate --previous PATH...`: what the change from the previous manifests does (issue 17).

The previous versions (for example a checkout of the target branch) are read
like the manifests themselves; every FeedbackStore present in both, matched by
namespace and name, is compared with the same pure function the webhook uses
on UPDATE (`webhook.rules.changes`), and said with the same sentences. A store
present before and gone now is a warning of its own. Kept apart from
`validate.py`, which calls `change_lines` and counts what it returns.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Final, NamedTuple

from webhook.cli.manifest_files import Document, ReadError, expand_paths, read_documents
from webhook.rules.change_messages import change_sentence
from webhook.rules.changes import spec_changes
from webhook.rules.manifest import is_feedbackstore, list_items

DELETED: Final = (
    "FeedbackStore deleted: the agents that reference it lose their store, and its scores "
    "their gate"
)


class Located(NamedTuple):
    """A FeedbackStore manifest and where it was read."""

    source: str
    document: int
    content: dict[str, Any]


Key = tuple[str, str]  # (namespace, name)


def change_lines(
    current: Sequence[Document], previous: Sequence[str]
) -> tuple[list[str], list[ReadError]]:
    """One `source:doc: ns/name: spec: warning: ...` line per change from the `previous` paths
    to the `current` documents (as `validate` read them: stdin is read once), and the
    unreadable previous inputs."""
    errors: list[ReadError] = []
    now = _indexed(current)
    before = _indexed(_read(previous, errors))
    lines: list[str] = []
    for key, old in before.items():
        new = now.get(key)
        if new is None:
            lines.append(f"{_where(old, key)}: warning: {DELETED}")
            continue
        old_spec, new_spec = old.content.get("spec"), new.content.get("spec")
        for change in spec_changes(old_spec, new_spec):
            lines.append(f"{_where(new, key)}: spec: warning: {change_sentence(change)}")
    return lines, errors


def _where(located: Located, key: Key) -> str:
    namespace, name = key
    label = f"{namespace}/{name}" if namespace else name
    return f"{located.source}:{located.document}: {label}"


def _read(paths: Sequence[str], errors: list[ReadError]) -> list[Document]:
    read: list[Document] = []
    for path in expand_paths(paths):
        if isinstance(path, ReadError):
            errors.append(path)
            continue
        documents, error = read_documents(path)
        if error is not None:
            errors.append(error)
        read.extend(documents)
    return read


def _indexed(documents: Sequence[Document]) -> dict[Key, Located]:
    found: dict[Key, Located] = {}
    for document in documents:
        for store in _feedbackstores(document.content):
            key = _key(store)
            if key is not None:
                found.setdefault(key, Located(document.source, document.index, store))
    return found


def _feedbackstores(content: object) -> Iterator[dict[str, Any]]:
    if not isinstance(content, dict):
        return
    items = list(list_items(content))
    if items:
        for item in items:
            yield from _feedbackstores(item)
    elif is_feedbackstore(content):
        yield content


def _key(store: dict[str, Any]) -> Key | None:
    metadata = store.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    if not isinstance(name, str) or not name:
        return None
    return (namespace if isinstance(namespace, str) else "", name)
