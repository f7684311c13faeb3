"""Which decoded documents are FeedbackStores, and their full offline verdict.

Offline there is no API server to check `apiVersion`, `kind` or `metadata`, so
a manifest's verdict adds those checks to the spec verdict. Pure: documents in,
verdicts out.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from webhook.rules import api
from webhook.rules.field_errors import Problem, not_supported, required
from webhook.rules.metadata import validate_metadata
from webhook.rules.verdict import Verdict, unknown_fields, validate_spec

_KNOWN_TOP_LEVEL = frozenset({"apiVersion", "kind", "metadata", "spec", "status"})


@dataclass(frozen=True, slots=True)
class ManifestVerdict:
    namespace: str | None
    name: str | None
    verdict: Verdict


def is_feedbackstore(doc: dict[str, Any]) -> bool:
    """A FeedbackStore of any version of our group (a wrong version is a problem, not a skip)."""
    api_version = doc.get("apiVersion")
    group = api_version.partition("/")[0] if isinstance(api_version, str) else None
    return doc.get("kind") == api.KIND and group in (api.GROUP, None)


def list_items(doc: dict[str, Any]) -> Iterator[object]:
    """Items of a `kind: List` (or `FooList`) document, as `kubectl get -o yaml` writes them."""
    kind = doc.get("kind")
    items = doc.get("items")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(items, list):
        yield from items


def check_manifest(doc: dict[str, Any]) -> ManifestVerdict:
    """Verdict for a FeedbackStore manifest: identity, metadata and spec, all problems at once."""
    head: list[Problem] = []
    api_version = doc.get("apiVersion")
    if api_version is None:
        head.append(required("apiVersion", f"expected {api.API_VERSION}"))
    elif api_version != api.API_VERSION:
        head.append(not_supported("apiVersion", api_version, (api.API_VERSION,)))
    metadata = doc.get("metadata")
    head.extend(validate_metadata(metadata))
    head.extend(unknown_fields(doc, _KNOWN_TOP_LEVEL, ""))
    spec_verdict = validate_spec(doc.get("spec"))
    verdict = Verdict((*head, *spec_verdict.problems), spec_verdict.warnings, spec_verdict.omitted)
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return ManifestVerdict(
        namespace if isinstance(namespace, str) else None,
        name if isinstance(name, str) else None,
        verdict,
    )
