"""Ways to prove a score's categories distinct, on the maximal review's fresh strings.

    python bench/rules/distinct_strings.py [--reviews 400]

The maximal benchmark review (bench/admission/payloads.py) has 64 scores of 64
categories. Each measurement decodes the review afresh (as the webhook does:
new strings, hashes not yet computed), then times one way over its 64 lists;
the median over `--reviews` reviews is printed, in µs per review. It backs
the choice in `webhook/rules/verdict.py` (`_distinct_strings`: a join as the
type check, then a set) with the alternatives that were tried.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time
from collections.abc import Callable
from itertools import islice
from operator import eq

import orjson

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "admission"))
from payloads import payloads

Lists = list[list[str]]


def loop_only(lists: Lists) -> None:
    for _ in lists:
        pass


def join(lists: Lists) -> None:
    for categories in lists:
        "".join(categories)


def hash_each(lists: Lists) -> None:
    for categories in lists:
        for category in categories:
            hash(category)


def sets(lists: Lists) -> None:
    for categories in lists:
        len(set(categories)) == len(categories)  # noqa: B015  (the work is the point)


def sets_twice(lists: Lists) -> None:
    """The second pass builds the same sets with every hash already cached."""
    sets(lists)
    sets(lists)


def dicts(lists: Lists) -> None:
    for categories in lists:
        dict.fromkeys(categories)


def sort_only(lists: Lists) -> None:
    for categories in lists:
        sorted(categories)


def sort_and_compare_neighbours(lists: Lists) -> None:
    for categories in lists:
        ordered = sorted(categories)
        any(map(eq, ordered, islice(ordered, 1, None)))


WAYS: list[Callable[[Lists], None]] = [
    loop_only, join, hash_each, sets, sets_twice, dicts, sort_only, sort_and_compare_neighbours,
]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reviews", type=int, default=400)
    args = parser.parse_args()
    body = payloads()["maximal"]
    for way in WAYS:
        times = []
        for _ in range(args.reviews):
            scores = orjson.loads(body)["request"]["object"]["spec"]["human"]["scores"]
            lists = [score["categories"] for score in scores]
            started = time.perf_counter()
            way(lists)
            times.append(time.perf_counter() - started)
        times.sort()
        print(f"{way.__name__:28s} {times[len(times) // 2] * 1e6:7.1f} µs")


if __name__ == "__main__":
    main()
