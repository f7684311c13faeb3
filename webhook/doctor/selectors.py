"""Label selectors as kube-apiserver evaluates a webhook's `namespaceSelector`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def selects(selector: object, labels: Mapping[str, str]) -> bool:
    """True when `labels` satisfy `selector`; a missing or empty selector selects everything.

    An operator we do not know selects nothing, as apimachinery refuses such a
    selector (and the API server would not have stored it).
    """
    if not isinstance(selector, dict):
        return True
    match_labels = selector.get("matchLabels") or {}
    if any(labels.get(key) != value for key, value in match_labels.items()):
        return False
    return all(_requirement(r, labels) for r in selector.get("matchExpressions") or ())


def _requirement(requirement: Any, labels: Mapping[str, str]) -> bool:
    if not isinstance(requirement, dict):
        return False
    key, operator = requirement.get("key"), requirement.get("operator")
    values = requirement.get("values") or ()
    if not isinstance(key, str):
        return False
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    return False
