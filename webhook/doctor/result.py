"""What a check concludes (a name, a level, what was found, how to fix it), and its words:
a line per check with the fix under a failure or warning and a tally last, or JSON for a script."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from webhook.doctor.snapshot import Unreadable


class Level(enum.StrEnum):
    """`warn` is worth knowing but breaks nothing; `skip`: could not run (a prerequisite failed)."""

    OK = "ok"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"


_SEVERITY = {Level.OK: 0, Level.SKIP: 1, Level.WARN: 2, Level.FAIL: 3}
_TAGS = {Level.OK: "ok", Level.WARN: "WARN", Level.FAIL: "FAIL", Level.SKIP: "skip"}
_NAME_WIDTH = 24


@dataclass(frozen=True, slots=True)
class CheckResult:
    name: str
    level: Level
    detail: str
    fix: str = ""


def ok(name: str, detail: str) -> CheckResult:
    return CheckResult(name, Level.OK, detail)


def warn(name: str, detail: str, fix: str) -> CheckResult:
    return CheckResult(name, Level.WARN, detail, fix)


def fail(name: str, detail: str, fix: str) -> CheckResult:
    return CheckResult(name, Level.FAIL, detail, fix)


def skip(name: str, why: str) -> CheckResult:
    return CheckResult(name, Level.SKIP, f"not checked: {why}")


def healthy(results: Sequence[CheckResult]) -> bool:
    """All is well when nothing failed; warnings and skipped checks alone never fail a run."""
    return all(result.level is not Level.FAIL for result in results)


def counts(results: Sequence[CheckResult]) -> dict[str, int]:
    return {str(level): sum(1 for r in results if r.level is level) for level in Level}


def combine(name: str, labelled: Sequence[tuple[str, CheckResult]]) -> CheckResult:
    """One result from the same check run on several things: the worst level, each detail."""
    if len(labelled) == 1:
        return dataclasses.replace(labelled[0][1], name=name)
    level = max((r.level for _, r in labelled), key=_SEVERITY.__getitem__)
    detail = "; ".join(f"{label}: {result.detail}" for label, result in labelled)
    fix = next((r.fix for _, r in labelled if r.level is level and r.fix), "")
    return CheckResult(name, level, detail, fix)


def refused(name: str, doing: str, found: Unreadable, needs: str) -> CheckResult:
    fix = f"run the doctor as a cluster admin (it needs {needs})"
    return fail(name, f"cannot {doing}: {found.reason}", fix)


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
        "checks": [
            {"name": r.name, "status": str(r.level), "detail": r.detail, "fix": r.fix}
            for r in results
        ],
    }
