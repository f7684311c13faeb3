"""What each warning of the rules says, word for word: only what the platform's gateway does.

The platform's gateway (which takes the scores that FeedbackStores declare) trims a submitted score
name; in `Enforce` an undeclared name gets 422, `Monitor` relays it; it sends a float value and
checks neither `dataType` nor `categories`; on read it attributes each score to `human`,
`external:<channel>` or `unattributed`. Each warning is at most 120 characters with the longest
paths and names.
"""

from __future__ import annotations

from typing import Any

import pytest

from webhook.rules import validate_spec

CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    (
        "Monitor relays what Enforce rejects",
        {"mode": "Monitor", "human": {"scores": [{"name": "thumbs"}]}},
        [
            "spec.mode: Monitor relays undeclared score names instead of rejecting them (422); "
            "use only to migrate"
        ],
    ),
    (
        "a score name with whitespace at an end is lost entirely in Enforce",
        {"human": {"scores": [{"name": " thumbs"}]}},
        [
            "spec.human.scores[0].name: in Enforce this score is lost entirely: no trimmed "
            'submission matches " thumbs"'
        ],
    ),
    (
        "a channel's score name too",
        {"external": [{"name": "crm", "score": {"name": "csat "}}]},
        [
            "spec.external[0].score.name: in Enforce this score is lost entirely: no trimmed "
            'submission matches "csat "'
        ],
    ),
    (
        "a channel name with whitespace reads so in the attribution",
        {"external": [{"name": "crm\t", "score": {"name": "csat"}}]},
        [
            'spec.external[0].name: on read its scores are attributed to "external:crm\\t", '
            "whitespace kept"
        ],
    ),
    (
        "categories on a score that is not CATEGORICAL change nothing",
        {"human": {"scores": [{"name": "stars", "categories": ["good"]}]}},
        [
            "spec.human.scores[0].categories: no effect: dataType is NUMERIC, and the gateway "
            "checks no value against categories"
        ],
    ),
    (
        "a CATEGORICAL score without categories says the gateway checks none anyway",
        {"human": {"scores": [{"name": "topic", "dataType": "CATEGORICAL"}]}},
        [
            "spec.human.scores[0]: CATEGORICAL score declares no categories (the gateway checks no "
            "value against them)"
        ],
    ),
]


@pytest.mark.parametrize(("spec", "said"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_warning_says_what_the_gateway_does(spec: dict[str, Any], said: list[str]) -> None:
    assert [str(w) for w in validate_spec(spec).warnings] == said


def test_with_the_longest_paths_and_names_every_warning_keeps_within_120_characters() -> None:
    long = " " + "x" * 120
    channels = [{"name": f"c{i}", "score": {"name": f"s{i}"}} for i in range(31)]
    channels.append(
        {"name": long, "score": {"name": long + "y", "dataType": "BOOLEAN", "categories": ["a"]}}
    )
    scores = [{"name": f"h{i}"} for i in range(63)]
    scores.append({"name": long + "z", "dataType": "CATEGORICAL"})
    spec = {"mode": "Monitor", "human": {"scores": scores}, "external": channels}
    warnings = [str(w) for w in validate_spec(spec).warnings]
    assert len(warnings) == 6
    assert all(len(w) <= 120 for w in warnings), [(len(w), w) for w in warnings]
    assert 'no trimmed submission matches " xxxxxxxxxxxxxx..."' in warnings[1]
