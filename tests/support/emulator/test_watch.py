"""The emulator's list and watch behave like kube-apiserver's for the real kubernetes client.

Kubernetes: "API Concepts: Efficient detection of changes", "Watch bookmarks", "Resource
versions", "410 Gone responses", "Retrieving large results sets in chunks".
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import urllib3
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from tests.support.emulator import ApiServerEmulator, errors
from tests.support.emulator.raw import send
from tests.support.emulator.samples import GROUP, PLURAL, VERSION, feedbackstore

Event = dict[str, Any]


class Collector:
    """Runs a watch in a thread and keeps what it yields, so tests can poll for it."""

    def __init__(self, stream: Iterator[Event]) -> None:
        self.events: list[Event] = []
        self.error: BaseException | None = None
        self.finished = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(stream,), daemon=True)
        self._thread.start()

    def _run(self, stream: Iterator[Event]) -> None:
        try:
            for event in stream:
                self.events.append(event)
        except BaseException as error:  # recorded for the test to inspect
            self.error = error
        finally:
            self.finished.set()

    def types(self) -> list[str]:
        return [e["type"] for e in self.events]

    def names(self, event_type: str) -> list[str]:
        return [e["raw_object"]["metadata"]["name"] for e in self.events if e["type"] == event_type]


@pytest.fixture
def api(api_client: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api_client)


def _watch_all(api: client.CustomObjectsApi, **kwargs: Any) -> Collector:
    kwargs.setdefault("timeout_seconds", 20)
    return Collector(
        watch.Watch().stream(api.list_cluster_custom_object, GROUP, VERSION, PLURAL, **kwargs)
    )


def test_a_list_carries_the_list_kind_and_a_resource_version(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    apiserver.create("team-a", feedbackstore("one"))
    apiserver.create("team-b", feedbackstore("two"))
    everything = api.list_cluster_custom_object(GROUP, VERSION, PLURAL)
    in_a = api.list_namespaced_custom_object(GROUP, VERSION, "team-a", PLURAL)
    assert everything["kind"] == "FeedbackStoreList"
    assert everything["apiVersion"] == "agents.ctxmesh.ai/v1beta1"
    assert everything["metadata"]["resourceVersion"] == str(apiserver.resource_version)
    assert [i["metadata"]["name"] for i in everything["items"]] == ["one", "two"]
    assert [i["metadata"]["name"] for i in in_a["items"]] == ["one"]


def test_resource_versions_are_one_global_increasing_counter(apiserver: ApiServerEmulator) -> None:
    first = apiserver.create("ns", feedbackstore("a"))
    second = apiserver.create("other", feedbackstore("b"))
    third = apiserver.update("ns", "a", lambda o: o["spec"].update(mode="Monitor"))
    versions = [int(o["metadata"]["resourceVersion"]) for o in (first, second, third)]
    assert versions == sorted(versions)
    assert len(set(versions)) == 3


def test_a_watch_from_the_list_resource_version_sees_every_later_change(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    apiserver.create("ns", feedbackstore("before"))
    listed = api.list_cluster_custom_object(GROUP, VERSION, PLURAL)
    collector = _watch_all(api, resource_version=listed["metadata"]["resourceVersion"])
    apiserver.create("ns", feedbackstore("after"))
    apiserver.update("ns", "before", lambda o: o["spec"].update(mode="Monitor"))
    apiserver.delete("ns", "after")
    apiserver.eventually(lambda: len(collector.events) >= 3)
    assert collector.types()[:3] == ["ADDED", "MODIFIED", "DELETED"]
    assert collector.names("ADDED") == ["after"]
    deleted = collector.events[2]["raw_object"]
    assert int(deleted["metadata"]["resourceVersion"]) == apiserver.resource_version


def test_a_watch_without_resource_version_starts_with_every_current_object(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    apiserver.create("ns", feedbackstore("a"))
    apiserver.create("ns", feedbackstore("b"))
    collector = _watch_all(api)
    apiserver.eventually(lambda: len(collector.events) >= 2)
    apiserver.create("ns", feedbackstore("c"))
    apiserver.eventually(lambda: len(collector.events) >= 3)
    assert collector.names("ADDED") == ["a", "b", "c"]


def test_a_namespaced_watch_sees_only_its_namespace(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    start = str(apiserver.resource_version)
    stream = watch.Watch().stream(
        api.list_namespaced_custom_object,
        GROUP,
        VERSION,
        "mine",
        PLURAL,
        resource_version=start,
        timeout_seconds=20,
    )
    collector = Collector(stream)
    apiserver.create("theirs", feedbackstore("other"))
    apiserver.create("mine", feedbackstore("own"))
    apiserver.eventually(lambda: collector.events)
    assert collector.names("ADDED") == ["own"]


def test_bookmarks_arrive_periodically_and_carry_only_a_resource_version(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    apiserver.create("ns", feedbackstore("a"))
    start = str(apiserver.resource_version)
    collector = _watch_all(api, resource_version=start, allow_watch_bookmarks=True)
    apiserver.eventually(lambda: collector.types().count("BOOKMARK") >= 2, timeout=15)
    bookmark = next(e for e in collector.events if e["type"] == "BOOKMARK")["raw_object"]
    assert bookmark == {
        "kind": "FeedbackStore",
        "apiVersion": "agents.ctxmesh.ai/v1beta1",
        "metadata": {"resourceVersion": start},
    }


def test_no_bookmarks_unless_the_client_allows_them(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    collector = _watch_all(api, resource_version=str(apiserver.resource_version), timeout_seconds=2)
    assert collector.finished.wait(20)
    assert collector.events == []
    assert collector.error is None


def test_timeout_seconds_ends_the_stream_cleanly(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    collector = _watch_all(api, resource_version=str(apiserver.resource_version), timeout_seconds=1)
    assert collector.finished.wait(20)
    assert collector.error is None
    (logged,) = [r for r in apiserver.requests if r.query.get("watch") == "true"]
    apiserver.eventually(lambda: logged.status == 200)  # logged as the handler returns


def test_a_watch_from_a_compacted_resource_version_gets_410_expired(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    old = str(apiserver.create("ns", feedbackstore("a"))["metadata"]["resourceVersion"])
    apiserver.update("ns", "a", lambda o: o["spec"].update(mode="Monitor"))
    apiserver.faults.expire_resource_versions()
    collector = _watch_all(api, resource_version=old)
    assert collector.finished.wait(20)
    assert isinstance(collector.error, ApiException)
    assert collector.error.status == 410
    assert "too old resource version" in str(collector.error.reason)


def test_the_client_retries_a_410_once_from_its_last_resource_version_then_raises(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    """kubernetes.watch.Watch retries one 410 (when no timeout_seconds is given), then raises."""
    apiserver.create("ns", feedbackstore("a"))
    old = str(apiserver.resource_version - 1)
    apiserver.faults.expire_resource_versions()
    stream = watch.Watch().stream(
        api.list_cluster_custom_object, GROUP, VERSION, PLURAL, resource_version=old
    )
    with pytest.raises(ApiException) as raised:
        next(iter(stream))
    assert raised.value.status == 410
    watches = [r for r in apiserver.requests if r.query.get("watch") == "true"]
    assert len(watches) == 2


def test_an_exact_list_at_a_compacted_resource_version_is_410(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    old = apiserver.create("ns", feedbackstore("a"))["metadata"]["resourceVersion"]
    apiserver.update("ns", "a", lambda o: o["spec"].update(mode="Monitor"))
    apiserver.faults.expire_resource_versions()
    with pytest.raises(ApiException) as raised:
        api.list_cluster_custom_object(
            GROUP, VERSION, PLURAL, resource_version=old, resource_version_match="Exact"
        )
    assert raised.value.status == 410
    assert json.loads(raised.value.body)["reason"] == "Expired"


def test_an_exact_list_before_compaction_shows_the_past(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    then = apiserver.create("ns", feedbackstore("a"))["metadata"]["resourceVersion"]
    apiserver.update("ns", "a", lambda o: o["spec"].update(mode="Monitor"))
    apiserver.create("ns", feedbackstore("b"))
    past = api.list_cluster_custom_object(
        GROUP, VERSION, PLURAL, resource_version=then, resource_version_match="Exact"
    )
    assert past["metadata"]["resourceVersion"] == then
    assert [(i["metadata"]["name"], i["spec"].get("mode")) for i in past["items"]] == [("a", None)]


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"resource_version_match": "Exact"}, "forbidden unless resourceVersion is provided"),
        (
            {"resource_version": "0", "resource_version_match": "Exact"},
            'forbidden for resourceVersion "0"',
        ),
        ({"resource_version": "5", "resource_version_match": "Newest"}, "Unsupported value"),
    ],
    ids=[
        "a resourceVersionMatch without resourceVersion is invalid",
        "an exact match at resourceVersion 0 is invalid",
        "an unknown resourceVersionMatch is invalid",
    ],
)
def test_list_options_are_validated_like_apiserver(
    api: client.CustomObjectsApi, kwargs: dict[str, str], fragment: str
) -> None:
    with pytest.raises(ApiException) as raised:
        api.list_cluster_custom_object(GROUP, VERSION, PLURAL, **kwargs)
    status = json.loads(raised.value.body)
    assert (raised.value.status, status["reason"]) == (422, "Invalid")
    assert fragment in status["details"]["causes"][0]["message"]


def test_a_list_from_the_future_is_a_504_with_retry_after(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    with pytest.raises(ApiException) as raised:
        api.list_cluster_custom_object(
            GROUP, VERSION, PLURAL, resource_version=str(apiserver.resource_version + 50)
        )
    assert raised.value.status == 504
    assert raised.value.headers["Retry-After"] == "1"
    assert "Too large resource version" in raised.value.body


def test_pagination_returns_a_consistent_snapshot_across_pages(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    for index in range(5):
        apiserver.create("ns", feedbackstore(f"fs-{index}"))
    first = api.list_cluster_custom_object(GROUP, VERSION, PLURAL, limit=2)
    apiserver.create("ns", feedbackstore("fs-9-late"))
    names = [i["metadata"]["name"] for i in first["items"]]
    token = first["metadata"]["continue"]
    assert first["metadata"]["remainingItemCount"] == 3
    while token:
        page = api.list_cluster_custom_object(GROUP, VERSION, PLURAL, limit=2, _continue=token)
        assert page["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
        names += [i["metadata"]["name"] for i in page["items"]]
        token = page["metadata"].get("continue")
    assert names == [f"fs-{i}" for i in range(5)]


def test_a_continue_token_from_before_compaction_is_410_with_a_token_for_the_rest_as_of_now(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    """The Status the real server sends (tests/kube/test_status_pager_real.py pins it there)."""
    for index in range(3):
        apiserver.create("ns", feedbackstore(f"fs-{index}"))
    first = api.list_cluster_custom_object(GROUP, VERSION, PLURAL, limit=1)
    apiserver.update("ns", "fs-0", lambda o: o["spec"].update(mode="Monitor"))
    apiserver.create("ns", feedbackstore("fs-3-late"))
    apiserver.faults.expire_resource_versions()
    with pytest.raises(ApiException) as raised:
        api.list_cluster_custom_object(
            GROUP, VERSION, PLURAL, limit=1, _continue=first["metadata"]["continue"]
        )
    assert raised.value.status == 410
    status = json.loads(raised.value.body)
    assert (status["code"], status["reason"]) == (410, "Expired")
    assert status["message"] == errors.CONTINUE_INCONSISTENT
    # The way on: the rest of the list after the first page, read at the latest revision.
    rest = api.list_cluster_custom_object(
        GROUP, VERSION, PLURAL, _continue=status["metadata"]["continue"]
    )
    assert [i["metadata"]["name"] for i in rest["items"]] == ["fs-1", "fs-2", "fs-3-late"]
    assert rest["metadata"]["resourceVersion"] == str(apiserver.resource_version)


def test_send_initial_events_ends_with_an_annotated_bookmark(
    apiserver: ApiServerEmulator,
) -> None:
    """Streaming lists (KEP-3157); the Python client has no parameter for it, so raw HTTP."""
    apiserver.create("ns", feedbackstore("a"))
    query = (
        "watch=1&sendInitialEvents=true&allowWatchBookmarks=true"
        "&resourceVersionMatch=NotOlderThan&timeoutSeconds=1"
    )
    url = f"{apiserver.url}/apis/{GROUP}/{VERSION}/{PLURAL}?{query}"
    with urllib.request.urlopen(url, timeout=20) as response:
        lines = [json.loads(line) for line in response.read().splitlines()]
    assert [e["type"] for e in lines[:2]] == ["ADDED", "BOOKMARK"]
    assert lines[1]["object"]["metadata"] == {
        "resourceVersion": str(apiserver.resource_version),
        "annotations": {"k8s.io/initial-events-end": "true"},
    }


@pytest.mark.parametrize(
    "clean", [False, True], ids=["a reset connection", "a cleanly ended stream"]
)
def test_drop_watches_ends_every_open_watch(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
    clean: bool,
) -> None:
    collectors = [
        _watch_all(api, resource_version=str(apiserver.resource_version)) for _ in range(2)
    ]
    apiserver.eventually(lambda: apiserver.open_watches == 2)
    assert apiserver.faults.drop_watches(clean=clean) == 2
    for collector in collectors:
        assert collector.finished.wait(20)
        if clean:
            assert collector.error is None
        else:
            assert isinstance(collector.error, urllib3.exceptions.HTTPError)


def test_restart_drops_watches_and_keeps_every_object(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    created = apiserver.create("ns", feedbackstore("kept"))
    collector = _watch_all(api, resource_version=str(apiserver.resource_version))
    apiserver.eventually(lambda: apiserver.open_watches)
    port = apiserver.port
    apiserver.restart()
    assert collector.finished.wait(20)
    assert collector.error is not None
    assert apiserver.port == port
    after = api.get_namespaced_custom_object(GROUP, VERSION, "ns", PLURAL, "kept")
    assert after["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert after["metadata"]["uid"] == created["metadata"]["uid"]


def test_after_a_restart_a_watch_from_before_it_is_410_and_from_its_revision_misses_nothing(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    """The real kube-apiserver's new watch cache starts at the revision it listed at, so a
    watch resumed from an older resourceVersion is 410 "too old resource version" although
    etcd still has that history (seen on v1.37: tests/kube/test_status_writer_real.py)."""
    before = str(apiserver.resource_version)
    apiserver.create("ns", feedbackstore("before-restart"))
    apiserver.restart()
    restarted = str(apiserver.resource_version)
    apiserver.create("ns", feedbackstore("during"))
    old = _watch_all(api, resource_version=before)
    assert old.finished.wait(20)
    assert isinstance(old.error, ApiException)
    assert old.error.status == 410
    assert f"too old resource version: {before} ({restarted})" in str(old.error.body or old.error)
    history = api.list_cluster_custom_object(
        GROUP, VERSION, PLURAL, resource_version=before, resource_version_match="Exact"
    )
    assert history["items"] == []  # etcd still has the past
    fresh = _watch_all(api, resource_version=restarted)
    apiserver.eventually(lambda: fresh.events)
    assert fresh.names("ADDED") == ["during"]


def test_history_beyond_its_limit_is_compacted_away() -> None:
    """A bounded history, like the watch cache: a start older than what is kept is 410."""
    with ApiServerEmulator(history_limit=5) as small:
        first = small.create("ns", feedbackstore("fs"))["metadata"]["resourceVersion"]
        for index in range(20):
            small.update("ns", "fs", lambda o, i=index: o["spec"].update(mode=f"m{i}"))
        assert small.compacted_resource_version > int(first)
        api = client.CustomObjectsApi(small.api_client())
        collector = _watch_all(api, resource_version=first)
        assert collector.finished.wait(20)
        assert isinstance(collector.error, ApiException)
        assert collector.error.status == 410
        recent = str(small.compacted_resource_version)
        later = _watch_all(api, resource_version=recent, timeout_seconds=1)
        assert later.finished.wait(20)
        assert later.error is None
        assert later.types() == ["MODIFIED"] * (
            small.resource_version - small.compacted_resource_version
        )


@pytest.mark.parametrize(
    ("query", "status"),
    [
        ("resourceVersion=abc", 400),
        ("watch=true&resourceVersion=abc", 400),
        ("watch=true&resourceVersion=-5", 400),
        ("watch=true&timeoutSeconds=soon", 400),
        ("continue=not-a-token", 400),
        ("continue=" + "A" * 10_000, 400),
        ("limit=many", 422),
        ("limit=-3", 200),
        ("labelSelector=app%3Dx&fieldSelector=metadata.name%3Dy", 200),
    ],
    ids=[
        "a list from a non-numeric resourceVersion is a bad request",
        "a watch from a non-numeric resourceVersion is a bad request",
        "a watch from a negative resourceVersion is a bad request",
        "a non-numeric timeoutSeconds is a bad request",
        "a garbage continue token is a bad request",
        "a huge garbage continue token is a bad request",
        "a non-numeric limit is invalid",
        "a negative limit means no limit",
        "selectors are accepted and ignored",
    ],
)
def test_hostile_list_and_watch_queries_get_status_answers(
    apiserver: ApiServerEmulator, query: str, status: int
) -> None:
    apiserver.create("ns", feedbackstore("a"))
    answer_status, answer, _ = send(
        apiserver.url, "GET", f"/apis/{GROUP}/{VERSION}/{PLURAL}?{query}"
    )
    assert answer_status == status
    assert answer["kind"] == ("FeedbackStoreList" if status == 200 else "Status")


def test_timeout_seconds_zero_means_the_server_default() -> None:
    with ApiServerEmulator(watch_timeout=1.0) as short:
        started = time.monotonic()
        status, _, _ = send(
            short.url, "GET", f"/apis/{GROUP}/{VERSION}/{PLURAL}?watch=1&timeoutSeconds=0"
        )
        assert status == 200
        assert 0.9 <= time.monotonic() - started < 15


def test_a_garbled_change_goes_out_as_a_line_that_is_not_json_and_comes_again_on_a_new_watch(
    apiserver: ApiServerEmulator,
) -> None:
    start = str(apiserver.create("ns", feedbackstore("a"))["metadata"]["resourceVersion"])
    apiserver.faults.garble_watch_events(1, path_contains=f"/{PLURAL}")
    apiserver.update("ns", "a", lambda o: o["spec"].update(mode="Monitor"))
    apiserver.update("ns", "a", lambda o: o["spec"].update(mode="Enforce"))
    path = f"/apis/{GROUP}/{VERSION}/{PLURAL}?watch=true&timeoutSeconds=1&resourceVersion={start}"

    def lines() -> list[bytes]:
        with urllib.request.urlopen(apiserver.url + path, timeout=30) as response:
            return response.read().splitlines()

    garbled, after = lines()
    with pytest.raises(json.JSONDecodeError, match=r"^Expecting value: line 1"):
        json.loads(garbled)
    assert json.loads(after)["object"]["spec"]["mode"] == "Enforce"
    again = [json.loads(line)["object"]["spec"]["mode"] for line in lines()]
    assert again == ["Monitor", "Enforce"]
