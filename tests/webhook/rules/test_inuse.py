"""The `InUse` message: the status writer writes it, the webhook reads who uses a store back.

The message is the only field of the condition that can carry agent names (the
platform's typed client keeps nothing but metav1.Condition's fields), so its
two directions live in `rules/inuse.py` and are held to each other here: what
the writer plans is what the webhook's DELETE and UPDATE warnings name.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.reviews import feedbackstore, valid_spec
from webhook.admission.change_warnings import change_warnings
from webhook.admission.deletion import delete_notice
from webhook.rules import inuse
from webhook.status.usage import plan_usage
from webhook.text import MAX_WARNING_LENGTH, cut

NOW = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
# DNS-1123 names, as an AgentDeployment's are.
_NAMES = st.from_regex(r"[a-z0-9]([a-z0-9.-]{0,20}[a-z0-9])?", fullmatch=True)


@given(st.lists(_NAMES, min_size=1, max_size=30, unique=True).map(sorted), st.booleans())
def test_what_the_message_says_is_read_back(holders: list[str], deferred: bool) -> None:
    users = inuse.users_of(holders)
    assert inuse.read_users(inuse.in_use_message(users, deferred)) == users


@pytest.mark.parametrize(
    ("holders", "deferred", "message"),
    [
        pytest.param(("a",), False, "in use by 1 AgentDeployment: a", id="one agent, singular"),
        pytest.param(
            ("a", "b"),
            True,
            "deletion deferred until no AgentDeployment references it; "
            "in use by 2 AgentDeployments: a, b",
            id="a deferred deletion says so first",
        ),
        pytest.param(
            tuple(f"a{i:02}" for i in range(12)),
            False,
            "in use by 12 AgentDeployments: "
            + ", ".join(f"a{i:02}" for i in range(10))
            + " and 2 more",
            id="past ten the rest are counted",
        ),
    ],
)
def test_what_kubectl_describe_shows(
    holders: tuple[str, ...], deferred: bool, message: str
) -> None:
    assert inuse.in_use_message(inuse.users_of(holders), deferred) == message


@pytest.mark.parametrize(
    "message",
    [
        pytest.param("", id="empty"),
        pytest.param(inuse.NOT_REFERENCED_MESSAGE, id="not referenced"),
        pytest.param("in use by many AgentDeployments: a", id="no count"),
        pytest.param("hand-edited; in use by someone", id="hand-edited"),
    ],
)
def test_a_message_naming_no_users_reads_as_none(message: str) -> None:
    assert inuse.read_users(message) is None


def test_reading_names_no_more_than_are_written() -> None:
    message = "in use by 3 AgentDeployments: " + ", ".join(f"a{i}" for i in range(100_000))
    assert inuse.read_users(message) == (3, tuple(f"a{i}" for i in range(inuse.MAX_NAMED_AGENTS)))


def _planned(holders: tuple[str, ...], *, deleting: bool) -> dict[str, Any]:
    """The store as the status writer leaves it: its planned `InUse` written, the finalizer held."""
    store = feedbackstore(valid_spec())
    store["metadata"]["finalizers"] = [inuse.FINALIZER]
    if deleting:
        store["metadata"]["deletionTimestamp"] = "2026-01-05T09:00:00Z"
    condition = plan_usage(store, holders, NOW).condition
    assert condition is not None
    store["status"] = {"conditions": [condition]}
    return store


HOLDERS = [
    pytest.param(("support-agent",), id="one agent"),
    pytest.param(tuple(f"agent-{i:02}" for i in range(13)), id="more agents than are named"),
]


@pytest.mark.parametrize("deleting", [False, True], ids=["referenced", "deletion deferred"])
@pytest.mark.parametrize("holders", HOLDERS)
def test_a_delete_names_the_agents_the_writer_wrote(
    holders: tuple[str, ...], deleting: bool
) -> None:
    notice = delete_notice("s", _planned(holders, deleting=deleting))
    clause = inuse.in_use_clause(inuse.users_of(holders))
    assert notice.warnings[0] == cut(f'FeedbackStore "s" is {clause}', MAX_WARNING_LENGTH)


@pytest.mark.parametrize("holders", HOLDERS)
def test_an_update_names_the_agents_the_writer_wrote(holders: tuple[str, ...]) -> None:
    old = _planned(holders, deleting=False)
    new = {**old, "spec": {**old["spec"], "mode": "Monitor"}}
    headline = change_warnings("s", new, old)[0]
    assert headline.startswith(f'FeedbackStore "s" is in use by {inuse.agents(len(holders))}: ')
    assert holders[0] in headline
