"""Object metadata rules for manifests checked offline.

In a cluster the API server checks `metadata` itself before any webhook runs; offline, nobody
does, so the CLI applies kube-apiserver's own rules with its words (apimachinery's
ValidateObjectMeta): a name, or a generateName to make one, each a DNS-1123 subdomain, every
problem of it said (too long and malformed are two). The server never judges a namespace
named in an object (a missing one is `namespaces "x" not found`); it judges the name of the
Namespace that must exist, a DNS-1123 label, so that is the rule here. Values are shown whole,
as the server shows them. tests/kube/test_metadata_real.py holds every word to the server's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Final

from webhook.rules import api
from webhook.rules.field_errors import Problem, invalid, required, type_invalid
from webhook.rules.field_path import Path

_METADATA = Path("metadata")
_NAME = _METADATA.child("name")
_GENERATE_NAME = _METADATA.child("generateName")
_NAMESPACE = _METADATA.child("namespace")
_LABEL_FMT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT = rf"{_LABEL_FMT}(\.{_LABEL_FMT})*"
_SUBDOMAIN = re.compile(_SUBDOMAIN_FMT)
_LABEL = re.compile(_LABEL_FMT)
NAME_REQUIRED: Final = "name or generateName is required"
NO_DOTS: Final = "must not contain dots"


def _regex_error(what: str, fmt: str, *examples: str) -> str:
    """apimachinery's RegexError, spaces and all (each example is followed by `, `)."""
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{what} (e.g. {shown}regex used for validation is '{fmt}')"


SUBDOMAIN_MSG: Final = _regex_error(
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character",
    _SUBDOMAIN_FMT,
    "example.com",
)
LABEL_MSG: Final = _regex_error(
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character",
    _LABEL_FMT,
    "my-name",
    "123-abc",
)


def too_long(limit: int) -> str:
    """apimachinery's MaxLenError."""
    return f"must be no more than {limit} characters"


def validate_metadata(metadata: object) -> list[Problem]:
    """Problems with `metadata`, in kube-apiserver's order: generateName, name, namespace."""
    if metadata is None:
        return [required(_NAME, NAME_REQUIRED)]
    if type(metadata) is not dict:
        return [type_invalid(_METADATA, metadata, "object")]
    problems: list[Problem] = []
    generate_name = metadata.get("generateName")
    if generate_name is not None and generate_name != "":
        problems += _checked(generate_name, _GENERATE_NAME, _subdomain, prefix=True)
    name = metadata.get("name")
    if name is not None and name != "":
        problems += _checked(name, _NAME, _subdomain)
    elif not generate_name:
        problems.append(required(_NAME, NAME_REQUIRED))
    namespace = metadata.get("namespace")
    if namespace is not None and namespace != "":
        problems += _checked(namespace, _NAMESPACE, _namespace_name)
    return problems


def _checked(
    value: object, path: Path, rule: Callable[[str], Iterator[str]], *, prefix: bool = False
) -> Iterator[Problem]:
    if type(value) is not str:
        yield type_invalid(path, value, "string")
        return
    for message in rule(_masked(value) if prefix else value):
        yield invalid(path, value, message, whole=True)


def _masked(prefix: str) -> str:
    """apimachinery's maskTrailingDash: a prefix's trailing dash, and the character before it,
    stand in as `a`, so the suffix the server appends makes a valid name of it."""
    return prefix[:-2] + "a" if len(prefix) > 1 and prefix.endswith("-") else prefix


def _subdomain(value: str) -> Iterator[str]:
    """apimachinery's IsDNS1123Subdomain: the length and the form, each said."""
    if len(value) > api.MAX_OBJECT_NAME_LENGTH:
        yield too_long(api.MAX_OBJECT_NAME_LENGTH)
    if _SUBDOMAIN.fullmatch(value) is None:
        yield SUBDOMAIN_MSG


def _namespace_name(value: str) -> Iterator[str]:
    """A Namespace's name as kube-apiserver judges it: a label; a subdomain with dots is told
    so in as many words."""
    if len(value) > api.MAX_NAMESPACE_LENGTH:
        yield too_long(api.MAX_NAMESPACE_LENGTH)
    if _LABEL.fullmatch(value) is None:
        yield NO_DOTS if _SUBDOMAIN.fullmatch(value) is not None else LABEL_MSG
