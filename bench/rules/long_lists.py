"""The verdict and the change comparison on hostile specs of a given size.

Each spec is the largest of its kind whose JSON fits in `--bytes`; the time is the
best of `--repeat` runs of `validate_spec` and of `spec_changes` (from an empty
spec), in this process, parse excluded. Run it on another revision's code with
PYTHONPATH pointing at that checkout, to compare:

    python bench/rules/long_lists.py --bytes 7340032
    PYTHONPATH=/tmp/base python -P bench/rules/long_lists.py --bytes 7340032
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import orjson

from webhook.rules import validate_spec
from webhook.rules.changes import spec_changes

SPECS: dict[str, Callable[[int], Any]] = {
    "external: [{}, ...]": lambda n: {"external": [{}] * n},
    "human.scores: [{}, ...]": lambda n: {"human": {"scores": [{}] * n}},
    "categories: [0, ...]": lambda n: {"human": {"scores": [{"name": "a", "categories": [0] * n}]}},
    "unknown keys in spec": lambda n: {f"k{i}": 0 for i in range(n)},
    "one unknown key as long as the body": lambda n: {"x" * n: 0},
}


def largest(make: Callable[[int], Any], limit: int) -> Any:
    low, high = 1, 2
    while len(orjson.dumps(make(high))) <= limit:
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if len(orjson.dumps(make(middle))) <= limit else (low, middle)
    return orjson.loads(orjson.dumps(make(low)))


def best(run: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bytes", type=int, default=4 * 1024 * 1024)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("| spec | verdict | problems | changes |")
    print("|---|---|---|---|")
    for name, make in SPECS.items():
        spec = largest(make, args.bytes)
        verdict = validate_spec(spec)
        judged = best(lambda spec=spec: validate_spec(spec), args.repeat)
        compared = best(lambda spec=spec: spec_changes({}, spec), args.repeat)
        print(f"| {name} | {judged * 1000:.1f} ms | {verdict.problem_count} "
              f"| {compared * 1000:.1f} ms |")  # fmt: skip


if __name__ == "__main__":
    main()
