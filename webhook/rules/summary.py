"""Bounded renderings of a verdict.

A huge invalid object must get a readable answer, not a multi-megabyte one:
admission messages, Condition messages (capped at 32768 characters by the API)
and CLI output all show the first problems in full, then count the rest.
"""

from __future__ import annotations

from collections.abc import Sequence

from webhook.rules import messages
from webhook.rules.verdict import Verdict
from webhook.text import cut


def fit_lines(lines: Sequence[str], budget: int, separator: str = "; ") -> tuple[list[str], int]:
    """The leading lines whose joined length fits `budget`, and how many were left out.

    At least one line is always kept (cut if need be), so an answer never
    says "and 3 more problems" without showing any.
    """
    kept: list[str] = []
    used = 0
    for line in lines:
        cost = len(line) + (len(separator) if kept else 0)
        if used + cost > budget:
            break
        kept.append(line)
        used += cost
    if not kept and lines:
        kept.append(cut(lines[0], budget))
    return kept, len(lines) - len(kept)


def summarize(verdict: Verdict, budget: int, separator: str = "; ") -> str:
    """`field: message; field: message; and N more problems`, within `budget` characters."""
    reserve = 40  # room for the "and N more problems" tail
    kept, dropped = fit_lines(
        [str(p) for p in verdict.problems], max(budget - reserve, 1), separator
    )
    dropped += verdict.omitted
    if dropped:
        kept.append(messages.more_problems(dropped))
    return separator.join(kept)
