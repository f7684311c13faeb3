"""Create, get, update and delete on the emulator behave like kube-apiserver for a CRD.

Kubernetes: "Custom Resources: Status subresource" (status and spec writes are separate;
metadata.generation moves only on spec changes), "API Conventions: Concurrency Control and
Consistency" (resourceVersion preconditions → 409), "API Concepts: Status" error shapes,
"Finalizers".
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.support.emulator import ApiServerEmulator
from tests.support.emulator.raw import send
from tests.support.emulator.samples import GROUP, PLURAL, VERSION, condition, feedbackstore


@pytest.fixture
def api(api_client: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api_client)


def _status(error: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(error.body)
    return body


def _create(api: client.CustomObjectsApi, name: str, **kwargs: Any) -> dict[str, Any]:
    created: dict[str, Any] = api.create_namespaced_custom_object(
        GROUP, VERSION, "ns", PLURAL, feedbackstore(name, **kwargs)
    )
    return created


def test_create_fills_in_system_metadata_and_drops_status(api: client.CustomObjectsApi) -> None:
    created = _create(api, "new", conditions=[condition("Validated")])
    meta = created["metadata"]
    assert meta["generation"] == 1
    assert meta["namespace"] == "ns"
    assert meta["uid"]
    assert meta["creationTimestamp"].endswith("Z")
    assert int(meta["resourceVersion"]) > 0
    assert "status" not in created
    assert created["kind"] == "FeedbackStore"


def test_test_setup_create_keeps_status_for_seeding(apiserver: ApiServerEmulator) -> None:
    seeded = apiserver.create("ns", feedbackstore("seeded", conditions=[condition("Validated")]))
    assert seeded["status"]["conditions"][0]["type"] == "Validated"
    assert seeded["metadata"]["managedFields"][0]["manager"] == "emulator-setup"


@pytest.mark.parametrize(
    ("change", "generation"),
    [
        (lambda o: o["spec"].update(mode="Monitor"), 2),
        (lambda o: o["metadata"].setdefault("labels", {}).update(team="a"), 1),
        (lambda o: o["metadata"].setdefault("annotations", {}).update(note="x"), 1),
    ],
    ids=[
        "a spec change bumps generation",
        "a label change does not",
        "an annotation change does not",
    ],
)
def test_generation_follows_spec_changes_on_update(
    api: client.CustomObjectsApi, change: Any, generation: int
) -> None:
    current = _create(api, "fs")
    change(current)
    updated = api.replace_namespaced_custom_object(GROUP, VERSION, "ns", PLURAL, "fs", current)
    assert updated["metadata"]["generation"] == generation
    assert int(updated["metadata"]["resourceVersion"]) > int(current["metadata"]["resourceVersion"])


def test_status_writes_never_bump_generation_and_ignore_spec(api: client.CustomObjectsApi) -> None:
    current = _create(api, "fs")
    current["status"] = {"conditions": [condition("Validated")]}
    current["spec"] = {"mode": "Monitor"}
    updated = api.replace_namespaced_custom_object_status(
        GROUP, VERSION, "ns", PLURAL, "fs", current
    )
    assert updated["metadata"]["generation"] == 1
    assert updated["status"]["conditions"][0]["type"] == "Validated"
    assert "mode" not in updated["spec"]


def test_main_resource_writes_ignore_status(api: client.CustomObjectsApi) -> None:
    _create(api, "fs")
    patched = api.patch_namespaced_custom_object(
        GROUP, VERSION, "ns", PLURAL, "fs", {"spec": {"mode": "Monitor"}, "status": {"x": 1}}
    )
    assert patched["spec"]["mode"] == "Monitor"
    assert "status" not in patched
    assert patched["metadata"]["generation"] == 2


def test_a_write_that_changes_nothing_keeps_the_resource_version(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    created = _create(api, "fs")
    again = api.patch_namespaced_custom_object(
        GROUP, VERSION, "ns", PLURAL, "fs", {"spec": created["spec"]}
    )
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert apiserver.resource_version == int(created["metadata"]["resourceVersion"])


def test_put_with_a_stale_resource_version_is_409_conflict(api: client.CustomObjectsApi) -> None:
    stale = _create(api, "fs")
    api.patch_namespaced_custom_object(
        GROUP, VERSION, "ns", PLURAL, "fs", {"spec": {"mode": "Monitor"}}
    )
    with pytest.raises(ApiException) as raised:
        api.replace_namespaced_custom_object(GROUP, VERSION, "ns", PLURAL, "fs", stale)
    status = _status(raised.value)
    assert (raised.value.status, status["reason"]) == (409, "Conflict")
    assert status["message"] == (
        'Operation cannot be fulfilled on feedbackstores.agents.ctxmesh.ai "fs": the object has '
        "been modified; please apply your changes to the latest version and try again"
    )
    assert status["details"] == {"name": "fs", "group": GROUP, "kind": PLURAL}


def test_status_put_with_a_stale_resource_version_is_409_conflict(
    api: client.CustomObjectsApi,
) -> None:
    stale = _create(api, "fs")
    api.patch_namespaced_custom_object(
        GROUP, VERSION, "ns", PLURAL, "fs", {"spec": {"mode": "Monitor"}}
    )
    stale["status"] = {"conditions": [condition("Validated")]}
    with pytest.raises(ApiException) as raised:
        api.replace_namespaced_custom_object_status(GROUP, VERSION, "ns", PLURAL, "fs", stale)
    assert raised.value.status == 409


def test_a_merge_patch_carrying_a_stale_resource_version_is_409(
    api: client.CustomObjectsApi,
) -> None:
    stale = _create(api, "fs")
    api.patch_namespaced_custom_object(
        GROUP, VERSION, "ns", PLURAL, "fs", {"spec": {"mode": "Monitor"}}
    )
    patch = {
        "metadata": {"resourceVersion": stale["metadata"]["resourceVersion"]},
        "status": {"a": 1},
    }
    with pytest.raises(ApiException) as raised:
        api.patch_namespaced_custom_object_status(GROUP, VERSION, "ns", PLURAL, "fs", patch)
    assert raised.value.status == 409


def test_put_on_a_custom_resource_requires_a_resource_version(api: client.CustomObjectsApi) -> None:
    current = _create(api, "fs")
    del current["metadata"]["resourceVersion"]
    with pytest.raises(ApiException) as raised:
        api.replace_namespaced_custom_object(GROUP, VERSION, "ns", PLURAL, "fs", current)
    status = _status(raised.value)
    assert (raised.value.status, status["reason"]) == (422, "Invalid")
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: 0x0: must be specified for an update",
            "field": "metadata.resourceVersion",
        }
    ]


def test_creating_an_existing_name_is_409_already_exists(api: client.CustomObjectsApi) -> None:
    _create(api, "fs")
    with pytest.raises(ApiException) as raised:
        _create(api, "fs")
    assert (raised.value.status, _status(raised.value)["reason"]) == (409, "AlreadyExists")


@pytest.mark.parametrize(
    "call",
    [
        lambda api: api.get_namespaced_custom_object(GROUP, VERSION, "ns", PLURAL, "ghost"),
        lambda api: api.get_namespaced_custom_object_status(GROUP, VERSION, "ns", PLURAL, "ghost"),
        lambda api: api.patch_namespaced_custom_object(
            GROUP, VERSION, "ns", PLURAL, "ghost", {"spec": {}}
        ),
        lambda api: api.patch_namespaced_custom_object_status(
            GROUP,
            VERSION,
            "ns",
            PLURAL,
            "ghost",
            {"apiVersion": f"{GROUP}/{VERSION}", "kind": "FeedbackStore"},
            field_manager="m",
            _content_type="application/apply-patch+yaml",
        ),
        lambda api: api.delete_namespaced_custom_object(GROUP, VERSION, "ns", PLURAL, "ghost"),
    ],
    ids=[
        "get of a missing object is 404",
        "get of a missing object's status is 404",
        "merge patch of a missing object is 404",
        "status apply to a missing object is 404",
        "delete of a missing object is 404",
    ],
)
def test_missing_objects_are_404_not_found(api: client.CustomObjectsApi, call: Any) -> None:
    with pytest.raises(ApiException) as raised:
        call(api)
    status = _status(raised.value)
    assert (raised.value.status, status["reason"]) == (404, "NotFound")
    assert status["message"] == 'feedbackstores.agents.ctxmesh.ai "ghost" not found'


def test_delete_answers_a_success_status_naming_the_object(
    api: client.CustomObjectsApi, apiserver: ApiServerEmulator
) -> None:
    """genericregistry.Store.finalizeDelete: CRDs do not set ReturnDeletedObject."""
    created = _create(api, "fs")
    deleted = api.delete_namespaced_custom_object(GROUP, VERSION, "ns", PLURAL, "fs")
    assert deleted == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {
            "name": "fs",
            "group": GROUP,
            "kind": PLURAL,
            "uid": created["metadata"]["uid"],
        },
    }
    assert apiserver.get("ns", "fs") is None


def test_delete_with_a_stale_precondition_is_409(api: client.CustomObjectsApi) -> None:
    created = _create(api, "fs")
    api.patch_namespaced_custom_object(
        GROUP, VERSION, "ns", PLURAL, "fs", {"spec": {"mode": "Monitor"}}
    )
    options = client.V1DeleteOptions(
        preconditions=client.V1Preconditions(
            resource_version=created["metadata"]["resourceVersion"]
        )
    )
    with pytest.raises(ApiException) as raised:
        api.delete_namespaced_custom_object(GROUP, VERSION, "ns", PLURAL, "fs", body=options)
    assert raised.value.status == 409


def test_finalizers_hold_deletion_until_removed(
    api: client.CustomObjectsApi, apiserver: ApiServerEmulator
) -> None:
    body = feedbackstore("fs")
    body["metadata"]["finalizers"] = ["ctxmesh.ai/hold"]
    api.create_namespaced_custom_object(GROUP, VERSION, "ns", PLURAL, body)
    api.delete_namespaced_custom_object(GROUP, VERSION, "ns", PLURAL, "fs")
    assert apiserver.requests[-1].status == 202
    pending = apiserver.get("ns", "fs")
    assert pending is not None
    assert pending["metadata"]["deletionTimestamp"]
    assert pending["metadata"]["generation"] == 2
    api.patch_namespaced_custom_object(
        GROUP, VERSION, "ns", PLURAL, "fs", {"metadata": {"finalizers": None}}
    )
    assert apiserver.get("ns", "fs") is None


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (
            {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "FeedbackStore",
                "metadata": {"name": "Bad_Name"},
            },
            "Invalid",
        ),
        ({"apiVersion": f"{GROUP}/{VERSION}", "kind": "FeedbackStore", "metadata": {}}, "Invalid"),
        (
            {"apiVersion": f"{GROUP}/{VERSION}", "kind": "Lease", "metadata": {"name": "x"}},
            "BadRequest",
        ),
        ({"apiVersion": "v1", "kind": "FeedbackStore", "metadata": {"name": "x"}}, "BadRequest"),
        ({"metadata": {"name": "x"}}, "BadRequest"),
        (
            {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "FeedbackStore",
                "metadata": {"name": "x", "namespace": "elsewhere"},
            },
            "BadRequest",
        ),
    ],
    ids=[
        "a name that is not a DNS subdomain is invalid",
        "a missing name is invalid",
        "the wrong kind is a bad request",
        "the wrong apiVersion is a bad request",
        "a custom resource without kind is a bad request",
        "a namespace other than the URL's is a bad request",
    ],
)
def test_malformed_creates_are_refused(
    api: client.CustomObjectsApi, body: dict[str, Any], reason: str
) -> None:
    with pytest.raises(ApiException) as raised:
        api.create_namespaced_custom_object(GROUP, VERSION, "ns", PLURAL, body)
    assert _status(raised.value)["reason"] == reason
    assert raised.value.status == (422 if reason == "Invalid" else 400)


def test_a_name_too_long_and_malformed_gets_both_causes_as_kube_apiserver_gives_them(
    api: client.CustomObjectsApi,
) -> None:
    """As tests/kube/test_metadata_real.py saw the real server answer: the length, then the form,
    each a FieldValueInvalid with the name whole."""
    name = "a" * 254 + "A"
    with pytest.raises(ApiException) as raised:
        api.create_namespaced_custom_object(GROUP, VERSION, "ns", PLURAL, feedbackstore(name))
    causes = _status(raised.value)["details"]["causes"]
    assert [(c["field"], c["reason"]) for c in causes] == [
        ("metadata.name", "FieldValueInvalid"),
        ("metadata.name", "FieldValueInvalid"),
    ]
    assert causes[0]["message"] == f'Invalid value: "{name}": must be no more than 253 characters'
    assert causes[1]["message"].startswith(f'Invalid value: "{name}": a lowercase RFC 1123 ')


def test_a_body_over_three_mebibytes_is_413(apiserver: ApiServerEmulator) -> None:
    body = feedbackstore("huge")
    body["spec"]["padding"] = "x" * (3 * 1024 * 1024)
    path = f"/apis/{GROUP}/{VERSION}/namespaces/ns/{PLURAL}"
    status, answer, _ = send(
        apiserver.url, "POST", path, json.dumps(body).encode(), "application/json"
    )
    assert (status, answer["reason"]) == (413, "RequestEntityTooLarge")
    assert apiserver.objects() == []


@pytest.mark.parametrize(
    ("content_type", "body", "status"),
    [
        ("text/plain", b"hello", 415),
        ("application/json", b"{not json", 400),
        ("application/json", b"[" * 5000 + b"]" * 5000, 400),
        ("application/json", b'"a string"', 400),
        (
            "application/yaml",
            b"kind: FeedbackStore\napiVersion: agents.ctxmesh.ai/v1beta1\nmetadata: {name: y}\n",
            201,
        ),
    ],
    ids=[
        "a body that is not JSON or YAML is 415",
        "malformed JSON is 400",
        "JSON nested beyond the decoder's depth is 400",
        "a JSON string instead of an object is 400",
        "a YAML body is accepted as the real server does",
    ],
)
def test_create_bodies_are_decoded_like_apiserver(
    apiserver: ApiServerEmulator, content_type: str, body: bytes, status: int
) -> None:
    path = f"/apis/{GROUP}/{VERSION}/namespaces/ns/{PLURAL}"
    answer_status, answer, _ = send(apiserver.url, "POST", path, body, content_type)
    assert answer_status == status
    assert answer["kind"] == ("FeedbackStore" if status == 201 else "Status")


def test_every_answer_stays_true_in_history(
    apiserver: ApiServerEmulator, api: client.CustomObjectsApi
) -> None:
    """Each write's answer is what an Exact list at its resourceVersion shows later: writes never
    alter stored snapshots in place (the watch history and time travel depend on it)."""
    apply = "application/apply-patch+yaml"
    answers = [_create(api, "fs")]
    answers.append(
        api.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            "ns",
            PLURAL,
            "fs",
            {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "FeedbackStore",
                "spec": {"mode": "Monitor"},
            },
            field_manager="gitops",
            _content_type=apply,
        )
    )
    answers.append(
        api.patch_namespaced_custom_object_status(
            GROUP,
            VERSION,
            "ns",
            PLURAL,
            "fs",
            {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": "FeedbackStore",
                "status": {"conditions": [condition("Validated")]},
            },
            field_manager="writer",
            _content_type=apply,
        )
    )
    answers.append(
        api.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            "ns",
            PLURAL,
            "fs",
            [{"op": "add", "path": "/spec/mode", "value": "Enforce"}],
            _content_type="application/json-patch+json",
        )
    )
    answers.append(
        api.patch_namespaced_custom_object_status(
            GROUP, VERSION, "ns", PLURAL, "fs", {"status": {"x": 1}}
        )
    )
    current = json.loads(json.dumps(answers[-1]))
    current["metadata"]["labels"] = {"a": "b"}
    answers.append(
        api.replace_namespaced_custom_object(GROUP, VERSION, "ns", PLURAL, "fs", current)
    )
    assert [a["metadata"]["generation"] for a in answers] == [1, 2, 2, 3, 3, 3]
    for answer in answers:
        at = answer["metadata"]["resourceVersion"]
        past = api.list_namespaced_custom_object(
            GROUP, VERSION, "ns", PLURAL, resource_version=at, resource_version_match="Exact"
        )
        assert past["items"] == [answer]
