"""What one check concludes: a name, a level, what was found and how to fix it."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


class Level(enum.StrEnum):
    """`warn` is worth knowing but breaks nothing; `skip`: could not run (a prerequisite failed)."""

    OK = "ok"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"


_SEVERITY = {Level.OK: 0, Level.SKIP: 1, Level.WARN: 2, Level.FAIL: 3}


@dataclass(frozen=True, slots=True)
class CheckResult:
    name: str
    level: Level
    detail: str
    fix: str = ""

    def as_json(self) -> dict[str, str]:
        return {
            "name": self.name,
            "status": str(self.level),
            "detail": self.detail,
            "fix": self.fix,
        }


def ok(name: str, detail: str) -> CheckResult:
    return CheckResult(name, Level.OK, detail)


def warn(name: str, detail: str, fix: str) -> CheckResult:
    return CheckResult(name, Level.WARN, detail, fix)


def fail(name: str, detail: str, fix: str) -> CheckResult:
    return CheckResult(name, Level.FAIL, detail, fix)


def skip(name: str, why: str) -> CheckResult:
    return CheckResult(name, Level.SKIP, f"not checked: {why}")


def worst(results: Iterable[CheckResult]) -> Level:
    return max((r.level for r in results), key=_SEVERITY.__getitem__, default=Level.OK)


def healthy(results: Sequence[CheckResult]) -> bool:
    """All is well when nothing failed; warnings and skipped checks alone never fail a run."""
    return all(result.level is not Level.FAIL for result in results)


def counts(results: Sequence[CheckResult]) -> dict[str, int]:
    return {str(level): sum(1 for r in results if r.level is level) for level in Level}


def combine(name: str, labelled: Sequence[tuple[str, CheckResult]]) -> CheckResult:
    """One result from the same check run on several things: the worst level, each detail."""
    if len(labelled) == 1:
        only = labelled[0][1]
        return CheckResult(name, only.level, only.detail, only.fix)
    level = worst(result for _, result in labelled)
    detail = "; ".join(f"{label}: {result.detail}" for label, result in labelled)
    fix = next((r.fix for _, r in labelled if r.level is level and r.fix), "")
    return CheckResult(name, level, detail, fix)
