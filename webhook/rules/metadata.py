"""Object metadata rules for manifests checked offline.

In a cluster the API server checks `metadata` itself before any webhook runs;
offline, nobody does, so the CLI applies the same name rules as apimachinery's
IsDNS1123Subdomain / IsDNS1123Label, with their messages.
"""

from __future__ import annotations

import re

from webhook.rules import api, messages
from webhook.rules.field_errors import Problem, invalid, required, too_long, type_invalid
from webhook.rules.field_path import Path

_METADATA = Path("metadata")
_NAME = _METADATA.child("name")
_NAMESPACE = _METADATA.child("namespace")
_SUBDOMAIN_FMT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_LABEL_FMT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = re.compile(_SUBDOMAIN_FMT)
_LABEL = re.compile(_LABEL_FMT)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    f"regex used for validation is '{_SUBDOMAIN_FMT}')"
)
_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name', or '123-abc', "
    f"regex used for validation is '{_LABEL_FMT}')"
)


def validate_metadata(metadata: object, kind: str = api.KIND) -> list[Problem]:
    """Problems with `metadata.name` (required) and `metadata.namespace` (optional)."""
    if metadata is None:
        return [required(_NAME, messages.name_required(kind))]
    if type(metadata) is not dict:
        return [type_invalid(_METADATA, metadata, "object")]
    problems: list[Problem] = []
    name = metadata.get("name")
    if name is None or name == "":
        problems.append(required(_NAME, messages.name_required(kind)))
    else:
        problems.extend(_check_dns(name, _NAME, api.MAX_OBJECT_NAME_LENGTH, subdomain=True))
    namespace = metadata.get("namespace")
    if namespace is not None and namespace != "":
        problems.extend(
            _check_dns(namespace, _NAMESPACE, api.MAX_NAMESPACE_LENGTH, subdomain=False)
        )
    return problems


def _check_dns(value: object, path: Path, limit: int, *, subdomain: bool) -> list[Problem]:
    if type(value) is not str:
        return [type_invalid(path, value, "string")]
    if len(value) > limit:
        return [too_long(path, limit)]
    pattern, message = (_SUBDOMAIN, _SUBDOMAIN_MSG) if subdomain else (_LABEL, _LABEL_MSG)
    if pattern.fullmatch(value) is None:
        return [invalid(path, value, message)]
    return []
