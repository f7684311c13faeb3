"""Fault injection and the test-facing API of the emulator, seen through the real client.

Kubernetes: errors a controller must survive — 500 InternalError, 429 TooManyRequests with
Retry-After (API Priority and Fairness), 409 Conflict from a concurrent writer (optimistic
concurrency), slow answers, dropped connections — and the kubeconfig the client loads.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from tests.support.emulator import ApiServerEmulator
from tests.support.emulator.samples import (
    APPLY_PATCH,
    GROUP,
    PLURAL,
    VERSION,
    condition,
    feedbackstore,
    status_apply,
)


@pytest.fixture
def api(api_client: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api_client)


def _list(api: client.CustomObjectsApi) -> object:
    return api.list_cluster_custom_object(GROUP, VERSION, PLURAL)


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        (500, "InternalError"),
        (429, "TooManyRequests"),
        (503, "ServiceUnavailable"),
        (504, "Timeout"),
    ],
    ids=[
        "an injected 500 is an InternalError",
        "an injected 429 is TooManyRequests",
        "an injected 503 is ServiceUnavailable",
        "an injected 504 is a Timeout",
    ],
)
def test_fail_next_answers_the_next_writes_with_the_status(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
    status: int,
    reason: str,
) -> None:
    apiserver.create("ns", feedbackstore("fs"))
    apiserver.faults.fail_next(2, status=status)
    for _ in range(2):
        with pytest.raises(ApiException) as raised:
            _merge_status(api)
        assert raised.value.status == status
        assert json.loads(raised.value.body)["reason"] == reason
    assert _merge_status(api)["status"] == {"a": 1}


def _merge_status(api: client.CustomObjectsApi) -> dict[str, Any]:
    answer: dict[str, Any] = api.patch_namespaced_custom_object_status(
        GROUP, VERSION, "ns", PLURAL, "fs", {"status": {"a": 1}}
    )
    return answer


def test_an_injected_500_on_a_read_reaches_the_caller(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    apiserver.faults.fail_next(1, status=500, method="GET")
    with pytest.raises(ApiException) as raised:
        _list(api)
    assert raised.value.status == 500
    assert _list(api)["kind"] == "FeedbackStoreList"


def test_a_429_carries_retry_after_in_header_and_details(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    apiserver.create("ns", feedbackstore("fs"))
    apiserver.faults.fail_next(1, status=429, retry_after=3)
    with pytest.raises(ApiException) as raised:
        _merge_status(api)
    assert raised.value.headers["Retry-After"] == "3"
    assert json.loads(raised.value.body)["details"] == {"retryAfterSeconds": 3}


def test_the_client_transport_retries_a_429_on_get_after_retry_after(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    """urllib3's default Retry honours Retry-After on 413/429/503 for GET/PUT/DELETE (not PATCH
    or POST), up to three times, so a lone 429 on a list never reaches the caller."""
    apiserver.faults.fail_next(1, status=429, method="GET", retry_after=1)
    started = time.monotonic()
    assert _list(api)["kind"] == "FeedbackStoreList"
    assert time.monotonic() - started >= 1.0
    assert [r.status for r in apiserver.requests] == [429, 200]


def test_failures_can_target_a_method_and_a_path(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    apiserver.create("ns", feedbackstore("fs"))
    apiserver.faults.fail_next(1, status=500, method="PATCH", path_contains="/status")
    _list(api)
    api.patch_namespaced_custom_object(
        GROUP, VERSION, "ns", PLURAL, "fs", {"spec": {"mode": "Monitor"}}
    )
    with pytest.raises(ApiException) as raised:
        api.patch_namespaced_custom_object_status(
            GROUP, VERSION, "ns", PLURAL, "fs", {"status": {}}
        )
    assert raised.value.status == 500
    assert [r.status for r in apiserver.requests] == [200, 200, 500]


def test_delay_holds_matching_requests(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    apiserver.faults.delay(0.5, method="GET", count=1)
    started = time.monotonic()
    _list(api)
    slow = time.monotonic() - started
    started = time.monotonic()
    _list(api)
    fast = time.monotonic() - started
    assert slow >= 0.5
    assert fast < slow


def test_a_delay_longer_than_the_client_timeout_times_the_client_out(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    """The transport retries a read timeout on GET three times, so the delay must persist."""
    apiserver.faults.delay(1.0, method="GET")
    with pytest.raises(Exception, match="timed out"):
        api.list_cluster_custom_object(GROUP, VERSION, PLURAL, _request_timeout=0.2)
    apiserver.faults.clear()
    assert _list(api)["kind"] == "FeedbackStoreList"


def test_a_lost_race_stores_the_concurrent_write_then_answers_409(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    before = apiserver.create("ns", feedbackstore("fs"))
    apiserver.faults.conflict_next_status_write()
    with pytest.raises(ApiException) as raised:
        api.patch_namespaced_custom_object_status(
            GROUP,
            VERSION,
            "ns",
            PLURAL,
            "fs",
            status_apply([condition("Validated")]),
            field_manager="writer",
            force=True,
            _content_type=APPLY_PATCH,
        )
    assert (raised.value.status, json.loads(raised.value.body)["reason"]) == (409, "Conflict")
    raced = apiserver.get("ns", "fs")
    assert raced is not None
    assert int(raced["metadata"]["resourceVersion"]) > int(before["metadata"]["resourceVersion"])
    assert raced["metadata"]["annotations"] == {"emulator.ctxmesh.ai/concurrent-writes": "1"}
    assert "status" not in raced
    retried = api.patch_namespaced_custom_object_status(
        GROUP,
        VERSION,
        "ns",
        PLURAL,
        "fs",
        status_apply([condition("Validated")]),
        field_manager="writer",
        force=True,
        _content_type=APPLY_PATCH,
    )
    assert retried["status"]["conditions"][0]["type"] == "Validated"


def test_a_lost_race_can_write_another_controllers_condition(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    apiserver.create("ns", feedbackstore("fs"))
    apiserver.faults.conflict_next_status_write(
        mutate=lambda o: (
            o.setdefault("status", {}).setdefault("conditions", []).append(condition("Ready"))
        )
    )
    with pytest.raises(ApiException) as raised:
        api.patch_namespaced_custom_object_status(
            GROUP, VERSION, "ns", PLURAL, "fs", {"status": {}}
        )
    assert (raised.value.status, json.loads(raised.value.body)["reason"]) == (409, "Conflict")
    raced = apiserver.get("ns", "fs")
    assert raced is not None
    assert [c["type"] for c in raced["status"]["conditions"]] == ["Ready"]


def test_the_request_log_counts_writes(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    apiserver.create("ns", feedbackstore("fs"))
    _list(api)
    assert apiserver.writes() == []
    api.patch_namespaced_custom_object_status(
        GROUP, VERSION, "ns", PLURAL, "fs", {"status": {"a": 1}}
    )
    (write,) = apiserver.writes()
    assert (write.method, write.content_type, write.status) == (
        "PATCH",
        "application/merge-patch+json",
        200,
    )
    assert write.path.endswith("/namespaces/ns/feedbackstores/fs/status")
    assert write.json() == {"status": {"a": 1}}
    apiserver.reset_requests()
    assert apiserver.requests == []


def test_an_open_watch_is_logged_without_a_status_until_it_ends(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    stream = watch.Watch().stream(
        api.list_cluster_custom_object, GROUP, VERSION, PLURAL, timeout_seconds=20
    )
    thread = threading.Thread(target=lambda: list(stream), daemon=True)
    thread.start()
    apiserver.eventually(lambda: apiserver.open_watches)
    (open_watch,) = apiserver.requests
    assert open_watch.status is None
    apiserver.faults.drop_watches(clean=True)
    thread.join(20)
    apiserver.eventually(lambda: open_watch.status == 200)


def test_restart_refuses_connections_during_downtime_then_serves_the_same_store(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    apiserver.create("ns", feedbackstore("fs"))
    apiserver.go_down()
    # What the client raises, unwrapped; a timeout long enough that only a refusal ends it.
    with pytest.raises(urllib3.exceptions.MaxRetryError, match="Connection refused") as raised:
        api.list_cluster_custom_object(GROUP, VERSION, PLURAL, _request_timeout=10)
    apiserver.come_back()
    refused = raised.value.reason
    assert isinstance(refused, urllib3.exceptions.NewConnectionError), refused
    assert isinstance(refused.__cause__, ConnectionRefusedError), "refused, not timed out or reset"
    assert [i["metadata"]["name"] for i in _list(api)["items"]] == ["fs"]


def test_the_kubeconfig_points_the_client_at_the_emulator(
    apiserver: ApiServerEmulator,
    tmp_path: Path,
) -> None:
    apiserver.create("ns", feedbackstore("fs"))
    path = apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    loaded = config.new_client_from_config(config_file=str(path))
    items = client.CustomObjectsApi(loaded).list_cluster_custom_object(GROUP, VERSION, PLURAL)[
        "items"
    ]
    assert [i["metadata"]["name"] for i in items] == ["fs"]
    assert loaded.configuration.host == apiserver.url


def test_an_unknown_path_is_a_404_status(
    apiserver: ApiServerEmulator, api_client: client.ApiClient
) -> None:
    custom = client.CustomObjectsApi(api_client)
    with pytest.raises(ApiException) as raised:
        custom.list_cluster_custom_object("example.com", "v1", "widgets")
    assert raised.value.status == 404
    assert json.loads(raised.value.body)["reason"] == "NotFound"


def test_stop_and_start_again_is_allowed(apiserver: ApiServerEmulator) -> None:
    apiserver.create("ns", feedbackstore("fs"))
    apiserver.stop()
    apiserver.start()
    answer = client.CustomObjectsApi(apiserver.api_client()).list_cluster_custom_object(
        GROUP, VERSION, PLURAL
    )
    assert len(answer["items"]) == 1
