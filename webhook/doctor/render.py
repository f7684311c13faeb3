"""Results as an admin reads them (one line per check, the fix under a failure) or as JSON."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from webhook.doctor.result import CheckResult, Level, counts, healthy

_TAGS = {Level.OK: "ok", Level.WARN: "WARN", Level.FAIL: "FAIL", Level.SKIP: "skip"}
_NAME_WIDTH = 24


def as_text(results: Sequence[CheckResult]) -> str:
    lines = []
    for result in results:
        lines.append(f"{_TAGS[result.level]:<5} {result.name:<{_NAME_WIDTH}} {result.detail}")
        if result.fix and result.level in (Level.FAIL, Level.WARN):
            lines.append(f"{'':<5} {'':<{_NAME_WIDTH}} fix: {result.fix}")
    tally = counts(results)
    verdict = "all is well" if healthy(results) else "something is wrong"
    lines.append(
        f"{len(results)} checks: {tally['ok']} ok, {tally['warn']} warnings, "
        f"{tally['fail']} failed, {tally['skip']} skipped — {verdict}"
    )
    return "\n".join(lines) + "\n"


def as_json(results: Sequence[CheckResult]) -> dict[str, Any]:
    return {
        "healthy": healthy(results),
        "summary": counts(results),
        "checks": [result.as_json() for result in results],
    }
