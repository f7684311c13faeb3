"""Relative links and heading anchors of Markdown files, read as GitHub renders them.

The docs link to one another by path and `#anchor`; a heading renamed or a file moved
breaks such a link silently on GitHub. These pure functions find each link and each
anchor a file offers, so a test can hold every relative link to a file that exists
and every anchor to a heading that is there.

GitHub's anchors (the slugger of github-markdown, as `github-slugger` implements it):
the heading's rendered text, lowercased; every character that is not a letter, a
digit, a space, `-` or `_` dropped; each space turned into `-`; a slug already taken
in the same file gets `-1`, `-2`, ... in document order.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_INLINE_CODE = re.compile(r"(`+)(.+?)\1")
# [text](target) or ![alt](target "title"); the target may be wrapped in <>.
_INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)"
)
_REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
_HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"", re.IGNORECASE)
_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)
# What rendering drops from a heading before slugging: link targets, emphasis marks.
_LINK_TEXT = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")


@dataclass(frozen=True)
class Link:
    """A relative link as written: its line, the path part (may be empty) and the anchor."""

    line: int
    path: str
    anchor: str | None


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading's text, before duplicates are numbered."""
    text = _LINK_TEXT.sub(r"\1", heading)
    text = _INLINE_CODE.sub(lambda m: m.group(2), text)
    text = text.strip().lower()
    kept = "".join(c for c in text if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


def _prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """Lines outside fenced code blocks, numbered from 1: code is not rendered as links."""
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        match = _FENCE.match(line)
        if fence is None and match:
            fence = match.group(1)[0] * len(match.group(1))
        elif fence is not None and match and match.group(1).startswith(fence):
            fence = None
        elif fence is None:
            yield number, line


def anchors(text: str) -> set[str]:
    """Every anchor a Markdown file offers: its headings' slugs, numbered as GitHub
    numbers repeats, and explicit `<a name=...>` / `<a id=...>` anchors."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in _prose_lines(text):
        found.update(_HTML_ANCHOR.findall(line))
        heading = _HEADING.match(line)
        if not heading:
            continue
        base = slug(heading.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def relative_links(text: str) -> Iterator[Link]:
    """Every link that points into the repository: not a URL, not inside code."""
    for number, line in _prose_lines(text):
        prose = _INLINE_CODE.sub("", line)
        targets = [m.group(1) for m in _INLINE_LINK.finditer(prose)]
        reference = _REFERENCE.match(prose)
        if reference:
            targets.append(reference.group(1))
        for target in targets:
            if not target or _EXTERNAL.match(target):
                continue
            path, _, anchor = target.partition("#")
            yield Link(number, path, anchor if "#" in target else None)


def resolve(source: PurePosixPath, link: Link) -> PurePosixPath:
    """The repository path a link from `source` names (itself for `#anchor` alone)."""
    if not link.path:
        return source
    if link.path.startswith("/"):
        return PurePosixPath(link.path.lstrip("/"))
    parts: list[str] = []
    for part in (source.parent / link.path).parts:
        if part == ".." and parts and parts[-1] != "..":
            parts.pop()
        elif part != ".":
            parts.append(part)
    return PurePosixPath(*parts)
