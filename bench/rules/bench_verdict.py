"""Verdict cost per object, against a naive pydantic model measured in the same run.

    python bench/rules/bench_verdict.py [--rounds 5]

Prints the best-of-rounds time per object for a small store (3 scores) and a
maximal one (64 human scores x 64 categories + 32 external channels), for our
verdict and for the declarative pydantic model alone (`typed_spec`, which does
no cross-field checks, no field paths and no warnings), and the ratio.
"""

from __future__ import annotations

import argparse
import timeit
from collections.abc import Callable
from typing import Any

from webhook.rules import api, validate_spec
from webhook.rules.model import FeedbackStoreSpec


def small_spec() -> dict[str, Any]:
    return {
        "human": {
            "scores": [
                {"name": "thumbs", "dataType": "BOOLEAN"},
                {"name": "accuracy"},
                {"name": "topic", "dataType": "CATEGORICAL", "categories": ["a", "b", "c"]},
            ]
        }
    }


def maximal_spec() -> dict[str, Any]:
    cats = [f"category-{j}" for j in range(api.MAX_CATEGORIES)]
    human = [
        {"name": f"human-score-{i}", "dataType": "CATEGORICAL", "categories": list(cats)}
        for i in range(api.MAX_HUMAN_SCORES)
    ]
    external = [
        {"name": f"channel-{i}", "score": {"name": f"external-score-{i}", "dataType": "NUMERIC"}}
        for i in range(api.MAX_EXTERNAL_CHANNELS)
    ]
    return {"mode": "Enforce", "human": {"scores": human}, "external": external}


def per_call_us(fn: Callable[[], object], rounds: int) -> float:
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    return min(timer.repeat(repeat=rounds, number=number)) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    for label, spec in (("small (3 scores)", small_spec()), ("maximal", maximal_spec())):
        assert validate_spec(spec).valid
        ours = per_call_us(lambda s=spec: validate_spec(s), args.rounds)
        model = per_call_us(lambda s=spec: FeedbackStoreSpec.model_validate(s), args.rounds)
        print(
            f"{label:18} verdict {ours:9.1f} us   pydantic model alone {model:9.1f} us   "
            f"ratio {ours / model:5.2f}"
        )


if __name__ == "__main__":
    main()
