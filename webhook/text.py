"""Text for people, kept short: how every message cuts, counts and lists.

The webhook's warnings, the status writer's conditions, the CLI and the doctor
all bound what they echo back (a name, a value, a list of agents), so a
hostile or merely large object still gets an answer that fits kubectl's line.
The ways of doing that are stated here once, so that every message cuts with
the same ellipsis, counts with the same plural and ends a list the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

ELLIPSIS: Final = "..."

# Kubernetes' guidance for an admission warning's length (kube-apiserver itself cuts at 256):
# what kubectl prints as `Warning: <text>` stays on one line.
MAX_WARNING_LENGTH: Final = 120


def cut(text: str, limit: int) -> str:
    """`text` when it has at most `limit` characters, else cut so that, ellipsis included, it has
    `limit` (the ellipsis alone when `limit` leaves no room for anything else)."""
    if len(text) <= limit:
        return text
    return text[: max(limit - len(ELLIPSIS), 0)] + ELLIPSIS


def plural(noun: str, count: int) -> str:
    """`noun` as it reads after `count`: English's regular plural, which every noun we count
    (problems, warnings, kinds such as AgentDeployment) takes."""
    return noun if count == 1 else f"{noun}s"


def counted(count: int, noun: str) -> str:
    """`1 problem`, `2 problems`: every count a user reads, with its noun."""
    return f"{count} {plural(noun, count)}"


def and_more(count: int, noun: str = "") -> str:
    """`and 3 more` (or `and 3 more problems` with a noun): the tail of a list cut short."""
    return f"and {counted(count, f'more {noun}')}" if noun else f"and {count} more"


def named(names: Sequence[str], total: int, separator: str = ", ") -> str:
    """`a, b and 3 more`: the names shown, then how many of `total` were left out, if any."""
    shown = separator.join(names)
    rest = total - len(names)
    return f"{shown} {and_more(rest)}" if rest > 0 else shown
