"""Leases and Events on the emulator, through CoordinationV1Api, CoreV1Api and EventsV1Api.

Kubernetes: "Leases" (coordination.k8s.io/v1), ``metav1.MicroTime`` decoding
(``2006-01-02T15:04:05.000000Z07:00``), "Optimistic concurrency" for Lease updates, core/v1 and
events.k8s.io/v1 Events with ``ValidateEventCreate``, and API discovery.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.support.emulator import ApiServerEmulator
from tests.support.emulator.raw import send
from tests.support.emulator.resources import LEASES

LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/ns/leases"


@pytest.fixture
def leases(api_client: client.ApiClient) -> client.CoordinationV1Api:
    return client.CoordinationV1Api(api_client)


def _lease(holder: str, when: datetime | None = None) -> client.V1Lease:
    moment = when or datetime(2026, 11, 30, 12, 0, 0, 123456, tzinfo=UTC)
    return client.V1Lease(
        metadata=client.V1ObjectMeta(name="status-writer"),
        spec=client.V1LeaseSpec(
            holder_identity=holder,
            lease_duration_seconds=15,
            acquire_time=moment,
            renew_time=moment,
        ),
    )


def _raw_lease(acquire: str) -> bytes:
    return json.dumps(
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "raw"},
            "spec": {"holderIdentity": "a", "acquireTime": acquire, "renewTime": acquire},
        }
    ).encode()


def test_a_lease_round_trips_with_microsecond_times(
    apiserver: ApiServerEmulator,
    leases: client.CoordinationV1Api,
) -> None:
    created = leases.create_namespaced_lease("ns", _lease("pod-a-x1"))
    assert created.spec.holder_identity == "pod-a-x1"
    stored = apiserver.leases("ns")[0]
    assert stored["spec"]["acquireTime"] == "2026-11-30T12:00:00.123456Z"
    fetched = leases.read_namespaced_lease("status-writer", "ns")
    assert fetched.spec.renew_time == datetime(2026, 11, 30, 12, 0, 0, 123456, tzinfo=UTC)


@pytest.mark.parametrize(
    ("acquire", "accepted"),
    [
        ("2026-11-30T12:00:00.000000Z", True),
        ("2026-11-30T13:00:00.000001+01:00", True),
        ("2026-11-30T12:00:00Z", False),
        ("2026-11-30T12:00:00+00:00", False),
        ("2026-11-30T12:00:00.123Z", False),
        ("2026-11-30T12:00:00.1234567Z", False),
        ("2026-11-30 12:00:00.000000Z", False),
        ("2026-13-30T12:00:00.000000Z", False),
        ("yesterday", False),
    ],
    ids=[
        "six fractional digits in UTC are accepted",
        "six fractional digits with an offset are accepted",
        "no fractional digits are refused",
        "isoformat without microseconds is refused",
        "three fractional digits are refused",
        "seven fractional digits are refused",
        "a space instead of T is refused",
        "month 13 is refused",
        "prose is refused",
    ],
)
def test_lease_times_must_be_micro_time(
    apiserver: ApiServerEmulator, acquire: str, accepted: bool
) -> None:
    status, answer, _ = send(
        apiserver.url, "POST", LEASE_PATH, _raw_lease(acquire), "application/json"
    )
    if accepted:
        assert status == 201
        assert answer["spec"]["acquireTime"].endswith("Z")
        assert len(answer["spec"]["acquireTime"]) == len("2026-11-30T12:00:00.000000Z")
    else:
        assert (status, answer["reason"]) == (400, "BadRequest")
        assert answer["message"].startswith(
            'Lease in version "v1" cannot be handled as a Lease: parsing time'
        )
        assert apiserver.leases("ns") == []


def test_the_client_sends_isoformat_which_drops_zero_microseconds_and_is_refused(
    leases: client.CoordinationV1Api,
) -> None:
    on_the_second = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
    with pytest.raises(ApiException) as raised:
        leases.create_namespaced_lease("ns", _lease("pod-a", on_the_second))
    assert raised.value.status == 400


def test_a_patch_that_leaves_a_bad_time_is_422_on_patch(
    leases: client.CoordinationV1Api,
) -> None:
    leases.create_namespaced_lease("ns", _lease("pod-a"))
    with pytest.raises(ApiException) as raised:
        leases.patch_namespaced_lease(
            "status-writer", "ns", {"spec": {"renewTime": "2026-11-30T12:00:01Z"}}
        )
    status = json.loads(raised.value.body)
    assert (raised.value.status, status["details"]["causes"][0]["field"]) == (422, "patch")


def test_a_lease_update_with_a_stale_resource_version_is_409(
    leases: client.CoordinationV1Api,
) -> None:
    first = leases.create_namespaced_lease("ns", _lease("pod-a"))
    first.spec.holder_identity = "pod-b"
    leases.replace_namespaced_lease("status-writer", "ns", first)
    first.spec.holder_identity = "pod-c"
    with pytest.raises(ApiException) as raised:
        leases.replace_namespaced_lease("status-writer", "ns", first)
    assert raised.value.status == 409
    assert leases.read_namespaced_lease("status-writer", "ns").spec.holder_identity == "pod-b"


def test_a_lease_update_without_resource_version_is_unconditional(
    leases: client.CoordinationV1Api,
) -> None:
    """Built-in types allow unconditional updates (unlike custom resources)."""
    lease = leases.create_namespaced_lease("ns", _lease("pod-a"))
    lease.metadata.resource_version = None
    lease.spec.holder_identity = "pod-b"
    assert (
        leases.replace_namespaced_lease("status-writer", "ns", lease).spec.holder_identity
        == "pod-b"
    )


def test_a_lease_can_be_patched_released_and_deleted(
    apiserver: ApiServerEmulator,
    leases: client.CoordinationV1Api,
) -> None:
    leases.create_namespaced_lease("ns", _lease("pod-a"))
    released = leases.patch_namespaced_lease(
        "status-writer", "ns", {"spec": {"holderIdentity": None, "leaseDurationSeconds": 1}}
    )
    assert released.spec.holder_identity is None
    answer = leases.delete_namespaced_lease("status-writer", "ns")  # a dict in client v37
    assert answer["status"] == "Success"
    assert apiserver.leases() == []
    with pytest.raises(ApiException) as raised:
        leases.read_namespaced_lease("status-writer", "ns")
    assert raised.value.status == 404
    assert (
        json.loads(raised.value.body)["message"]
        == 'leases.coordination.k8s.io "status-writer" not found'
    )


def test_a_wrongly_typed_lease_field_is_a_bad_request(apiserver: ApiServerEmulator) -> None:
    body = {"metadata": {"name": "x"}, "spec": {"leaseDurationSeconds": "15"}}
    status, answer, _ = send(
        apiserver.url, "POST", LEASE_PATH, json.dumps(body).encode(), "application/json"
    )
    assert (status, answer["reason"]) == (400, "BadRequest")


def test_test_setup_can_seed_a_lease(
    apiserver: ApiServerEmulator, leases: client.CoordinationV1Api
) -> None:
    body = {
        "metadata": {"name": "held"},
        "spec": {"holderIdentity": "ghost", "leaseDurationSeconds": 15},
    }
    apiserver.create("ns", body, resource=LEASES)
    assert leases.read_namespaced_lease("held", "ns").spec.holder_identity == "ghost"


def _core_event(name: str, **overrides: Any) -> client.CoreV1Event:
    fields: dict[str, Any] = {
        "metadata": client.V1ObjectMeta(name=name, namespace="ns"),
        "involved_object": client.V1ObjectReference(
            api_version="agents.ctxmesh.ai/v1beta1", kind="FeedbackStore", name="fs", namespace="ns"
        ),
        "reason": "InvalidSpec",
        "message": "spec.human: Required value",
        "type": "Warning",
        "source": client.V1EventSource(component="feedbackstore-status-writer"),
        "count": 1,
    }
    fields.update(overrides)
    return client.CoreV1Event(**fields)


def test_core_events_are_stored_listed_and_patched(
    apiserver: ApiServerEmulator,
    api_client: client.ApiClient,
) -> None:
    core = client.CoreV1Api(api_client)
    core.create_namespaced_event("ns", _core_event("fs.1"))
    core.patch_namespaced_event("fs.1", "ns", {"count": 2})
    listed = core.list_namespaced_event("ns")
    assert [(e.reason, e.count) for e in listed.items] == [("InvalidSpec", 2)]
    stored = apiserver.events("ns")
    assert [(e["apiVersion"], e["type"], e["involvedObject"]["name"]) for e in stored] == [
        ("v1", "Warning", "fs")
    ]
    assert core.list_event_for_all_namespaces().items[0].metadata.name == "fs.1"


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"type": "Fatal"}, "type"),
        (
            {
                "involved_object": client.V1ObjectReference(
                    kind="FeedbackStore", name="fs", namespace="elsewhere"
                )
            },
            "involvedObject.namespace",
        ),
    ],
    ids=[
        "an event type other than Normal or Warning is invalid",
        "an event about another namespace is invalid",
    ],
)
def test_malformed_core_events_are_422(
    api_client: client.ApiClient,
    overrides: dict[str, Any],
    field: str,
) -> None:
    with pytest.raises(ApiException) as raised:
        client.CoreV1Api(api_client).create_namespaced_event("ns", _core_event("bad", **overrides))
    assert raised.value.status == 422
    assert json.loads(raised.value.body)["details"]["causes"][0]["field"] == field


def test_events_v1_need_their_required_fields_and_a_micro_time(
    apiserver: ApiServerEmulator,
    api_client: client.ApiClient,
) -> None:
    events = client.EventsV1Api(api_client)
    good = client.EventsV1Event(
        metadata=client.V1ObjectMeta(name="fs.2", namespace="ns"),
        event_time=datetime(2026, 11, 30, 12, 0, 0, 1, tzinfo=UTC),
        reporting_controller="ctxmesh.ai/feedbackstore-status-writer",
        reporting_instance="pod-a-x1",
        action="Validate",
        reason="SpecCoherent",
        type="Normal",
        note="feedback store spec is coherent",
        regarding=client.V1ObjectReference(kind="FeedbackStore", name="fs", namespace="ns"),
    )
    events.create_namespaced_event("ns", good)
    assert [e.reason for e in events.list_namespaced_event("ns").items] == ["SpecCoherent"]
    assert apiserver.events()[0]["eventTime"] == "2026-11-30T12:00:00.000001Z"
    incomplete = client.EventsV1Event(
        metadata=client.V1ObjectMeta(name="fs.3"),
        event_time=datetime(2026, 11, 30, 12, 0, 0, 1, tzinfo=UTC),
    )
    with pytest.raises(ApiException) as raised:
        events.create_namespaced_event("ns", incomplete)
    fields = {c["field"] for c in json.loads(raised.value.body)["details"]["causes"]}
    assert fields == {"reportingController", "reportingInstance", "action", "reason"}


def test_discovery_answers_what_the_client_asks(api_client: client.ApiClient) -> None:
    version = client.VersionApi(api_client).get_code()
    assert version.major == "1"
    groups = {g.name for g in client.ApisApi(api_client).get_api_versions().groups}
    assert {"agents.ctxmesh.ai", "coordination.k8s.io", "events.k8s.io"} <= groups
    served = client.CoordinationV1Api(api_client).get_api_resources()
    assert [r.name for r in served.resources] == ["leases"]
    custom = client.CustomObjectsApi(api_client).get_api_resources("agents.ctxmesh.ai", "v1beta1")
    assert [r.name for r in custom.resources] == ["feedbackstores", "feedbackstores/status"]
