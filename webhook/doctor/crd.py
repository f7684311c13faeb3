"""Is the FeedbackStore CRD installed, Established, and serving the version we speak?"""

from __future__ import annotations

from typing import Any

from webhook.doctor.result import CheckResult, fail, ok, refused
from webhook.doctor.snapshot import Fetched, Unreadable
from webhook.kube.objects import find_condition
from webhook.rules import api

NAME = "crd"
_INSTALL = "kubectl apply --server-side -k manifests/crd"


def check_crd(crd: Fetched) -> CheckResult:
    if isinstance(crd, Unreadable):
        return refused(NAME, f"read CRD {api.CRD_NAME}", crd, "get on customresourcedefinitions")
    if crd is None:
        return fail(NAME, f"CRD {api.CRD_NAME} is not installed", _INSTALL)
    established = find_condition(crd, "Established") or {}
    if established.get("status") != "True":
        accepted = find_condition(crd, "NamesAccepted") or {}
        why = established.get("message") or accepted.get("message")
        return fail(
            NAME,
            f"CRD {api.CRD_NAME} is not Established" + (f": {why}" if why else ""),
            f"kubectl describe crd {api.CRD_NAME}  (a name conflict or a bad schema shows there)",
        )
    versions = _versions(crd)
    served = versions.get(api.VERSION)
    if served is None or not served.get("served"):
        listed = ", ".join(sorted(versions)) or "none"
        return fail(
            NAME,
            f"CRD {api.CRD_NAME} does not serve {api.VERSION} (versions: {listed})",
            _INSTALL,
        )
    return ok(NAME, f"{api.CRD_NAME} Established; {_describe(versions)}{_cel_note(served)}")


def _versions(crd: dict[str, Any]) -> dict[str, dict[str, Any]]:
    spec = crd.get("spec")
    listed = spec.get("versions") if isinstance(spec, dict) else None
    return {
        item["name"]: item
        for item in (listed if isinstance(listed, list) else ())
        if isinstance(item, dict) and isinstance(item.get("name"), str)
    }


def _describe(versions: dict[str, dict[str, Any]]) -> str:
    parts = []
    for name, version in sorted(versions.items()):
        flags = [flag for flag in ("served", "storage") if version.get(flag)]
        parts.append(f"{name} ({', '.join(flags) or 'not served'})")
    return "versions " + ", ".join(parts)


def _cel_note(version: dict[str, Any]) -> str:
    """Whether the cross-field rules live in the CRD too, or only in the webhook."""
    if _has_key(version.get("schema"), "x-kubernetes-validations"):
        return "; cross-field rules in CEL"
    return "; no CEL rules: the webhook alone enforces the cross-field rules"


def _has_key(node: object, key: str) -> bool:
    if isinstance(node, dict):
        return key in node or any(_has_key(value, key) for value in node.values())
    if isinstance(node, list):
        return any(_has_key(item, key) for item in node)
    return False
