"""PATCH on the emulator: server-side apply, merge patch, JSON patch, strategic merge → 415.

Kubernetes: "Server-Side Apply" (field management, conflicts, merge strategy with list maps,
``force``), RFC 7386 merge patch, RFC 6902 JSON patch, "Custom Resources" (no strategic merge
patch). Also pins what the kubernetes Python client (v37) sends for each call.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.support.emulator import ApiServerEmulator
from tests.support.emulator.raw import send
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


@pytest.fixture
def stored(apiserver: ApiServerEmulator) -> dict[str, Any]:
    return apiserver.create("ns", feedbackstore("fs"))


def _apply_status(
    api: client.CustomObjectsApi,
    manager: str,
    conditions: list[dict[str, Any]],
    force: bool | None = None,
) -> dict[str, Any]:
    result: dict[str, Any] = api.patch_namespaced_custom_object_status(
        GROUP,
        VERSION,
        "ns",
        PLURAL,
        "fs",
        status_apply(conditions),
        field_manager=manager,
        force=force,
        _content_type=APPLY_PATCH,
    )
    return result


def _types(obj: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["type"], c["status"]) for c in obj["status"]["conditions"]]


def _status(error: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(error.body)
    return body


@pytest.mark.usefixtures("stored")
def test_two_managers_applying_different_condition_types_both_survive(
    api: client.CustomObjectsApi,
) -> None:
    _apply_status(api, "other-controller", [condition("Ready")])
    result = _apply_status(
        api, "feedbackstore-status-writer", [condition("Validated", "False", "InvalidSpec")]
    )
    assert _types(result) == [("Ready", "True"), ("Validated", "False")]
    owners = {e["manager"]: e["fieldsV1"] for e in result["metadata"]["managedFields"]}
    assert (
        'k:{"type":"Validated"}'
        in owners["feedbackstore-status-writer"]["f:status"]["f:conditions"]
    )
    assert 'k:{"type":"Ready"}' in owners["other-controller"]["f:status"]["f:conditions"]


@pytest.mark.usefixtures("stored")
def test_reapplying_without_a_condition_removes_only_ones_own(api: client.CustomObjectsApi) -> None:
    _apply_status(api, "other-controller", [condition("Ready")])
    _apply_status(api, "writer", [condition("Validated"), condition("Scratch")])
    result = _apply_status(api, "writer", [condition("Validated")])
    assert _types(result) == [("Ready", "True"), ("Validated", "True")]


@pytest.mark.usefixtures("stored")
def test_applying_a_condition_another_manager_owns_without_force_is_a_409_field_manager_conflict(
    api: client.CustomObjectsApi,
) -> None:
    _apply_status(api, "old-controller", [condition("Validated", "True", "SpecCoherent")])
    with pytest.raises(ApiException) as raised:
        _apply_status(
            api, "feedbackstore-status-writer", [condition("Validated", "False", "InvalidSpec")]
        )
    status = _status(raised.value)
    assert (raised.value.status, status["reason"]) == (409, "Conflict")
    assert status["message"].startswith(
        'Apply failed with 2 conflicts: conflicts with "old-controller"'
    )
    assert status["details"]["causes"] == [
        {
            "reason": "FieldManagerConflict",
            "message": 'conflict with "old-controller" with subresource "status"',
            "field": f'.status.conditions[type="Validated"].{field}',
        }
        for field in ("reason", "status")
    ]


@pytest.mark.usefixtures("stored")
def test_forcing_the_apply_takes_the_condition_over(api: client.CustomObjectsApi) -> None:
    _apply_status(api, "old-controller", [condition("Validated", "True", "SpecCoherent")])
    result = _apply_status(
        api,
        "feedbackstore-status-writer",
        [condition("Validated", "False", "InvalidSpec")],
        force=True,
    )
    assert _types(result) == [("Validated", "False")]
    old = next(e for e in result["metadata"]["managedFields"] if e["manager"] == "old-controller")
    taken = old["fieldsV1"]["f:status"]["f:conditions"]['k:{"type":"Validated"}']
    assert "f:status" not in taken
    assert "f:reason" not in taken
    again = _apply_status(
        api, "feedbackstore-status-writer", [condition("Validated", "True", "SpecCoherent")]
    )
    assert _types(again) == [("Validated", "True")]


@pytest.mark.usefixtures("stored")
def test_applying_the_same_values_as_another_manager_is_shared_ownership_not_a_conflict(
    api: client.CustomObjectsApi,
) -> None:
    _apply_status(api, "old-controller", [condition("Validated")])
    result = _apply_status(api, "new-controller", [condition("Validated")])
    assert _types(result) == [("Validated", "True")]


def test_a_condition_seeded_by_test_setup_conflicts_like_one_left_by_kubectl(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    apiserver.create("ns", feedbackstore("fs", conditions=[condition("Validated", "True")]))
    with pytest.raises(ApiException) as raised:
        _apply_status(api, "writer", [condition("Validated", "False", "InvalidSpec")])
    cause = _status(raised.value)["details"]["causes"][0]
    assert cause["message"] == 'conflict with "emulator-setup" using agents.ctxmesh.ai/v1beta1'


@pytest.mark.usefixtures("stored")
def test_an_apply_that_changes_nothing_writes_nothing(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    first = _apply_status(api, "writer", [condition("Validated")])
    second = _apply_status(api, "writer", [condition("Validated")])
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert apiserver.resource_version == int(first["metadata"]["resourceVersion"])


@pytest.mark.usefixtures("stored")
def test_a_status_apply_ignores_spec_and_never_bumps_generation(
    api: client.CustomObjectsApi,
) -> None:
    config = status_apply([condition("Validated")])
    config["spec"] = {"mode": "Monitor"}
    result = api.patch_namespaced_custom_object_status(
        GROUP,
        VERSION,
        "ns",
        PLURAL,
        "fs",
        config,
        field_manager="writer",
        _content_type=APPLY_PATCH,
    )
    assert "mode" not in result["spec"]
    assert result["metadata"]["generation"] == 1


@pytest.mark.parametrize(
    ("query", "field", "reason"),
    [
        ({}, "fieldManager", "FieldValueRequired"),
        ({"field_manager": "m" * 129}, "fieldManager", "FieldValueTooLong"),
    ],
    ids=[
        "an apply without fieldManager is invalid",
        "a fieldManager over 128 characters is invalid",
    ],
)
@pytest.mark.usefixtures("stored")
def test_apply_options_are_validated(
    api: client.CustomObjectsApi, query: dict[str, Any], field: str, reason: str
) -> None:
    with pytest.raises(ApiException) as raised:
        api.patch_namespaced_custom_object_status(
            GROUP, VERSION, "ns", PLURAL, "fs", status_apply([]), _content_type=APPLY_PATCH, **query
        )
    status = _status(raised.value)
    assert (raised.value.status, status["details"]["kind"]) == (422, "PatchOptions")
    assert status["details"]["causes"][0]["field"] == field
    assert status["details"]["causes"][0]["reason"] == reason


@pytest.mark.usefixtures("stored")
def test_force_on_a_merge_patch_is_invalid(api: client.CustomObjectsApi) -> None:
    with pytest.raises(ApiException) as raised:
        api.patch_namespaced_custom_object_status(
            GROUP, VERSION, "ns", PLURAL, "fs", {"status": {}}, force=True
        )
    assert raised.value.status == 422
    assert _status(raised.value)["details"]["causes"][0]["field"] == "force"


def test_apply_to_the_main_resource_creates_a_missing_object(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    """201 Created, which the v37 client's patch methods (typed for 200 only) return as None."""
    answer = api.patch_namespaced_custom_object(
        GROUP,
        VERSION,
        "ns",
        PLURAL,
        "fs",
        feedbackstore("fs"),
        field_manager="gitops",
        _content_type=APPLY_PATCH,
    )
    assert answer is None
    assert apiserver.requests[-1].status == 201
    created = apiserver.get("ns", "fs")
    assert created is not None
    assert created["metadata"]["generation"] == 1
    assert created["metadata"]["managedFields"][0]["operation"] == "Apply"


@pytest.mark.usefixtures("stored")
def test_the_python_client_sends_a_merge_patch_by_default(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    api.patch_namespaced_custom_object_status(
        GROUP, VERSION, "ns", PLURAL, "fs", {"status": {"a": 1}}
    )
    assert apiserver.requests[-1].content_type == "application/merge-patch+json"


@pytest.mark.usefixtures("stored")
def test_a_merge_patch_replaces_lists_whole_and_null_deletes(api: client.CustomObjectsApi) -> None:
    _apply_status(api, "other", [condition("Ready"), condition("Validated")])
    patch = {"status": {"conditions": [condition("Validated", "False")], "extra": None}}
    result = api.patch_namespaced_custom_object_status(GROUP, VERSION, "ns", PLURAL, "fs", patch)
    assert _types(result) == [("Validated", "False")]
    assert "extra" not in result["status"]


@pytest.mark.usefixtures("stored")
def test_a_merge_patch_takes_ownership_from_an_applier(api: client.CustomObjectsApi) -> None:
    """An Update operation owns what it changed; the applier loses those fields."""
    _apply_status(api, "applier", [condition("Validated")])
    patch = {"status": {"conditions": [condition("Validated", "False")]}}
    result = api.patch_namespaced_custom_object_status(
        GROUP, VERSION, "ns", PLURAL, "fs", patch, field_manager="editor"
    )
    entries = {(e["manager"], e["operation"]) for e in result["metadata"]["managedFields"]}
    assert ("editor", "Update") in entries
    with pytest.raises(ApiException) as raised:
        _apply_status(api, "applier", [condition("Validated", "True")])
    assert raised.value.status == 409


@pytest.mark.usefixtures("stored")
def test_a_json_patch_applies_operations_in_order(api: client.CustomObjectsApi) -> None:
    operations = [
        {"op": "add", "path": "/status", "value": {"conditions": []}},
        {"op": "add", "path": "/status/conditions/-", "value": condition("Validated")},
        {"op": "test", "path": "/status/conditions/0/type", "value": "Validated"},
        {"op": "replace", "path": "/status/conditions/0/status", "value": "False"},
    ]
    result = api.patch_namespaced_custom_object_status(
        GROUP, VERSION, "ns", PLURAL, "fs", operations, _content_type="application/json-patch+json"
    )
    assert _types(result) == [("Validated", "False")]


@pytest.mark.parametrize(
    ("operations", "cause"),
    [
        (
            [{"op": "test", "path": "/spec/human/scores/0/name", "value": "stars"}],
            "testing value /spec/human/scores/0/name failed: test failed",
        ),
        (
            [{"op": "replace", "path": "/spec/nothing", "value": 1}],
            "replace operation does not apply: doc is missing key: /spec/nothing: missing value",
        ),
        (
            [{"op": "remove", "path": "/spec/nothing"}],
            "Unable to remove nonexistent key: nothing: missing value",
        ),
    ],
    ids=[
        "a failing test op is 422",
        "replacing a missing field is 422",
        "removing a missing field is 422",
    ],
)
def test_a_json_patch_that_cannot_apply_is_422_and_changes_nothing(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
    stored: dict[str, Any],
    operations: list[dict[str, Any]],
    cause: str,
) -> None:
    with pytest.raises(ApiException) as raised:
        api.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            "ns",
            PLURAL,
            "fs",
            operations,
            _content_type="application/json-patch+json",
        )
    status = _status(raised.value)
    assert (raised.value.status, status["reason"]) == (422, "Invalid")
    assert status["message"] == "the server rejected our request due to an error in our request"
    assert status["details"]["causes"] == [{"reason": "UnexpectedServerResponse", "message": cause}]
    assert apiserver.get("ns", "fs") == stored


@pytest.mark.usefixtures("stored")
def test_the_client_relabels_a_dict_json_patch_as_strategic_merge_which_a_crd_refuses_with_415(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
) -> None:
    with pytest.raises(ApiException) as raised:
        api.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            "ns",
            PLURAL,
            "fs",
            {"spec": {}},
            _content_type="application/json-patch+json",
        )
    assert apiserver.requests[-1].content_type == "application/strategic-merge-patch+json"
    status = _status(raised.value)
    assert (raised.value.status, status["reason"]) == (415, "UnsupportedMediaType")
    assert status["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    )


@pytest.mark.usefixtures("stored")
def test_an_explicit_strategic_merge_patch_on_a_custom_resource_is_415(
    api: client.CustomObjectsApi,
) -> None:
    with pytest.raises(ApiException) as raised:
        api.patch_namespaced_custom_object_status(
            GROUP,
            VERSION,
            "ns",
            PLURAL,
            "fs",
            {"status": {}},
            _content_type="application/strategic-merge-patch+json",
        )
    assert raised.value.status == 415


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("application/merge-patch+json", b"{not json"),
        ("application/json-patch+json", b'{"op": "add"}'),
        ("application/apply-patch+yaml", b"- just\n- a list\n"),
        ("application/apply-patch+yaml", b"key: [unclosed"),
        ("application/merge-patch+json", b"[" * 100_000 + b"]" * 100_000),
    ],
    ids=[
        "a merge patch that is not JSON is a bad request",
        "a JSON patch that is not a list is a bad request",
        "an apply configuration that is not an object is a bad request",
        "an apply configuration that is not YAML is a bad request",
        "a pathologically nested patch is a bad request",
    ],
)
@pytest.mark.usefixtures("stored")
def test_malformed_patch_bodies_are_400_and_the_server_keeps_serving(
    apiserver: ApiServerEmulator,
    api: client.CustomObjectsApi,
    content_type: str,
    body: bytes,
) -> None:
    path = f"/apis/{GROUP}/{VERSION}/namespaces/ns/{PLURAL}/fs?fieldManager=m"
    status, answer, _ = send(apiserver.url, "PATCH", path, body, content_type)
    assert (status, answer["reason"]) == (400, "BadRequest")
    assert (
        api.get_namespaced_custom_object(GROUP, VERSION, "ns", PLURAL, "fs")["metadata"]["name"]
        == "fs"
    )


@pytest.mark.usefixtures("stored")
def test_an_apply_carrying_a_stale_resource_version_is_409(
    api: client.CustomObjectsApi, stored: dict[str, Any]
) -> None:
    """A resourceVersion in an apply configuration is a precondition, as for any write."""
    api.patch_namespaced_custom_object(
        GROUP, VERSION, "ns", PLURAL, "fs", {"spec": {"mode": "Monitor"}}
    )
    config = status_apply([condition("Validated")])
    config["metadata"] = {"resourceVersion": stored["metadata"]["resourceVersion"]}
    with pytest.raises(ApiException) as raised:
        api.patch_namespaced_custom_object_status(
            GROUP, VERSION, "ns", PLURAL, "fs", config, field_manager="w", _content_type=APPLY_PATCH
        )
    assert (raised.value.status, _status(raised.value)["reason"]) == (409, "Conflict")


def test_a_yaml_apply_keeps_unquoted_timestamps_as_strings(
    apiserver: ApiServerEmulator, stored: dict[str, Any]
) -> None:
    """sigs.k8s.io/yaml turns YAML into JSON without timestamp types."""
    del stored
    body = (
        b"apiVersion: agents.ctxmesh.ai/v1beta1\nkind: FeedbackStore\nstatus:\n  conditions:\n"
        b"  - type: Validated\n    status: 'True'\n    lastTransitionTime: 2026-01-01T00:00:00Z\n"
    )
    path = f"/apis/{GROUP}/{VERSION}/namespaces/ns/{PLURAL}/fs/status?fieldManager=yaml-user"
    status, answer, _ = send(apiserver.url, "PATCH", path, body, APPLY_PATCH)
    assert status == 200
    assert answer["status"]["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"


def test_apply_merges_labels_per_key_between_managers(
    api: client.CustomObjectsApi, stored: dict[str, Any]
) -> None:
    del stored

    def apply(manager: str, labels: dict[str, str]) -> dict[str, Any]:
        config = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "FeedbackStore",
            "metadata": {"labels": labels},
        }
        result: dict[str, Any] = api.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            "ns",
            PLURAL,
            "fs",
            config,
            field_manager=manager,
            _content_type=APPLY_PATCH,
        )
        return result

    apply("team", {"team": "a"})
    apply("tier", {"tier": "gold", "temporary": "yes"})
    result = apply("tier", {"tier": "gold"})
    assert result["metadata"]["labels"] == {"team": "a", "tier": "gold"}
    assert result["metadata"]["generation"] == 1
