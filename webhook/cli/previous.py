"""`validate --previous PATH...`: what the change from the previous manifests does (issue 17).

The previous versions (for example a checkout of the target branch) are read
like the manifests themselves; every FeedbackStore present in both, matched by
namespace and name, is compared with the same pure function the webhook uses
on UPDATE (`webhook.rules.changes`), and said with the same sentences, at the
changed value in the new manifest. A store present before and gone now is a
warning of its own, where it stood in the previous one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import yaml

from webhook.cli.manifest_files import Document, ReadError, objects, read_all
from webhook.cli.positions import Position, locate
from webhook.cli.validate_report import ChangeWarning
from webhook.rules.change_messages import change_sentence
from webhook.rules.changes import changed_fields, spec_changes
from webhook.rules.manifest import is_feedbackstore

DELETED: Final = (
    "FeedbackStore deleted: the agents that reference it lose their store, and its scores "
    "their gate"
)


def change_warnings(
    current: Sequence[Document], previous: Sequence[str]
) -> tuple[list[ChangeWarning], list[ReadError]]:
    """A warning per change from the `previous` paths to the `current` documents (as
    `validate` read them: stdin is read once), at the changed value, and the unreadable
    previous inputs."""
    now = _by_label(current)
    read: list[Document] = []
    errors: list[ReadError] = []
    for each in read_all(previous):
        if isinstance(each, ReadError):
            errors.append(each)
        else:
            read.append(each)
    warnings: list[ChangeWarning] = []
    for label, (old_document, old_node, old) in _by_label(read).items():
        if label not in now:
            place = _position(old_node, "")
            warnings.append(ChangeWarning(old_document.source, place, label, "", DELETED))
            continue
        document, node, new = now[label]
        spec = new.get("spec")
        changes = spec_changes(old.get("spec"), spec)
        for change, field in zip(changes, changed_fields(changes, spec), strict=True):
            place = _position(node, field)
            warnings.append(
                ChangeWarning(document.source, place, label, field, change_sentence(change))
            )
    return warnings, errors


def _position(node: yaml.Node | None, field: str) -> Position:
    return Position(1, 1) if node is None else locate(node, field)


def _by_label(
    documents: Sequence[Document],
) -> dict[str, tuple[Document, yaml.Node | None, dict[str, Any]]]:
    """Each named FeedbackStore by `namespace/name` (the first of a name wins), with its node."""
    found: dict[str, tuple[Document, yaml.Node | None, dict[str, Any]]] = {}
    for document in documents:
        for store, node in objects(document.content, document.node):
            if isinstance(store, dict) and is_feedbackstore(store) and (label := _label(store)):
                found.setdefault(label, (document, node, store))
    return found


def _label(store: dict[str, Any]) -> str | None:
    metadata = store.get("metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    name, namespace = metadata.get("name"), metadata.get("namespace")
    if not isinstance(name, str) or not name:
        return None
    return f"{namespace}/{name}" if isinstance(namespace, str) and namespace else name
