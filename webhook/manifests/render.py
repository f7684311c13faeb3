"""YAML for generated manifests: stable key order, readable, with a provenance header."""

from __future__ import annotations

from typing import Any

import yaml


class _Dumper(yaml.SafeDumper):
    """SafeDumper that indents list items under their key, as kubectl and kustomize print."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)

    def ignore_aliases(self, data: Any) -> bool:
        """Repeat shared values in full: anchors in a manifest only confuse readers and tools."""
        return True


def render_yaml(document: dict[str, Any], *, header: str = "") -> str:
    body = yaml.dump(
        document,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=10_000,
    )
    lines = [f"# {line}".rstrip() for line in header.splitlines()]
    return "\n".join([*lines, body]) if lines else body
