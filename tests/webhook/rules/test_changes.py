"""The change-impact comparison, table-driven: old spec, new spec → the changes,
and the sentence each one is said with."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.support.reviews import valid_spec
from webhook.rules.change_messages import change_sentence, in_use_headline, with_users
from webhook.rules.changes import HUMAN, Change, ChangeKind, changed_fields, spec_changes

K = ChangeKind


def base() -> dict[str, Any]:
    """The shared valid spec with a second channel (`nps`, its dataType defaulted)."""
    spec = valid_spec()
    spec["external"].append({"name": "nps-survey", "score": {"name": "nps"}})
    return spec


def edited(**edits: Any) -> dict[str, Any]:
    """`base()` with top-level fields replaced (None removes the field)."""
    spec = base()
    for key, value in edits.items():
        if value is None:
            spec.pop(key)
        else:
            spec[key] = value
    return spec


def human(*scores: Any) -> dict[str, Any]:
    return {"scores": [s if isinstance(s, dict) else {"name": s} for s in scores]}


THUMBS = {"name": "thumbs", "dataType": "BOOLEAN"}
TONE = {"name": "tone", "dataType": "CATEGORICAL", "categories": ["kind", "rude"]}
CSAT = {"name": "csat-webhook", "score": {"name": "csat", "dataType": "NUMERIC"}}
NPS = {"name": "nps-survey", "score": {"name": "nps"}}


def channel(name: str, score: str, data_type: str = "NUMERIC") -> dict[str, Any]:
    return {"name": name, "score": {"name": score, "dataType": data_type}}


CASES = [
    pytest.param(base(), [], id="the same spec is no change"),
    pytest.param(
        edited(human=human(TONE, THUMBS), external=[NPS, CSAT]),
        [],
        id="reordering scores and channels is no change",
    ),
    pytest.param(
        edited(human=human(THUMBS, TONE, "stars")),
        [],
        id="adding a score is no change (it loses nothing)",
    ),
    pytest.param(
        edited(
            human={
                "scores": [
                    {"name": "thumbs", "dataType": "BOOLEAN"},
                    {"name": "tone", "dataType": "CATEGORICAL", "categories": ["kind"]},
                ]
            }
        ),
        [],
        id="a category list edited is not a change of name or type",
    ),
    pytest.param(
        edited(human=human(TONE)),
        [Change(K.SCORE_REMOVED, True, "thumbs", source=HUMAN)],
        id="a human score removed in Enforce mode",
    ),
    pytest.param(
        edited(mode="Monitor", human=human(TONE)),
        [
            Change(K.MODE_MONITORED, False, before="Enforce", after="Monitor"),
            Change(K.SCORE_REMOVED, False, "thumbs", source=HUMAN),
        ],
        id="a score removed while switching to Monitor: both, the removal not enforced",
    ),
    pytest.param(
        edited(human=human({"name": "thumb", "dataType": "BOOLEAN"}, TONE)),
        [Change(K.SCORE_RENAMED, True, "thumbs", "thumb", HUMAN, HUMAN)],
        id="a human score renamed in its place is a rename",
    ),
    pytest.param(
        edited(human=human(TONE, "stars")),
        [Change(K.SCORE_REMOVED, True, "thumbs", source=HUMAN)],
        id="one removed and another added elsewhere is a removal, not a rename",
    ),
    pytest.param(
        edited(external=[channel("csat-webhook", "satisfaction"), NPS]),
        [Change(K.SCORE_RENAMED, True, "csat", "satisfaction", "csat-webhook", "csat-webhook")],
        id="a channel's score renamed is a rename in that channel",
    ),
    pytest.param(
        edited(human=human({"name": "thumbs", "dataType": "NUMERIC"}, TONE)),
        [Change(K.DATA_TYPE_CHANGED, True, "thumbs", before="BOOLEAN", after="NUMERIC")],
        id="a dataType changed, from and to",
    ),
    pytest.param(
        edited(
            external=[CSAT, {"name": "nps-survey", "score": {"name": "nps", "dataType": "NUMERIC"}}]
        ),
        [],
        id="a dataType written out as its default is no change",
    ),
    pytest.param(
        edited(human=human(THUMBS, TONE, {"name": "csat", "dataType": "NUMERIC"}), external=[NPS]),
        [Change(K.SCORE_MOVED, True, "csat", source="csat-webhook", new_source=HUMAN)],
        id="a score moved from its channel to human (the channel going with it)",
    ),
    pytest.param(
        edited(human=human(TONE), external=[CSAT, NPS, channel("thumbs-api", "thumbs")]),
        [
            Change(K.SCORE_MOVED, True, "thumbs", source=HUMAN, new_source="thumbs-api"),
            Change(
                K.DATA_TYPE_CHANGED,
                True,
                "thumbs",
                source="thumbs-api",
                before="BOOLEAN",
                after="NUMERIC",
            ),
        ],
        id="a score moved from human to a channel, with a new dataType: both said",
    ),
    pytest.param(
        edited(external=[channel("csat-webhook", "nps"), channel("nps-survey", "csat")]),
        [
            Change(K.SCORE_MOVED, True, "csat", source="csat-webhook", new_source="nps-survey"),
            Change(K.SCORE_MOVED, True, "nps", source="nps-survey", new_source="csat-webhook"),
        ],
        id="two channels swapping their scores: each score moved between channels",
    ),
    pytest.param(
        edited(external=[NPS]),
        [Change(K.CHANNEL_REMOVED, True, "csat-webhook", after="csat")],
        id="a channel removed with its score",
    ),
    pytest.param(
        edited(external=None),
        [
            Change(K.CHANNEL_REMOVED, True, "csat-webhook", after="csat"),
            Change(K.CHANNEL_REMOVED, True, "nps-survey", after="nps"),
        ],
        id="every channel removed",
    ),
    pytest.param(
        edited(external=[channel("csat-v2", "csat"), NPS]),
        [Change(K.CHANNEL_RENAMED, True, "csat-webhook", "csat-v2", after="csat")],
        id="a channel renamed keeping its score is a channel rename only",
    ),
    pytest.param(
        edited(external=[channel("csat-v2", "csat", "BOOLEAN"), NPS]),
        [
            Change(K.CHANNEL_RENAMED, True, "csat-webhook", "csat-v2", after="csat"),
            Change(
                K.DATA_TYPE_CHANGED,
                True,
                "csat",
                source="csat-v2",
                before="NUMERIC",
                after="BOOLEAN",
            ),
        ],
        id="a channel renamed and its score retyped: both",
    ),
    pytest.param(
        edited(external=[channel("csat-v2", "satisfaction"), NPS]),
        [Change(K.CHANNEL_REMOVED, True, "csat-webhook", after="csat")],
        id="a channel renamed and its score renamed: the old channel and score are gone",
    ),
    pytest.param(
        edited(mode="Monitor"),
        [Change(K.MODE_MONITORED, False, before="Enforce", after="Monitor")],
        id="Enforce to Monitor",
    ),
    pytest.param(
        edited(mode=None),
        [],
        id="mode dropped is its default Enforce: no change",
    ),
    pytest.param(
        edited(human=human(TONE), external=[NPS, channel("csat-v2", "csat")], mode="Monitor"),
        [
            Change(K.MODE_MONITORED, False, before="Enforce", after="Monitor"),
            Change(K.CHANNEL_RENAMED, False, "csat-webhook", "csat-v2", after="csat"),
            Change(K.SCORE_REMOVED, False, "thumbs", source=HUMAN),
        ],
        id="a combination: mode, a channel renamed and a score removed, in that order",
    ),
    pytest.param(
        edited(human="not an object", external=[NPS, 7, {"name": "x"}]),
        [
            Change(K.CHANNEL_REMOVED, True, "csat-webhook", after="csat"),
            Change(K.SCORE_REMOVED, True, "thumbs", source=HUMAN),
            Change(K.SCORE_REMOVED, True, "tone", source=HUMAN),
        ],
        id="an invalid new spec: malformed entries are skipped, what is lost still said",
    ),
]


@pytest.mark.parametrize(("new", "expected"), CASES)
def test_changes_from_the_base_spec(new: dict[str, Any], expected: list[Change]) -> None:
    assert list(spec_changes(base(), new)) == expected


def test_monitor_to_enforce_is_said() -> None:
    old = edited(mode="Monitor")
    assert spec_changes(old, base()) == (
        Change(K.MODE_ENFORCED, True, before="Monitor", after="Enforce"),
    )


def test_a_spec_that_is_not_an_object_declares_nothing() -> None:
    assert spec_changes(None, base()) == ()
    assert [c.kind for c in spec_changes(base(), None)] == [
        K.CHANNEL_REMOVED,
        K.CHANNEL_REMOVED,
        K.SCORE_REMOVED,
        K.SCORE_REMOVED,
    ]


def test_the_comparison_does_not_change_its_inputs() -> None:
    old, new = base(), edited(human=human(TONE))
    kept = copy.deepcopy((old, new))
    spec_changes(old, new)
    assert (old, new) == kept


SENTENCES = [
    pytest.param(
        Change(K.MODE_ENFORCED, True, before="Monitor", after="Enforce"),
        "mode Monitor -> Enforce: the gateway rejects undeclared score names (422) from now on",
        id="Monitor to Enforce",
    ),
    pytest.param(
        Change(K.MODE_MONITORED, False, before="Enforce", after="Monitor"),
        "mode Enforce -> Monitor: the gateway relays undeclared score names, read as unattributed",
        id="Enforce to Monitor",
    ),
    pytest.param(
        Change(K.SCORE_REMOVED, True, "thumbs"),
        'score "thumbs" removed from human: the gateway rejects "thumbs" (422) from now on',
        id="removed, Enforce",
    ),
    pytest.param(
        Change(K.SCORE_REMOVED, False, "thumbs"),
        'score "thumbs" removed from human: "thumbs" is relayed, read as unattributed, from now on',
        id="removed, Monitor",
    ),
    pytest.param(
        Change(K.SCORE_RENAMED, True, "csat", "satisfaction", "csat-webhook", "csat-webhook"),
        'score "csat" renamed to "satisfaction" in channel "csat-webhook": '
        'the gateway rejects "csat" (422) from now on',
        id="renamed in a channel",
    ),
    pytest.param(
        Change(K.DATA_TYPE_CHANGED, True, "thumbs", before="BOOLEAN", after="NUMERIC"),
        'score "thumbs" dataType BOOLEAN -> NUMERIC: the gateway checks no dataType; it reads '
        "as NUMERIC in Langfuse",
        id="dataType",
    ),
    pytest.param(
        Change(K.SCORE_MOVED, True, "csat", source="csat-webhook", new_source=HUMAN),
        'score "csat" moved from channel "csat-webhook" to human: '
        "its scores read as human from now on",
        id="moved",
    ),
    pytest.param(
        Change(K.CHANNEL_REMOVED, True, "csat-webhook", after="csat"),
        'channel "csat-webhook" removed with score "csat": the gateway rejects "csat" (422) '
        "from now on",
        id="channel removed",
    ),
    pytest.param(
        Change(K.CHANNEL_RENAMED, True, "csat-webhook", "csat-v2", after="csat"),
        'channel "csat-webhook" renamed to "csat-v2": '
        'score "csat" reads as "external:csat-v2" from now on',
        id="channel renamed",
    ),
]


@pytest.mark.parametrize(("change", "sentence"), SENTENCES)
def test_each_change_is_said_in_one_short_sentence(change: Change, sentence: str) -> None:
    assert change_sentence(change) == sentence
    assert len(sentence) <= 120


def test_long_names_are_cut_in_the_sentence() -> None:
    long = "n" * 128
    sentence = change_sentence(Change(K.SCORE_REMOVED, True, long))
    assert f'"{"n" * 29}..."' in sentence
    assert long not in sentence


AGENTS = ("support-agent", "billing-agent", "returns-agent", "triage-agent")


def test_users_are_counted_and_the_first_named_within_120() -> None:
    sentence = "mode Monitor -> Enforce: undeclared names rejected"
    text = with_users(sentence, 4, AGENTS)
    assert (
        text == f"{sentence}; used by 4 AgentDeployments: support-agent, billing-agent and 2 more"
    )
    assert len(text) <= 120
    short = with_users("mode changed", 12, AGENTS)
    assert short == (
        "mode changed; used by 12 AgentDeployments: support-agent, billing-agent, "
        "returns-agent, triage-agent and 8 more"
    )
    assert with_users("x", 1, ("support-agent",)) == "x; used by 1 AgentDeployment: support-agent"


def test_when_no_name_fits_the_count_is_still_said() -> None:
    sentence = "s" * 90
    assert with_users(sentence, 2, AGENTS) == sentence + "; used by 2 AgentDeployments"
    longer = "s" * 119
    text = with_users(longer, 2, AGENTS)
    assert len(text) == 120
    assert text.endswith("...; used by 2 AgentDeployments")


def test_the_in_use_headline_names_as_many_agents_as_fit() -> None:
    assert in_use_headline('"support-feedback"', 2, AGENTS[:2]) == (
        'FeedbackStore "support-feedback" is in use by 2 AgentDeployments: '
        "support-agent, billing-agent"
    )
    text = in_use_headline('"support-feedback"', 40, AGENTS)
    assert text.endswith(": support-agent, billing-agent and 38 more")
    assert len(text) <= 120


FIELDS = [
    pytest.param(edited(mode="Monitor"), ["spec.mode"], id="a mode at spec.mode"),
    pytest.param(
        edited(human=human(TONE)), ["spec.human.scores"], id="a removed score at its list"
    ),
    pytest.param(
        edited(human=human({**THUMBS, "name": "thumbs-up"}, TONE)),
        ["spec.human.scores[0].name"],
        id="a renamed score at its new name",
    ),
    pytest.param(
        edited(human=human(TONE, {**THUMBS, "dataType": "NUMERIC"})),
        ["spec.human.scores[1].dataType"],
        id="a retyped score at its dataType, where it stands now",
    ),
    pytest.param(
        edited(external=[NPS, channel("thumbs-webhook", "thumbs", "BOOLEAN")], human=human(TONE)),
        ["spec.external", "spec.external[1].score"],
        id="a channel gone at the list; a score moved to a channel at that channel's score",
    ),
    pytest.param(
        edited(external=[channel("csat-survey", "csat"), NPS]),
        ["spec.external[0].name"],
        id="a renamed channel at its new name",
    ),
]


@pytest.mark.parametrize(("new", "fields"), FIELDS)
def test_each_change_shows_at_a_field_of_the_new_spec(
    new: dict[str, Any], fields: list[str]
) -> None:
    """Where the CLI puts each change's position (`validate --previous`)."""
    assert [str(f) for f in changed_fields(spec_changes(base(), new), new)] == fields


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param(
            {"human": human(*[f"s{i}" for i in range(64)], "late")},
            {"human": human(*[f"s{i}" for i in range(64)])},
            id="a human score past the 64th is not read: its removal is not a change",
        ),
        pytest.param(
            {"external": [{"name": f"c{i}", "score": {"name": f"e{i}"}} for i in range(33)]},
            {"external": [{"name": f"c{i}", "score": {"name": f"e{i}"}} for i in range(32)]},
            id="a channel past the 32nd is not read: its removal is not a change",
        ),
    ],
)
def test_items_past_a_lists_maximum_are_not_read(old: Any, new: Any) -> None:
    assert spec_changes(old, new) == ()
