"""Which decoded documents declare a FeedbackStore, and their full offline verdict.

Two forms do (`forms`): a FeedbackStore, and an AgentDeployment with
`spec.feedback`; an agent without it declares nothing and is skipped
like any other kind. Offline there is no API server to check `apiVersion`,
`kind` or `metadata`, so a manifest's verdict adds those checks to the
declaration's. Pure: documents in, verdicts out.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from webhook.rules.field_errors import Problem, not_supported, required
from webhook.rules.field_path import Path
from webhook.rules.forms import INLINE, STORE, Form
from webhook.rules.metadata import validate_metadata
from webhook.rules.verdict import Unjudged, Verdict, unknown_fields

_KNOWN_TOP_LEVEL = frozenset({"apiVersion", "kind", "metadata", "spec", "status"})
_API_VERSION = Path("apiVersion")


@dataclass(frozen=True, slots=True)
class ManifestVerdict:
    namespace: str | None
    name: str | None
    verdict: Verdict
    kind: str = STORE.kind


def _is(form: Form, doc: dict[str, Any]) -> bool:
    """Of `form`'s kind, in any version of its group (a wrong version is a problem, not a skip)."""
    api_version = doc.get("apiVersion")
    group = api_version.partition("/")[0] if isinstance(api_version, str) else None
    return doc.get("kind") == form.kind and group in (form.group, None)


def is_feedbackstore(doc: dict[str, Any]) -> bool:
    return _is(STORE, doc)


def is_agentdeployment(doc: dict[str, Any]) -> bool:
    """An AgentDeployment, whether or not it declares `spec.feedback`."""
    return _is(INLINE, doc)


def declaring_form(doc: dict[str, Any]) -> Form | None:
    """The form of a document that declares a FeedbackStore; None for anything else."""
    if is_feedbackstore(doc):
        return STORE
    if is_agentdeployment(doc) and INLINE.declaration(doc) is not None:
        return INLINE
    return None


def list_items(doc: dict[str, Any]) -> Iterator[object]:
    """Items of a `kind: List` (or `FooList`) document, as `kubectl get -o yaml` writes them."""
    kind = doc.get("kind")
    items = doc.get("items")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(items, list):
        yield from items


def check_manifest(doc: dict[str, Any], form: Form = STORE) -> ManifestVerdict:
    """Verdict for a manifest of `form`: identity, metadata and the declaration, all problems
    at once."""
    head: list[Problem] = []
    api_version = doc.get("apiVersion")
    if api_version is None:
        head.append(required(_API_VERSION, f"expected {' or '.join(form.api_versions)}"))
    elif api_version not in form.api_versions:
        head.append(not_supported(_API_VERSION, api_version, form.api_versions))
    metadata = doc.get("metadata")
    head.extend(validate_metadata(metadata))
    top = list(unknown_fields(doc, _KNOWN_TOP_LEVEL, Path()))  # a few named, the rest counted
    head.extend(finding for finding in top if isinstance(finding, Problem))
    counted = sum(finding.count for finding in top if isinstance(finding, Unjudged))
    spec_verdict = form.verdict(doc)
    verdict = Verdict(
        (*head, *spec_verdict.problems), spec_verdict.warnings, spec_verdict.omitted + counted
    )
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return ManifestVerdict(
        namespace if isinstance(namespace, str) else None,
        name if isinstance(name, str) else None,
        verdict,
        form.kind,
    )
