"""`validate --previous PATH...`: what the change from the previous manifests does (issue 17).

The previous versions (for example a checkout of the target branch) are read
like the manifests themselves; every FeedbackStore present in both, matched by
namespace and name, is compared with the same pure function the webhook uses
on UPDATE (`webhook.rules.changes`), and said with the same sentences. A store
present before and gone now is a warning of its own. Kept apart from
`validate.py`, which calls `change_lines` and counts what it returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, NamedTuple

from webhook.cli.manifest_files import Document, ReadError, objects, read_all
from webhook.rules.change_messages import change_sentence
from webhook.rules.changes import spec_changes
from webhook.rules.manifest import is_feedbackstore

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
    now = _indexed(current)
    read, errors = read_all(previous)
    before = _indexed(read)
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


def _indexed(documents: Sequence[Document]) -> dict[Key, Located]:
    found: dict[Key, Located] = {}
    for document in documents:
        for store, _ in objects(document.content, None):
            if isinstance(store, dict) and is_feedbackstore(store) and (key := _key(store)):
                found.setdefault(key, Located(document.source, document.index, store))
    return found


def _key(store: dict[str, Any]) -> Key | None:
    metadata = store.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    if not isinstance(name, str) or not name:
        return None
    return (namespace if isinstance(namespace, str) else "", name)
