"""The verdict of a git revision against the working tree's, interleaved in one process.

    python bench/rules/ab_verdict.py [--baseline REV] [--rounds 6]

Each round decodes fresh objects from the admission benchmark's reviews
(bench/admission/payloads.py: small valid, small invalid, maximal), as the
webhook does per request (fresh strings, no cached hashes), then times
`validate_feedbackstore` of each version over them; the versions alternate
which goes first. Prints the best round per version and the ratio, and checks
that both versions give the same verdict.
"""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys
import time
import types
from typing import Any

import orjson

import webhook.rules.verdict as ours

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "admission"))
from payloads import payloads  # noqa: E402  (a sibling benchmark's module)


def baseline_module(revision: str) -> Any:
    """`webhook/rules/verdict.py` as it was at `revision`, importing today's other modules."""
    source = subprocess.run(
        ["git", "show", f"{revision}:webhook/rules/verdict.py"],
        capture_output=True, text=True, check=True, cwd=HERE,
    ).stdout  # fmt: skip
    # From da07f48 until b27b441 the verdict's sentences lived in webhook/messages.py.
    source = source.replace("from webhook import messages", "from webhook.rules import messages")
    module = types.ModuleType("baseline_verdict")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, f"{revision}:webhook/rules/verdict.py", "exec"), module.__dict__)
    return module


def said(verdict: Any) -> tuple[list[str], list[str], list[str], int]:
    """What a verdict says, as text: the same whether a revision's paths are text or values."""
    problems = verdict.problems
    return (
        [str(p) for p in problems],
        [str(p.type) for p in problems],
        [str(w) for w in verdict.warnings],
        verdict.omitted,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", default="HEAD", help="git revision to compare with")
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    base = baseline_module(args.baseline)
    print(f"baseline {args.baseline} vs working tree; best of {args.rounds} rounds, µs per object")
    for name, body in payloads().items():
        count = 200 if name == "maximal" else 2000
        best = {"baseline": float("inf"), "ours": float("inf")}
        versions = [
            ("baseline", base.validate_feedbackstore),
            ("ours", ours.validate_feedbackstore),
        ]
        for round_ in range(args.rounds):
            for label, verdict in versions if round_ % 2 == 0 else versions[::-1]:
                objects = [orjson.loads(body)["request"]["object"] for _ in range(count)]
                started = time.perf_counter()
                for obj in objects:
                    verdict(obj)
                best[label] = min(best[label], (time.perf_counter() - started) / count * 1e6)
        a, b = (said(v(orjson.loads(body)["request"]["object"])) for _, v in versions)
        same = a == b
        print(
            f"{name:14s} baseline {best['baseline']:7.1f}  ours {best['ours']:7.1f}  "
            f"ours/baseline {best['ours'] / best['baseline']:.2f}  same verdict: {same}"
        )


if __name__ == "__main__":
    main()
