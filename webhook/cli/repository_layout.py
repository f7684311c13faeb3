"""What in a repository `validate` must not judge as a whole object, known by where it stands.

A pre-commit hook hands `validate` every staged YAML file of a repository. Some are no
manifest at all until a tool makes one of them: a Helm chart's templates are Go templates
(YAML only once `helm template` renders them), and a kustomize patch is a part of an object,
whole only in the overlay `kustomize build` makes. Judged as they stand, a template fails to
parse and a patch of a store lacks the sources its base declares: the hook would fail on files
that are right. So these are skipped with a note that says where they are judged instead (the
rendered chart, the built overlay), and `--exclude` skips what the user names."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Final

import yaml

# The names kustomize looks for in a directory, in its order.
KUSTOMIZATION_NAMES: Final = ("kustomization.yaml", "kustomization.yml", "Kustomization")
# A kustomization's fields whose entries name patch files: `patches: [{path: ...}]`,
# `patchesJson6902: [{path: ...}]` and `patchesStrategicMerge: [path, ...]` (deprecated, still
# read by kustomize v5; an entry may be the patch itself, inline, rather than a path).
_PATCH_FIELDS: Final = ("patches", "patchesJson6902", "patchesStrategicMerge")
# Keys only a strategic-merge patch holds (apimachinery's strategicpatch directives): a
# document with one is a part of an object wherever it is used from.
PATCH_DIRECTIVES: Final = (
    "$patch",
    "$retainKeys",
    "$setElementOrder/",
    "$deleteFromPrimitiveList/",
)
_VALIDATE: Final = "feedbackstore-webhook validate -"


def excluded(path: str, globs: Sequence[str]) -> bool:
    """`--exclude GLOB`: the glob matches the path as given or walked (`*` spans `/`, as in
    fnmatch), with or without a leading `./`, or its last part (a file or directory name)."""
    normal = os.path.normpath(path)
    return any(
        fnmatch.fnmatchcase(candidate, glob)
        for glob in globs
        for candidate in (path, normal, os.path.basename(normal))
    )


def chart_template(path: str) -> str | None:
    """Why `path` is not judged when it is a template of a Helm chart (a file under
    `CHART/templates/`, where `CHART/Chart.yaml` is); None otherwise."""
    absolute = os.path.abspath(path)
    if f"{os.sep}templates{os.sep}" not in absolute:
        return None  # the common case, decided without a look at the disk
    parts = Path(absolute).parts
    for index in range(len(parts) - 2, 0, -1):
        if parts[index] != "templates":
            continue
        chart = Path(*parts[:index])
        if (chart / "Chart.yaml").is_file():
            shown = os.path.relpath(chart) if not os.path.isabs(path) else str(chart)
            return (
                f"a Helm template of the chart {shown}: not a manifest until helm renders it; "
                f"judge what it renders: helm template {shown} | {_VALIDATE}"
            )
    return None


def partial(obj: object) -> str | None:
    """Why a document is a part of an object, not one: it holds a strategic-merge directive."""
    found = next(_directives(obj), None)
    if found is None:
        return None
    return (
        f"a strategic-merge patch ({found}), not a whole object: judge the object it patches, "
        f"in the built overlay: kubectl kustomize OVERLAY | {_VALIDATE}"
    )


def _directives(value: object) -> Iterator[str]:
    """The directive keys anywhere in `value`: only mappings and lists are visited (a store
    is mostly scalars, and every document a pre-commit run judges passes through here)."""
    stack = [value] if isinstance(value, dict | list) else []
    while stack:
        node = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        if isinstance(node, dict):
            yield from (k for k in node if isinstance(k, str) and k[:1] == "$"
                        and k.startswith(PATCH_DIRECTIVES))  # fmt: skip
        stack.extend(child for child in children if isinstance(child, dict | list))


class Patches:
    """The patch files that the kustomizations of the inputs' repositories list, found on the
    first question about a repository and kept for the run. A repository is the nearest
    directory above a file that holds `.git` (where pre-commit runs); outside one, the current
    directory when the file is below it, else the file's own directory."""

    def __init__(self) -> None:
        self._by_root: dict[str, dict[str, str]] = {}
        self._directories: dict[str, tuple[str, str]] = {}  # as given: (real path, root)

    def why(self, source: str) -> str | None:
        """Why `source` is not judged when a kustomization lists it as a patch; None if none
        does."""
        directory, name = os.path.split(source)
        if directory not in self._directories:  # one lookup per directory, not per file
            real = os.path.realpath(directory or os.curdir)
            self._directories[directory] = (real, _root_of(real))
        real, root = self._directories[directory]
        path = os.path.realpath(source) if os.path.islink(source) else os.path.join(real, name)
        if root not in self._by_root:
            self._by_root[root] = _patches_under(root)
        kustomization = self._by_root[root].get(path)
        if kustomization is None:
            return None
        directory = os.path.relpath(os.path.dirname(kustomization))
        return (
            f"a kustomize patch, listed in {os.path.relpath(kustomization)}: a part of an object, "
            f"whole only where it is applied; judge the built overlay: "
            f"kubectl kustomize {directory if _is_kustomization(kustomization) else 'OVERLAY'}"
            f" | {_VALIDATE}"
        )


def _root_of(directory: str) -> str:
    """The repository of a file in `directory` (a real path), as `Patches` says."""
    for parent in (directory, *map(str, Path(directory).parents)):
        if os.path.exists(os.path.join(parent, ".git")):
            return parent
    here = os.path.realpath(os.getcwd())
    return here if directory == here or directory.startswith(here + os.sep) else directory


def _patches_under(root: str) -> dict[str, str]:
    """{patch file's real path: the kustomization that lists it} for every kustomization below
    `root` (dot-directories skipped, as `validate` walks them)."""
    found: dict[str, str] = {}
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in KUSTOMIZATION_NAMES:
            if name in files:
                kustomization = os.path.join(directory, name)
                for patch in _listed_patches(kustomization):
                    found.setdefault(
                        os.path.realpath(os.path.join(directory, patch)), kustomization
                    )
                break
    return found


def _listed_patches(kustomization: str) -> Iterator[str]:
    spec = _load(kustomization)
    for field in _PATCH_FIELDS:
        entries = spec.get(field)
        for entry in entries if isinstance(entries, list) else ():
            path = entry.get("path") if isinstance(entry, dict) else entry
            # an inline strategic-merge patch is YAML text, never a one-line relative path
            if isinstance(path, str) and path and "\n" not in path and ": " not in path:
                yield path


def _is_kustomization(kustomization: str) -> bool:
    """A Kustomization builds by itself; a Component only inside one that names it."""
    return bool(_load(kustomization).get("kind", "Kustomization") != "Component")


def _load(kustomization: str) -> dict[str, Any]:
    try:
        with open(kustomization, encoding="utf-8") as handle:
            spec = yaml.safe_load(handle)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    return spec if isinstance(spec, dict) else {}
