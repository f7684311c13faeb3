"""The source file kustomize built an object from, when the kustomization asks it to say.

With `buildMetadata: [originAnnotations]`, `kustomize build` puts
`config.kubernetes.io/origin` on every object: a small YAML mapping whose
`path` is the resource file relative to the kustomization (and `repo`/`ref`
for a remote base). Positions in a built stream point at text no one edits;
this names the file that someone does.
"""

from __future__ import annotations

from typing import Any

import yaml

ORIGIN_ANNOTATION = "config.kubernetes.io/origin"


def origin(manifest: dict[str, Any]) -> str | None:
    metadata = manifest.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    text = annotations.get(ORIGIN_ANNOTATION) if isinstance(annotations, dict) else None
    if not isinstance(text, str):
        return None
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    path = value.get("path") if isinstance(value, dict) else None
    if not isinstance(path, str):
        return None
    repo = value.get("repo")
    return f"{repo}//{path}" if isinstance(repo, str) and repo else path
