"""The docs' pages and their sections, as the tests that run the docs verbatim read them.

A transcript, a flag table or a snippet lives on one page of docs/ under one heading; the
tests that hold it to what the code or the real server prints find it here, so a page
renamed or a heading moved is changed in one place."""

from __future__ import annotations

import re
from pathlib import Path

from tests.docs.repo_files import ROOT

DOCS = ROOT / "docs"
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^(#{1,6}) ")


def page(name: str) -> Path:
    """docs/<name>, which must exist."""
    path = DOCS / name
    assert path.is_file(), f"no page {path}"
    return path


def section_of(text: str, heading: str) -> str:
    """From the line `heading` (with its #s) to the next heading of its level or above, code
    blocks skipped (a `# comment` in a console block is not a heading)."""
    start = text.index(f"{heading}\n")
    level = len(heading) - len(heading.lstrip("#"))
    fence: str | None = None
    offset = start + len(heading) + 1
    for line in text[offset:].splitlines(keepends=True):
        fenced = _FENCE.match(line)
        if fence is None and fenced:
            fence = fenced.group(1)[0] * len(fenced.group(1))
        elif fence is not None and fenced and fenced.group(1).startswith(fence):
            fence = None
        elif fence is None and (match := _HEADING.match(line)) and len(match.group(1)) <= level:
            return text[start:offset]
        offset += len(line)
    return text[start:]


def section(name: str, heading: str) -> str:
    """The section `heading` of docs/<name>."""
    return section_of(page(name).read_text(encoding="utf-8"), heading)
