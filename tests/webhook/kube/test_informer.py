"""The informer on its own: what it lists, where it resumes a watch, when it relists.

Against a scripted server on loopback, so each case states the exact answers (a 410 as an answer
or as an ERROR event, a bookmark, a stream ended by its timeout) and the exact requests and
callbacks that must follow.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge

from tests.support.scripted_apiserver import Answer, ScriptedApiServer, scripted_apiserver, status
from webhook.kube.client import CollectionApi
from webhook.kube.informer import Informer
from webhook.kube.settings import InformerSettings

RESOURCE = ("agents.ctxmesh.ai", "v1beta1", "feedbackstores")
PATH = "/apis/agents.ctxmesh.ai/v1beta1/feedbackstores"
NS = "agents"


def store(name: str, version: str) -> dict[str, Any]:
    return {"metadata": {"namespace": NS, "name": name, "resourceVersion": version}}


def listed(version: str, *names: str, more: str | None = None) -> Answer:
    """A list answer; `more`: a continue token, the list goes on in another page."""
    items = [store(name, version) for name in names]
    metadata = {"resourceVersion": version, **({"continue": more} if more else {})}
    return Answer(body={"kind": "FeedbackStoreList", "metadata": metadata, "items": items})


def event(kind: str, name: str, version: str) -> dict[str, Any]:
    return {"type": kind, "object": store(name, version)}


def bookmark(version: str) -> dict[str, Any]:
    return {
        "type": "BOOKMARK",
        "object": {"kind": "FeedbackStore", "metadata": {"resourceVersion": version}},
    }


GONE_STATUS = status(410, "Expired", "too old resource version: 10 (20)")
GONE_EVENT = {"type": "ERROR", "object": GONE_STATUS.body}
WAITING = Answer(hold=True)


@dataclass
class Metrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        r = self.registry
        self.lists = Counter("lists", "lists", registry=r)
        self.objects = Gauge("objects", "objects", registry=r)
        self.watch_events = Counter("watch_events", "events", ["type"], registry=r)
        self.watch_restarts = Counter("watch_restarts", "restarts", ["reason"], registry=r)

    def value(self, name: str, **labels: str) -> float:
        return self.registry.get_sample_value(name, labels) or 0.0


@dataclass
class Seen:
    """What the owner was told, in order."""

    calls: list[tuple[str, ...]] = field(default_factory=list)
    # How many requests the server had had when each change was told.
    asked_before_change: list[int] = field(default_factory=list)
    asked: Callable[[], int] = lambda: 0
    _told: threading.Condition = field(default_factory=threading.Condition)

    def change(self, key: tuple[str, str], obj: dict[str, Any]) -> None:
        self.asked_before_change.append(self.asked())
        self._tell("change", key[1], obj["metadata"]["resourceVersion"])

    def delete(self, key: tuple[str, str]) -> None:
        self._tell("delete", key[1])

    def synced(self) -> None:
        self._tell("synced")

    def wait(self, count: int, timeout: float = 30.0) -> None:
        with self._told:
            self._told.wait_for(lambda: len(self.calls) >= count, timeout)

    def _tell(self, *call: str) -> None:
        with self._told:
            self.calls.append(call)
            self._told.notify_all()


@dataclass
class Run:
    server: ScriptedApiServer
    seen: Seen
    metrics: Metrics

    def asked(self) -> list[tuple[str, str | None]]:
        """Each request: a list, or a watch and the resourceVersion it resumes from."""
        return [
            ("watch", r.query.get("resourceVersion")) if r.query.get("watch") else ("list", None)
            for r in self.server.requests
        ]


@pytest.fixture
def informer_run() -> Iterator[Any]:
    """Runs an informer against the scripted answers until it waits on a held watch."""
    with scripted_apiserver() as server:
        api_client = server.api_client()

        def run(*answers: Answer, calls: int = 0) -> Run:
            """`calls`: how many the owner must have been told before the informer stops, when
            the held stream itself carries events (a held watch without them says it all)."""
            server.answer("GET", PATH, *answers)
            seen, metrics = Seen(asked=lambda: len(server.requests)), Metrics()
            settings = InformerSettings(watch_timeout_seconds=60, backoff_initial=0.01)
            informer = Informer(
                CollectionApi(api_client, RESOURCE),
                seen.change,
                seen.delete,
                metrics,
                settings,
                seen.synced,
            )
            thread = threading.Thread(target=informer.run, daemon=True)
            thread.start()
            try:
                server.wait_held()
                seen.wait(calls)
            finally:
                informer.stop()
                thread.join(10)
            assert not thread.is_alive()
            return Run(server, seen, metrics)

        try:
            yield run
        finally:
            api_client.close()


def test_it_lists_then_watches_from_the_lists_version_with_bookmarks(informer_run: Any) -> None:
    told = [("change", "a", "10"), ("change", "b", "10"), ("synced",), ("change", "a", "11")]
    held = Answer(events=(event("MODIFIED", "a", "11"),), hold=True)
    run = informer_run(listed("10", "a", "b"), held, calls=len(told))
    assert run.seen.calls == told
    watch = run.server.requests[1].query
    assert (watch["resourceVersion"], watch["allowWatchBookmarks"]) == ("10", "true")
    assert 60 <= int(watch["timeoutSeconds"]) < 120


@pytest.mark.parametrize(
    ("answers", "calls", "asked"),
    [
        pytest.param(
            (listed("10", "a", "b"), GONE_STATUS, listed("20", "a"), WAITING),
            [
                ("change", "a", "10"),
                ("change", "b", "10"),
                ("synced",),
                ("change", "a", "20"),
                ("delete", "b"),
            ],
            [("list", None), ("watch", "10"), ("list", None), ("watch", "20")],
            id="a 410 answer to the watch relists, and a store gone meanwhile is deleted after it",
        ),
        pytest.param(
            (
                listed("10", "a", "b"),
                Answer(events=(event("ADDED", "c", "11"), GONE_EVENT)),
                listed("20", "a", "c"),
                WAITING,
            ),
            [
                ("change", "a", "10"),
                ("change", "b", "10"),
                ("synced",),
                ("change", "c", "11"),
                ("change", "a", "20"),
                ("change", "c", "20"),
                ("delete", "b"),
            ],
            [("list", None), ("watch", "10"), ("list", None), ("watch", "20")],
            id="a 410 ERROR event mid-stream relists after the events before it",
        ),
    ],
)
def test_410_gone_relists_and_deletes_what_the_new_list_lacks(
    informer_run: Any, answers: tuple[Answer, ...], calls: list[tuple[str, ...]], asked: list[Any]
) -> None:
    run = informer_run(*answers)
    assert run.seen.calls == calls
    assert run.asked() == asked
    assert run.metrics.value("watch_restarts_total", reason="gone") == 1
    assert run.metrics.value("lists_total") == 2
    assert run.metrics.value("objects") == len(answers[-2].body["items"])


@pytest.mark.parametrize(
    ("stream", "resumed_at"),
    [
        pytest.param(
            (bookmark("15"),), "15", id="a bookmark moves the resume point without a change"
        ),
        pytest.param((event("MODIFIED", "a", "12"),), "12", id="a change moves the resume point"),
        pytest.param(
            (event("MODIFIED", "a", "12"), bookmark("30")),
            "30",
            id="a bookmark after a change moves it further",
        ),
    ],
)
def test_a_watch_ended_by_its_timeout_resumes_where_it_stopped_without_a_relist(
    informer_run: Any, stream: tuple[dict[str, Any], ...], resumed_at: str
) -> None:
    run = informer_run(listed("10", "a"), Answer(events=stream), WAITING)
    assert run.asked() == [("list", None), ("watch", "10"), ("watch", resumed_at)]
    changes = [
        ("change", e["object"]["metadata"]["name"], e["object"]["metadata"]["resourceVersion"])
        for e in stream
        if e["type"] != "BOOKMARK"
    ]
    assert run.seen.calls == [("change", "a", "10"), ("synced",), *changes]
    assert run.metrics.value("watch_restarts_total", reason="closed") == 1
    assert run.metrics.value("watch_restarts_total", reason="gone") == 0
    assert run.metrics.value("watch_events_total", type="BOOKMARK") == sum(
        e["type"] == "BOOKMARK" for e in stream
    )


def test_a_deleted_event_tells_the_owner_and_a_relist_does_not_repeat_it(informer_run: Any) -> None:
    run = informer_run(
        listed("10", "a", "b"),
        Answer(events=(event("DELETED", "b", "11"), GONE_EVENT)),
        listed("20", "a"),
        WAITING,
    )
    assert run.seen.calls == [
        ("change", "a", "10"),
        ("change", "b", "10"),
        ("synced",),
        ("delete", "b"),
        ("change", "a", "20"),
    ]


def test_each_pages_objects_reach_the_owner_before_the_next_page_is_asked_for(
    informer_run: Any,
) -> None:
    """The list never holds more than the page in hand: the owner keeps what it reads of each."""
    run = informer_run(listed("10", "a", "b", more="t1"), listed("10", "c"), WAITING)
    assert run.seen.calls == [
        ("change", "a", "10"),
        ("change", "b", "10"),
        ("change", "c", "10"),
        ("synced",),
    ]
    assert run.seen.asked_before_change == [1, 1, 2]
    second, watch = run.server.requests[1].query, run.server.requests[2].query
    assert (second["limit"], second["continue"]) == ("500", "t1")
    assert (watch["watch"], watch["resourceVersion"]) == ("true", "10")


@pytest.mark.parametrize(
    ("page_two", "relist_limit"),
    [
        pytest.param(
            GONE_STATUS,
            None,
            id="an expired continue token: ONE full list replaces the pages told, b is deleted",
        ),
        pytest.param(
            status(500, "InternalError", "etcd timed out"),
            "500",
            id="a list that failed after its first page: the relist deletes b, told by that page",
        ),
    ],
)
def test_objects_told_by_an_unfinished_list_are_deleted_when_the_next_list_lacks_them(
    informer_run: Any, page_two: Answer, relist_limit: str | None
) -> None:
    run = informer_run(listed("10", "a", "b", more="t1"), page_two, listed("20", "a", "c"), WAITING)
    assert run.seen.calls == [
        ("change", "a", "10"),
        ("change", "b", "10"),
        ("change", "a", "20"),
        ("change", "c", "20"),
        ("delete", "b"),
        ("synced",),
    ]
    relist, watch = run.server.requests[2].query, run.server.requests[3].query
    assert (relist.get("limit"), relist.get("continue")) == (relist_limit, None)
    assert watch["resourceVersion"] == "20"
    assert run.metrics.value("objects") == 2
