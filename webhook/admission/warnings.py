"""Warnings as kube-apiserver relays them: short, few, and without a prefix.

kubectl prints each as `Warning: <text>`, so a text carrying its own prefix
would read twice. kube-apiserver cuts items over 256 characters and ignores
warnings once 4096 characters have been added from all sources, so the list is
bounded here, keeping the first ones whole and counting the rest.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from webhook import replies
from webhook.rules.summary import fit_lines
from webhook.text import MAX_WARNING_LENGTH, cut

# Leave room under kube-apiserver's 4096-character total for other admission plugins.
MAX_WARNINGS_TOTAL: Final = 2048
_TAIL_RESERVE: Final = 32


def bounded(texts: Iterable[str]) -> tuple[str, ...]:
    """Each warning at most MAX_WARNING_LENGTH long, all together at most MAX_WARNINGS_TOTAL."""
    lines = [cut(text, MAX_WARNING_LENGTH) for text in texts]
    if sum(map(len, lines)) <= MAX_WARNINGS_TOTAL:
        return tuple(lines)
    kept, dropped = fit_lines(lines, MAX_WARNINGS_TOTAL - _TAIL_RESERVE, separator="")
    kept.append(replies.more_warnings(dropped))
    return tuple(kept)
