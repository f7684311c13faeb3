"""The offline metadata rule (webhook/rules/metadata.py) word for word against kube-apiserver.

In a cluster the server judges `metadata` before any webhook; offline the CLI does, and must say
what the server would. Each case is sent to the real kube-apiserver as a dry-run create, and the
server's field causes under `metadata` must be exactly the offline problems, field, reason and
text (the CLI prints `field: message`, the server's cause is the same two parts).

A FeedbackStore's namespace is never judged as such: an object naming a namespace that cannot
exist gets `namespaces "x" not found`. What the server judges is the name of the Namespace, so
the offline `metadata.namespace` problems are held to the server's answer to creating that
Namespace (less its causes on `metadata.labels`, which come of the label the server adds).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.kube.cluster import GROUP, PLURAL, VERSION, install_crd, new_namespace, shipped_crd
from tests.kube.controlplane import ControlPlane
from tests.support.stores import VALID
from webhook.rules import api
from webhook.rules.metadata import validate_metadata

pytestmark = [pytest.mark.kube, pytest.mark.xdist_group("kube")]

Cause = tuple[str, str, str]
LONG = "a" * (api.MAX_OBJECT_NAME_LENGTH + 1)
LONG_LABEL = "a" * (api.MAX_NAMESPACE_LENGTH + 1)


@pytest.fixture(scope="module")
def namespace(control_plane: ControlPlane) -> str:
    install_crd(control_plane, shipped_crd())
    return new_namespace(control_plane, "meta")


def _dry_run(plane: ControlPlane, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    status, raw = plane.raw("POST", f"{path}?dryRun=All", json.dumps(body).encode(),
                            "application/json")  # fmt: skip
    return status, json.loads(raw)


def _causes(answer: dict[str, Any], *, under: str = "metadata.") -> list[Cause]:
    causes = (answer.get("details") or {}).get("causes") or []
    return [(c["field"], c["reason"], c["message"]) for c in causes
            if c.get("field", "").startswith(under)]  # fmt: skip


def _offline(metadata: dict[str, Any]) -> list[Cause]:
    return [(p.field, str(p.type), p.message) for p in validate_metadata(metadata)]


def _store(plane: ControlPlane, namespace: str, metadata: dict[str, Any]) -> dict[str, Any]:
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": api.KIND, "metadata": metadata,
            "spec": VALID}  # fmt: skip
    status, answer = _dry_run(plane, f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}",
                              body)  # fmt: skip
    assert status in (201, 422), answer
    return answer


@pytest.mark.parametrize(
    "metadata",
    [
        pytest.param({"name": "a" * api.MAX_OBJECT_NAME_LENGTH}, id="a name of 253 is fine"),
        pytest.param({"name": LONG}, id="a name of 254 is too long, shown whole"),
        pytest.param({"name": "Support"}, id="an upper-case name"),
        pytest.param({"name": "-support"}, id="a name starting with a dash"),
        pytest.param({"name": "support."}, id="a name ending with a dot"),
        pytest.param({"name": "a_b"}, id="an underscore"),
        pytest.param({"name": LONG + ".B"}, id="too long and malformed: both said, length first"),
        pytest.param({}, id="no name"),
        pytest.param({"name": ""}, id="an empty name is no name"),
        pytest.param({"name": None}, id="a null name is no name"),
        pytest.param({"generateName": "support-"}, id="a generateName alone is enough"),
        pytest.param({"generateName": "a" * 300}, id="a generateName too long"),
        pytest.param({"generateName": "a."}, id="a generateName ending with a dot"),
        pytest.param({"name": "Bad", "generateName": "Worse-"}, id="generateName said first"),
        pytest.param(
            {"name": "ok", "generateName": "Worse-"}, id="a bad generateName beside a name"
        ),
    ],
)
def test_offline_name_problems_are_kube_apiserver_s(
    control_plane: ControlPlane, namespace: str, metadata: dict[str, Any]
) -> None:
    answer = _store(control_plane, namespace, metadata)
    server = _causes(answer)
    if not metadata.get("name"):
        # The server judges the name it generated too (a random suffix): not ours to say.
        server = [c for c in server if c[0] != "metadata.name" or "Required" in c[2]]
    assert _offline(metadata) == server


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("a" * api.MAX_NAMESPACE_LENGTH, id="a namespace of 63 is fine"),
        pytest.param(LONG_LABEL, id="a namespace of 64 is too long"),
        pytest.param("team.agents", id="a namespace with a dot: no dots, in as many words"),
        pytest.param("A", id="an upper-case namespace"),
        pytest.param("A.b", id="upper case and a dot: not a label"),
        pytest.param("-a", id="a namespace starting with a dash"),
        pytest.param(LONG_LABEL + ".b", id="too long and dotted: both said"),
        pytest.param(LONG_LABEL + "A", id="too long and malformed: both said"),
    ],
)
def test_offline_namespace_problems_are_kube_apiserver_s_for_that_namespace(
    control_plane: ControlPlane, name: str
) -> None:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    status, answer = _dry_run(control_plane, "/api/v1/namespaces", body)
    assert status in (201, 422), answer
    server = [(field.replace("name", "namespace"), reason, message)
              for field, reason, message in _causes(answer, under="metadata.name")]  # fmt: skip
    assert _offline({"name": "s", "namespace": name}) == server


def test_a_store_in_a_namespace_that_cannot_exist_is_not_found(
    control_plane: ControlPlane,
) -> None:
    """Why the namespace rule is the Namespace's: the store itself is never judged on it."""
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": api.KIND,
            "metadata": {"name": "s", "namespace": LONG_LABEL}, "spec": VALID}  # fmt: skip
    path = f"/apis/{GROUP}/{VERSION}/namespaces/{LONG_LABEL}/{PLURAL}"
    status, answer = _dry_run(control_plane, path, body)
    assert (status, answer["message"]) == (404, f'namespaces "{LONG_LABEL}" not found')


@pytest.mark.parametrize(
    ("metadata", "field"),
    [
        pytest.param({"name": 5}, "ObjectMeta.name", id="a number for a name"),
        pytest.param({"name": ["a"]}, "ObjectMeta.name", id="a list for a name"),
        pytest.param(
            {"name": "s", "namespace": 7}, "ObjectMeta.namespace", id="a number for a namespace"
        ),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_by_both_the_server_before_any_field_check(
    control_plane: ControlPlane, namespace: str, metadata: dict[str, Any], field: str
) -> None:
    """The server cannot decode it (400, no field cause); offline it is a type error there."""
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": api.KIND, "metadata": metadata,
            "spec": VALID}  # fmt: skip
    path = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}"
    status, answer = _dry_run(control_plane, path, body)
    assert (status, answer["reason"]) == (400, "BadRequest")
    assert f"Go struct field {field} of type string" in answer["message"]
    offline = _offline(metadata)
    assert [(f, reason) for f, reason, _ in offline] == [
        (f"metadata.{field.partition('.')[2]}", "FieldValueTypeInvalid")
    ]
