"""The InUse message's users phrase: the writer writes it, the webhook reads it back."""

import pytest

from webhook.rules.inuse import MAX_NAMED_AGENTS, read_users, users_phrase


@pytest.mark.parametrize("count", [1, 2, MAX_NAMED_AGENTS, MAX_NAMED_AGENTS + 1, 250])
def test_what_the_writer_writes_the_webhook_reads_back(count: int) -> None:
    holders = tuple(f"agent-{i:03d}" for i in range(count))
    assert read_users(f"in use by {users_phrase(holders)}") == (
        count, holders[:MAX_NAMED_AGENTS]
    )  # fmt: skip


def test_the_phrase_names_the_first_and_counts_the_rest() -> None:
    assert users_phrase(("a",)) == "1 AgentDeployment: a"
    assert users_phrase(("a", "b", "c"), limit=2) == "3 AgentDeployments: a, b and 1 more"


def test_a_deferred_deletion_message_is_read_too() -> None:
    message = (
        "deletion deferred until no AgentDeployment references it; in use by 1 AgentDeployment: a"
    )
    assert read_users(message) == (1, ("a",))


@pytest.mark.parametrize(
    "message", ["", "no AgentDeployment references it", "in use by many AgentDeployments: a"]
)
def test_a_message_without_the_phrase_reads_as_unknown(message: str) -> None:
    assert read_users(message) is None


def test_reading_users_names_no_more_than_are_written() -> None:
    message = "in use by 3 AgentDeployments: " + ", ".join(f"a{i}" for i in range(100_000))
    assert read_users(message) == (3, tuple(f"a{i}" for i in range(MAX_NAMED_AGENTS)))
