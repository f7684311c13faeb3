"""The doctor's reads on their own: what `fetch` asks the API server and how each answer lands in
the snapshot (404 an answer, 403 unreadable, 401 or no answer unreachable), and what the dry-run
`probe` makes of the answer to its create. Against a scripted server on loopback, so each answer
and each request is exact; tests/kube/test_doctor_real.py runs the doctor on kube-apiserver.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from kubernetes import client as k8s

from tests.support.scripted_apiserver import Answer, ScriptedApiServer, scripted_apiserver, status
from webhook.doctor.cluster import UnreachableError, fetch, probe
from webhook.doctor.snapshot import ProbeOutcome, Snapshot, Target, Unreadable

STORES = "/apis/agents.ctxmesh.ai/v1beta1/namespaces/p/feedbackstores"
CRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/feedbackstores.agents.ctxmesh.ai"
CONFIGURATION = (
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/feedbackstore-webhook"
)
MONITOR_WARNING = (
    "spec.mode: Monitor relays undeclared score names instead of rejecting them (422); "
    "use only to migrate"
)
PROBE_BODY = {
    "apiVersion": "agents.ctxmesh.ai/v1beta1",
    "kind": "FeedbackStore",
    "metadata": {"name": "feedbackstore-doctor-probe", "namespace": "p"},
    "spec": {"mode": "Monitor", "human": {"scores": [{"name": "doctor-probe"}]}},
}


@pytest.fixture
def server() -> Iterator[ScriptedApiServer]:
    with scripted_apiserver() as scripted:
        yield scripted


@pytest.fixture
def api_client(server: ScriptedApiServer) -> Iterator[k8s.ApiClient]:
    api = server.api_client()
    try:
        yield api
    finally:
        api.close()


def warning(text: str) -> tuple[str, str]:
    """A `Warning` header as kube-apiserver writes it (RFC 7234 warn-code 299, quoted text)."""
    return ("Warning", '299 - "' + text.replace("\\", "\\\\").replace('"', '\\"') + '"')


@pytest.mark.parametrize(
    ("answer", "outcome"),
    [
        pytest.param(
            Answer(201, PROBE_BODY, headers=(warning(MONITOR_WARNING),)),
            ProbeOutcome(201, (MONITOR_WARNING,)),
            id="admitted with the webhook's warning",
        ),
        pytest.param(
            Answer(201, PROBE_BODY),
            ProbeOutcome(201),
            id="admitted without a warning",
        ),
        pytest.param(
            Answer(201, PROBE_BODY, headers=(warning('say "hi"'), warning("two"))),
            ProbeOutcome(201, ('say "hi"', "two")),
            id="every warning, its quotes unescaped",
        ),
        pytest.param(
            status(500, "InternalError", 'Internal error occurred: failed calling webhook "v"'),
            ProbeOutcome(500, (), 'Internal error occurred: failed calling webhook "v"'),
            id="a refusal in the server's own words",
        ),
        pytest.param(
            Answer(403, "not a Status"),
            ProbeOutcome(403, (), "HTTP 403 Forbidden"),
            id="a refusal without a Status says its HTTP status",
        ),
        pytest.param(
            status(404, "NotFound", 'namespaces "p" not found'),
            ProbeOutcome(404, (), 'namespaces "p" not found'),
            id="a missing namespace",
        ),
    ],
)
def test_the_probe_is_one_dry_run_create_and_reports_its_answer(
    server: ScriptedApiServer, api_client: k8s.ApiClient, answer: Answer, outcome: ProbeOutcome
) -> None:
    server.answer("POST", STORES, answer)
    assert probe(k8s.CustomObjectsApi(api_client), "p") == outcome
    (sent,) = server.requests
    assert (sent.method, sent.path, sent.query) == ("POST", STORES, {"dryRun": "All"})
    assert orjson.loads(sent.body) == PROBE_BODY


def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def client_of(port: int) -> k8s.ApiClient:
    return k8s.ApiClient(k8s.Configuration(host=f"http://127.0.0.1:{port}"))


def test_a_probe_without_an_answer_says_so() -> None:
    api = client_of(unused_port())
    try:
        outcome = probe(k8s.CustomObjectsApi(api), "p")
    finally:
        api.close()
    assert (outcome.status, outcome.warnings) == (None, ())
    assert outcome.message.startswith("MaxRetryError: ")
    assert "Connection refused" in outcome.message


def test_fetch_from_a_cluster_without_our_install_finds_nothing_and_probes_nothing(
    server: ScriptedApiServer, api_client: k8s.ApiClient
) -> None:
    snapshot = fetch(api_client, Target(probe_namespace="p"))
    assert snapshot == Snapshot(
        crd=None,
        configuration=None,
        secret=None,
        service=None,
        endpoint_slices=None,
        lease=None,
        stores=None,
        probe=None,
        namespaces={"kube-system": None, "feedbackstore-system": None, "p": None},
        agents=None,
    )
    assert [r.path for r in server.requests] == [
        CRD,
        CONFIGURATION,
        "/apis/discovery.k8s.io/v1/namespaces/feedbackstore-system/endpointslices",
        "/api/v1/namespaces/feedbackstore-system/secrets/feedbackstore-webhook-tls",
        "/api/v1/namespaces/feedbackstore-system/services/feedbackstore-webhook",
        "/apis/coordination.k8s.io/v1/namespaces/feedbackstore-system/leases/"
        "feedbackstore-status-writer",
        "/apis/agents.ctxmesh.ai/v1beta1/agentdeployments",
        "/api/v1/namespaces/kube-system",
        "/api/v1/namespaces/feedbackstore-system",
        "/api/v1/namespaces/p",
    ]
    slices = server.requests[2].query
    assert slices == {"labelSelector": "kubernetes.io/service-name=feedbackstore-webhook"}


def registration(namespace: str, name: str) -> dict[str, Any]:
    service = {"namespace": namespace, "name": name, "path": "/validate"}
    rule = {
        "apiGroups": ["agents.ctxmesh.ai"],
        "apiVersions": ["v1beta1"],
        "operations": ["CREATE", "UPDATE"],
        "resources": ["feedbackstores"],
    }
    webhook = {"name": "v.agents.ctxmesh.ai", "clientConfig": {"service": service}, "rules": [rule]}
    return {
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "feedbackstore-webhook"},
        "webhooks": [webhook],
    }


def store(name: str) -> dict[str, Any]:
    return {"metadata": {"namespace": "agents", "name": name}}


def page(items: list[dict[str, Any]], token: str = "") -> Answer:
    metadata = {"resourceVersion": "7", **({"continue": token} if token else {})}
    return Answer(body={"kind": "FeedbackStoreList", "metadata": metadata, "items": items})


def test_fetch_reads_the_service_the_registration_names_every_page_of_stores_and_probes(
    server: ScriptedApiServer, api_client: k8s.ApiClient
) -> None:
    crd = {"kind": "CustomResourceDefinition", "metadata": {"name": "feedbackstores"}}
    server.answer("GET", CRD, Answer(body=crd))
    server.answer("GET", CONFIGURATION, Answer(body=registration("elsewhere", "hook")))
    service = {"kind": "Service", "metadata": {"name": "hook"}}
    server.answer("GET", "/api/v1/namespaces/elsewhere/services/hook", Answer(body=service))
    endpoints = "/apis/discovery.k8s.io/v1/namespaces/elsewhere/endpointslices"
    server.answer(
        "GET", endpoints, Answer(body={"metadata": {"resourceVersion": "3"}, "items": []})
    )
    forbidden = 'secrets "feedbackstore-webhook-tls" is forbidden: User "u" cannot get resource'
    secret = "/api/v1/namespaces/feedbackstore-system/secrets/feedbackstore-webhook-tls"
    server.answer("GET", secret, status(403, "Forbidden", forbidden))
    stores = "/apis/agents.ctxmesh.ai/v1beta1/namespaces/agents/feedbackstores"
    server.answer("GET", stores, page([store("a")], token="next"), page([store("b")]))
    server.answer("POST", STORES, Answer(201, PROBE_BODY, headers=(warning(MONITOR_WARNING),)))

    snapshot = fetch(api_client, Target(probe_namespace="p", store_namespace="agents"))

    assert snapshot.crd == crd
    assert snapshot.service == service
    assert snapshot.endpoint_slices == []
    assert snapshot.secret == Unreadable(forbidden)
    assert snapshot.stores == [store("a"), store("b")]
    assert snapshot.probe == ProbeOutcome(201, (MONITOR_WARNING,))
    assert server.requests[2].query == {"labelSelector": "kubernetes.io/service-name=hook"}
    listed = [r.query for r in server.requests if r.path == stores]
    assert listed == [{"limit": "500"}, {"limit": "500", "continue": "next"}]


def test_a_401_means_nothing_can_be_examined(
    server: ScriptedApiServer, api_client: k8s.ApiClient
) -> None:
    server.answer("GET", CRD, status(401, "Unauthorized", "Unauthorized"))
    with pytest.raises(
        UnreachableError, match=r"^the API server refused the credentials: Unauthorized$"
    ):
        fetch(api_client, Target())


def test_no_answer_means_nothing_can_be_examined() -> None:
    api = client_of(unused_port())
    try:
        with pytest.raises(UnreachableError, match=r"^no answer from the API server: .*refused"):
            fetch(api, Target())
    finally:
        api.close()
