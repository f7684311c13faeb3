"""One watch of AgentDeployments feeds both in-use protection and the inline declarations, and
counts in the writer's own metrics: its lists, its objects, its restarts, and the inline gauge,
kept by the events (an add, a change of verdict, a delete, a relist) through the real informer.

Against a scripted server on loopback, so each case states the exact answers (the served check,
the list, the events, a 410, the relist) and the requests that must follow.
"""

from __future__ import annotations

import threading
from typing import Any

from tests.support.scripted_apiserver import Answer, scripted_apiserver, status
from tests.support.stores import INVALID, VALID
from webhook.kube.settings import InformerSettings
from webhook.kube.workqueue import WorkQueue
from webhook.rules import inuse
from webhook.status.agents import AgentView
from webhook.status.inline import InlineDeclarations
from webhook.status.writer_metrics import WriterMetrics

PATH = f"/apis/{inuse.AGENT_GROUP}/{inuse.AGENT_VERSION}/{inuse.AGENT_PLURAL}"
NS = "agents"


def agent(name: str, version: str, feedback: object) -> dict[str, Any]:
    return {
        "apiVersion": f"{inuse.AGENT_GROUP}/{inuse.AGENT_VERSION}",
        "kind": inuse.AGENT_KIND,
        "metadata": {"namespace": NS, "name": name, "resourceVersion": version},
        "spec": {"feedback": feedback},
    }


def listed(version: str, *agents: dict[str, Any]) -> Answer:
    body = {"kind": "AgentDeploymentList", "metadata": {"resourceVersion": version}}
    return Answer(body={**body, "items": list(agents)})


def event(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "object": obj}


GONE = status(410, "Expired", "too old resource version: 13 (20)")


def test_the_agents_watch_counts_in_the_writers_metrics_and_keeps_the_inline_gauge() -> None:
    metrics = WriterMetrics()
    inline = InlineDeclarations(None, metrics, lambda: False)  # type: ignore[arg-type]
    with scripted_apiserver() as server:
        server.answer(
            "GET",
            PATH,
            listed("9"),  # served: a one-item list answers
            listed("10", agent("a", "10", INVALID), agent("b", "10", VALID),
                   agent("c", "10", INVALID)),
            Answer(events=(
                event("MODIFIED", agent("b", "11", INVALID)),  # turns invalid
                event("DELETED", agent("a", "12", INVALID)),  # an invalid one goes
                event("MODIFIED", agent("c", "13", VALID)),  # fixed
            )),
            GONE,  # the resumed watch: 410, so a relist
            listed("20", agent("b", "20", INVALID), agent("d", "20", INVALID)),
            Answer(hold=True),
        )  # fmt: skip
        api_client = server.api_client()
        view = AgentView(
            api_client,
            None,
            WorkQueue(),
            InformerSettings(watch_timeout_seconds=60, backoff_initial=0.01),
            replan=lambda: None,
            recheck_seconds=60.0,
            metrics=metrics.agents,
            inline=inline,
        )
        thread = threading.Thread(target=view.run, daemon=True)
        thread.start()
        try:
            server.wait_held()
        finally:
            view.stop()
            thread.join(10)
            api_client.close()
    assert not thread.is_alive()

    def sample(name: str, **labels: str) -> float | None:
        return metrics.registry.get_sample_value(name, labels)

    assert sample("feedbackstore_status_inline_invalid") == 2  # b and d; c gone on the relist
    assert [key for key, _ in inline.invalid()] == [(NS, "b"), (NS, "d")]
    assert sample("feedbackstore_status_agents") == 2
    assert sample("feedbackstore_status_agent_lists_total") == 2
    assert sample("feedbackstore_status_agent_watch_restarts_total", reason="gone") == 1
    assert sample("feedbackstore_status_agent_watch_events_total", type="MODIFIED") == 2
    assert sample("feedbackstore_status_objects") == 0, "the stores' gauge is the stores' alone"
    watches = [r.query.get("resourceVersion") for r in server.requests if r.query.get("watch")]
    assert watches == ["10", "13", "20"], "one watch at a time, resumed from the last event read"
