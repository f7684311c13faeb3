"""Which verdict changes deserve a Kubernetes Event, and what the Event says."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from webhook.rules import validate_feedbackstore
from webhook.status.events import (
    MAX_EVENT_MESSAGE,
    Transition,
    event_body,
    event_message,
    transition,
)

WARN = Transition("Warning", "InvalidSpec")
FIXED = Transition("Normal", "SpecCoherent")


@pytest.mark.parametrize(
    ("previous", "status", "expected"),
    [
        (None, "False", WARN),
        ("True", "False", WARN),
        ("Unknown", "False", WARN),
        ("False", "True", FIXED),
        (None, "True", None),
        ("True", "True", None),
        ("False", "False", None),
        ("Unknown", "True", None),
    ],
    ids=[
        "an object first seen invalid gets a warning",
        "a valid object turning invalid gets a warning",
        "an unknown verdict turning invalid gets a warning",
        "an invalid object fixed gets a normal event",
        "an object valid from the start gets none",
        "staying valid gets none",
        "staying invalid gets none, so resyncs never spam",
        "unknown becoming valid was never reported invalid, so none",
    ],
)
def test_transition(previous: str | None, status: str, expected: Transition | None) -> None:
    assert transition(previous, status) == expected


def test_the_warning_names_the_problems_within_a_readable_size() -> None:
    names = [{"name": "same"} for _ in range(300)]
    message = event_message(validate_feedbackstore({"spec": {"human": {"scores": names}}}))
    assert message.startswith("spec is invalid: spec.human.scores: Too many: 300")
    assert len(message) <= MAX_EVENT_MESSAGE
    assert "more problems" in message


def test_the_event_points_at_the_object() -> None:
    obj = {
        "metadata": {"name": "support", "namespace": "agents", "uid": "u-1", "resourceVersion": "9"}
    }
    body = event_body(
        obj, WARN, "spec is invalid: x", "writer_1", datetime(2025, 1, 1, 0, 0, 0, 5, tzinfo=UTC)
    )
    assert body["involvedObject"] == {
        "apiVersion": "agents.ctxmesh.ai/v1beta1",
        "kind": "FeedbackStore",
        "name": "support",
        "namespace": "agents",
        "uid": "u-1",
        "resourceVersion": "9",
    }
    assert body["metadata"]["namespace"] == "agents"
    assert body["metadata"]["name"].startswith("support.")
    assert (body["type"], body["reason"], body["count"]) == ("Warning", "InvalidSpec", 1)
    assert body["source"] == {"component": "feedbackstore-status-writer"}
