"""Inline declarations in the cluster: the status writer tells an invalid
`AgentDeployment.spec.feedback` as an Event on the agent, once per turn of its verdict, counts it
in a gauge, and never writes the agent."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.stores import INLINE_INVALID_MESSAGE as INVALID_MESSAGE
from tests.support.stores import INVALID, VALID
from webhook.rules import Verdict
from webhook.status import inline as inline_module
from webhook.status.events import Transition, event_body
from webhook.status.inline import InlineDeclarations, inline_message, inline_verdict
from webhook.status.writer_metrics import WriterMetrics

KEY = ("agents", "support-bot")
OTHER_INVALID = {"mode": "enforce", "human": {"scores": [{"name": "csat"}]}}
WARN = Transition("Warning", "InvalidSpec")
FIXED = Transition("Normal", "SpecCoherent")


def agent(
    feedback: object = None, *, ref: str | None = None, version: str = "v1beta1", **spec: object
) -> dict[str, Any]:
    body: dict[str, Any] = {**spec}
    if feedback is not None:
        body["feedback"] = feedback
    if ref is not None:
        body["feedbackStoreRef"] = ref
    metadata = {"name": KEY[1], "namespace": KEY[0], "uid": "u-1"}
    return {
        "apiVersion": f"agents.ctxmesh.ai/{version}",
        "kind": "AgentDeployment",
        "metadata": metadata,
        "spec": body,
    }


class Recorder:
    """Stands in for EventRecorder: what would have been sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Transition, str, tuple[str, str]]] = []

    def emit(
        self,
        obj: dict[str, Any],
        change: Transition,
        message: str,
        now: datetime,
        about: tuple[str, str],
    ) -> None:
        self.sent.append((obj["metadata"]["name"], change, message, about))


class Leader:
    def __init__(self, leading: bool = True) -> None:
        self.leading = leading

    def __call__(self) -> bool:
        return self.leading


def tracker(leading: bool = True) -> tuple[InlineDeclarations, Recorder, Leader, WriterMetrics]:
    recorder, leader, metrics = Recorder(), Leader(leading), WriterMetrics()
    return InlineDeclarations(recorder, metrics, leader), recorder, leader, metrics  # type: ignore[arg-type]


def drain(inline: InlineDeclarations) -> None:
    """Run the worker over what is queued, as its thread would."""
    while (key := inline.queue.get(timeout=0)) is not None:
        try:
            inline.report(key)
        finally:
            inline.queue.done(key)


def changes(recorder: Recorder) -> list[Transition]:
    return [change for _, change, _, _ in recorder.sent]


def gauge(metrics: WriterMetrics) -> float | None:
    return metrics.registry.get_sample_value("feedbackstore_status_inline_invalid")


@pytest.mark.parametrize(
    ("specs", "told"),
    [
        ([INVALID], [WARN]),
        ([VALID], []),
        ([VALID, INVALID], [WARN]),
        ([INVALID, VALID], [WARN, FIXED]),
        ([INVALID, OTHER_INVALID, INVALID], [WARN]),
        ([INVALID, None, INVALID], [WARN, WARN]),
        ([None, {"human": None}], [WARN]),
    ],
    ids=[
        "an agent first seen with an invalid declaration gets a warning",
        "a valid declaration from the start gets none",
        "a valid declaration turning invalid gets a warning",
        "an invalid declaration fixed gets a normal event",
        "staying invalid, whatever the problems, gets no second warning",
        "a declaration removed and made invalid again is told again",
        "an agent without spec.feedback gets none until it has one (a null human has no source)",
    ],
)
def test_each_turn_of_the_verdict_is_told_once(specs: list[object], told: list[Transition]) -> None:
    inline, recorder, _, _ = tracker()
    for spec in specs:
        inline.observe(KEY, agent(spec))
        drain(inline)
    inline.resync()
    drain(inline)
    assert changes(recorder) == told, "a resync tells nothing new"


def test_the_warning_names_every_problem_at_its_path_under_spec_feedback() -> None:
    inline, recorder, _, _ = tracker()
    inline.observe(KEY, agent(INVALID, version="v1alpha1"))
    drain(inline)
    assert recorder.sent == [
        ("support-bot", WARN, INVALID_MESSAGE, ("agents.ctxmesh.ai/v1alpha1", "AgentDeployment"))
    ]


def test_the_event_is_about_the_agent() -> None:
    body = event_body(
        agent(INVALID),
        WARN,
        INVALID_MESSAGE,
        "writer-0",
        datetime(2026, 1, 1, tzinfo=UTC),
        ("agents.ctxmesh.ai/v1beta1", "AgentDeployment"),
    )
    assert body["involvedObject"] == {
        "apiVersion": "agents.ctxmesh.ai/v1beta1",
        "kind": "AgentDeployment",
        "name": "support-bot",
        "namespace": "agents",
        "uid": "u-1",
    }
    assert (body["type"], body["reason"], body["message"]) == (
        "Warning",
        "InvalidSpec",
        INVALID_MESSAGE,
    )


def test_a_standby_tells_nothing_and_tells_it_once_leading() -> None:
    inline, recorder, leader, _ = tracker(leading=False)
    inline.observe(KEY, agent(INVALID))
    drain(inline)
    assert recorder.sent == []
    leader.leading = True
    inline.resync()
    drain(inline)
    assert changes(recorder) == [WARN]


def test_the_gauge_counts_invalid_declarations_as_the_watch_sees_them() -> None:
    inline, _, _, metrics = tracker(leading=False)
    other = ("agents", "triage-bot")
    inline.observe(KEY, agent(INVALID))
    inline.observe(other, agent(INVALID))
    inline.observe(("agents", "sales-bot"), agent(VALID))
    inline.observe(("agents", "old-bot"), agent(ref="support-feedback"))
    assert gauge(metrics) == 2
    inline.observe(other, agent(VALID))
    assert gauge(metrics) == 1
    inline.forget(KEY)
    assert gauge(metrics) == 0
    assert inline.invalid() == []


AGENT_NAMES = ("a", "b", "c")
SPECS = (VALID, INVALID, OTHER_INVALID, None)
# One step of the watch: an agent added or changed to a spec, deleted, or a relist of what is.
steps = st.one_of(
    st.tuples(st.just("observe"), st.sampled_from(AGENT_NAMES), st.sampled_from(SPECS)),
    st.tuples(st.just("delete"), st.sampled_from(AGENT_NAMES)),
    st.tuples(
        st.just("relist"), st.dictionaries(st.sampled_from(AGENT_NAMES), st.sampled_from(SPECS))
    ),
)


@given(st.lists(steps, max_size=30))
def test_the_gauge_is_the_number_of_invalid_declarations_after_any_watch_history(
    history: list[tuple[Any, ...]],
) -> None:
    inline, _, _, metrics = tracker(leading=False)
    cluster: dict[str, object] = {}
    for step in history:
        if step[0] == "observe":
            cluster[step[1]] = step[2]
            inline.observe(("agents", step[1]), agent(step[2]))
        elif step[0] == "delete":
            cluster.pop(step[1], None)
            inline.forget(("agents", step[1]))
        else:  # as the informer relists: what is gone is deleted, what is there seen again
            for gone in cluster.keys() - step[1].keys():
                inline.forget(("agents", gone))
            cluster = dict(step[1])
            for name, spec in cluster.items():
                inline.observe(("agents", name), agent(spec))
    expected = sum(1 for spec in cluster.values() if spec in (INVALID, OTHER_INVALID))
    assert gauge(metrics) == expected == len(inline.invalid())


class CountedVerdict(Verdict):
    """A verdict that counts how often anyone asks whether it is valid."""

    reads = 0

    @property
    def valid(self) -> bool:
        CountedVerdict.reads += 1
        return not self.problems


def test_seeing_each_agent_once_asks_each_verdict_a_bounded_number_of_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What a relist of many agents costs: a step per agent, not a count of all per agent."""
    judged = inline_verdict

    def counted(obj: object) -> Verdict | None:
        verdict = judged(obj)
        return None if verdict is None else CountedVerdict(*verdict)

    monkeypatch.setattr(inline_module, "inline_verdict", counted)
    monkeypatch.setattr(CountedVerdict, "reads", 0)
    inline, _, _, metrics = tracker(leading=False)
    agents = 200
    for index in range(agents):
        inline.observe(("agents", f"bot-{index}"), agent(INVALID if index % 2 else VALID))
    assert gauge(metrics) == agents // 2
    assert CountedVerdict.reads <= 4 * agents


def test_the_verdict_is_the_rules_at_the_inline_path() -> None:
    assert inline_verdict(agent(ref="support-feedback")) is None
    assert inline_verdict({"spec": "not an object"}) is None
    verdict = inline_verdict(agent(OTHER_INVALID))
    assert verdict is not None
    assert [p.field for p in verdict.problems] == ["spec.feedback.mode"]
    assert inline_message(inline_verdict(agent(VALID))) == "spec.feedback is coherent"  # type: ignore[arg-type]
