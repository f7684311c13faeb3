"""POST /validate over real HTTPS, called as kube-apiserver calls it (Service DNS name, verified
chain): every answer passes kube-apiserver's checks, hostile input gets a 4xx JSON Status and
the server keeps serving, and metrics and logs record what happened."""

from __future__ import annotations

import asyncio
import logging
import re
import ssl
from typing import Any

import orjson
import pytest

from tests.support.admission_apiserver import accepted_answer, kubectl_denial_text
from tests.support.pki import SERVICE_DNS, client_context
from tests.support.reviews import V1BETA1, create, duplicate_spec, update, valid_spec
from tests.support.servers import Webhook, WebhookFactory
from tests.support.waiting import eventually_async
from tests.webhook.admission.test_decision import RULES
from webhook.admission import Why
from webhook.observability.logs import JsonFormatter
from webhook.server.app import CERTIFICATE


async def admitted(webhook: Webhook, sent: dict[str, Any]) -> dict[str, Any]:
    status, body = await webhook.client.review(sent)
    return accepted_answer(sent, status, body)


@pytest.mark.parametrize(("sent", "allowed", "why"), RULES)
async def test_every_operation_rule_over_https(
    webhook: Webhook, sent: dict[str, Any], allowed: bool, why: Why
) -> None:
    response = await admitted(webhook, sent)
    assert response["allowed"] is allowed


async def test_a_denial_over_https_is_what_kubectl_shows(webhook: Webhook) -> None:
    response = await admitted(webhook, create(duplicate_spec()))
    assert kubectl_denial_text(response) == (
        'The FeedbackStore "support-feedback" is invalid: spec.human.scores[2].name: '
        'Duplicate value: "thumbs": human score names must be unique '
        "(first declared at spec.human.scores[0].name)\n"
    )


async def test_a_v1beta1_review_is_answered_in_v1beta1(webhook: Webhook) -> None:
    response = await admitted(webhook, create(valid_spec(), api_version=V1BETA1))
    assert response["allowed"] is True


async def test_concurrent_reviews_are_each_answered_with_their_own_uid(webhook: Webhook) -> None:
    reviews = [create(valid_spec() if i % 2 else duplicate_spec()) for i in range(200)]
    responses = await asyncio.gather(*(admitted(webhook, sent) for sent in reviews))
    assert [r["allowed"] for r in responses] == [bool(i % 2) for i in range(200)]


def _deep(levels: int) -> bytes:
    return (
        b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":'
        + (b'{"a":' * levels + b"1" + b"}" * levels)
        + b"}"
    )


HOSTILE = [
    pytest.param(
        "POST",
        b"not json",
        "application/json",
        400,
        "BadRequest",
        "not JSON",
        "not_json",
        id="a body that is not JSON is a 400",
    ),
    pytest.param(
        "POST",
        b"[1,2,3]",
        "application/json",
        400,
        "BadRequest",
        "got array",
        "not_object",
        id="a JSON array is a 400",
    ),
    pytest.param(
        "POST",
        b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}',
        "application/json",
        400,
        "BadRequest",
        "no request",
        "no_request",
        id="a review without request is a 400",
    ),
    pytest.param(
        "POST",
        orjson.dumps({**create(valid_spec()), "request": {"operation": "CREATE"}}),
        "application/json",
        400,
        "BadRequest",
        "no uid",
        "no_uid",
        id="a review without uid is a 400",
    ),
    pytest.param(
        "POST",
        orjson.dumps({**create(valid_spec()), "request": {"uid": ["x"]}}),
        "application/json",
        400,
        "BadRequest",
        "request.uid",
        "wrong_type",
        id="a uid of the wrong type is a 400",
    ),
    pytest.param(
        "POST",
        _deep(60_000),
        "application/json",
        400,
        "BadRequest",
        "nested too deeply",
        "too_deep",
        id="sixty thousand levels is a 400",
    ),
    pytest.param(
        "POST",
        _deep(300_000),
        "application/json",
        400,
        "BadRequest",
        "more than 262144 JSON values",
        "too_many_values",
        id="three hundred thousand objects are a 400, counted before decoding",
    ),
    pytest.param(
        "POST",
        orjson.dumps(create(valid_spec())),
        "text/plain",
        415,
        "UnsupportedMediaType",
        "Content-Type must be application/json",
        "unsupported_media_type",
        id="a wrong Content-Type is a 415",
    ),
    pytest.param(
        "POST",
        orjson.dumps(create(valid_spec())),
        "application/x-yaml",
        415,
        "UnsupportedMediaType",
        "got application/x-yaml",
        "unsupported_media_type",
        id="YAML is a 415",
    ),
    pytest.param(
        "PUT",
        orjson.dumps(create(valid_spec())),
        "application/json",
        405,
        "MethodNotAllowed",
        "use POST",
        "method_not_allowed",
        id="PUT is a 405",
    ),
    pytest.param(
        "GET",
        b"",
        "application/json",
        405,
        "MethodNotAllowed",
        "use POST",
        "method_not_allowed",
        id="GET /validate is a 405",
    ),
]


@pytest.mark.parametrize(
    ("method", "body", "content_type", "status", "reason", "fragment", "metric"), HOSTILE
)
async def test_hostile_input_is_a_4xx_json_status_and_the_server_keeps_serving(
    webhook: Webhook,
    method: str,
    body: bytes,
    content_type: str,
    status: int,
    reason: str,
    fragment: str,
    metric: str,
) -> None:
    session, url = webhook.client.session, webhook.client.base + "/validate"
    async with session.request(
        method, url, data=body, headers={"Content-Type": content_type}
    ) as response:
        answer = orjson.loads(await response.read())
        assert response.status == status
        assert response.content_type == "application/json"
    assert answer["kind"] == "Status"
    assert (answer["status"], answer["reason"], answer["code"]) == ("Failure", reason, status)
    assert fragment in answer["message"]
    sample = f'feedbackstore_webhook_bad_requests_total{{reason="{metric}"}}'
    assert await webhook.client.metric(sample) == 1.0
    assert (await admitted(webhook, create(valid_spec())))["allowed"] is True


async def test_a_body_over_the_limit_is_a_413_before_it_is_read(
    start_webhook: WebhookFactory,
) -> None:
    webhook: Webhook = await start_webhook(max_body_bytes=64 * 1024)
    status, body = await webhook.client.post("/validate", b"x" * (64 * 1024 + 1))
    assert status == 413
    assert orjson.loads(body)["reason"] == "RequestEntityTooLarge"
    assert "65536-byte limit" in orjson.loads(body)["message"]
    assert (await admitted(webhook, create(valid_spec())))["allowed"] is True


async def test_a_chunked_body_over_the_limit_is_a_413(start_webhook: WebhookFactory) -> None:
    webhook: Webhook = await start_webhook(max_body_bytes=64 * 1024)

    async def chunks() -> Any:
        for _ in range(100):
            yield b"y" * 4096

    async with webhook.client.session.post(
        webhook.client.base + "/validate",
        data=chunks(),
        headers={"Content-Type": "application/json"},
    ) as response:
        assert response.status == 413
    assert (
        await webhook.client.metric('feedbackstore_webhook_bad_requests_total{reason="too_large"}')
        == 1.0
    )


async def test_the_default_limit_takes_an_update_of_two_large_objects(webhook: Webhook) -> None:
    padding = {"kubectl.kubernetes.io/last-applied-configuration": "p" * 1_400_000}
    sent = update(valid_spec(), valid_spec())
    for key in ("object", "oldObject"):
        sent["request"][key]["metadata"]["annotations"] = padding
    response = await admitted(webhook, sent)
    assert response["allowed"] is True


@pytest.mark.parametrize(
    ("path", "method", "status"),
    [
        pytest.param("/", "GET", 404, id="the root is a 404"),
        pytest.param("/mutate", "POST", 404, id="an unknown endpoint is a 404"),
        pytest.param("/healthz", "POST", 405, id="POST /healthz is a 405"),
        pytest.param("/metrics", "DELETE", 405, id="DELETE /metrics is a 405"),
    ],
)
async def test_other_paths_and_methods_get_a_json_status(
    webhook: Webhook, path: str, method: str, status: int
) -> None:
    url = webhook.client.base + path
    async with webhook.client.session.request(method, url) as response:
        assert response.status == status
        assert orjson.loads(await response.read())["code"] == status


async def test_probes_answer_ok_while_serving(webhook: Webhook) -> None:
    assert await webhook.client.get("/healthz") == (200, b"ok\n")
    assert await webhook.client.get("/readyz") == (200, b"ok\n")


async def test_readyz_turns_503_once_shutdown_begins(webhook: Webhook) -> None:
    webhook.server.lifecycle.shutting_down = True
    assert await webhook.client.get("/readyz") == (503, b"shutting down\n")
    assert await webhook.client.get("/healthz") == (200, b"ok\n")


async def test_metrics_count_requests_by_operation_and_verdict(webhook: Webhook) -> None:
    for sent in [
        create(valid_spec()),
        create(duplicate_spec()),
        create(duplicate_spec()),
        update(valid_spec(), duplicate_spec()),
    ]:
        await admitted(webhook, sent)
    await webhook.client.post("/validate", b"{")
    metric = webhook.client.metric
    prefix = "feedbackstore_webhook"
    assert (
        await metric(f'{prefix}_admission_requests_total{{operation="CREATE",verdict="allowed"}}')
        == 1
    )
    assert (
        await metric(f'{prefix}_admission_requests_total{{operation="CREATE",verdict="denied"}}')
        == 2
    )
    assert (
        await metric(f'{prefix}_admission_requests_total{{operation="UPDATE",verdict="allowed"}}')
        == 1
    )
    assert await metric(f'{prefix}_bad_requests_total{{reason="not_json"}}') == 1
    assert await metric(f"{prefix}_request_duration_seconds_count") == 5
    assert await metric(f'{prefix}_request_duration_seconds_bucket{{le="+Inf"}}') == 5
    assert await metric(f"{prefix}_in_flight_requests") == 0
    not_after = webhook.server.app[CERTIFICATE].current.not_after
    assert await metric(f"{prefix}_serving_certificate_expiry_timestamp_seconds") == (
        not_after.timestamp()
    )


async def test_every_verdict_series_is_exposed_at_zero_before_the_first_review(
    webhook: Webhook,
) -> None:
    """An alert on rate(...{verdict="error"}) has a series to read before anything failed."""
    status, body = await webhook.client.get("/metrics")
    assert status == 200
    lines = set(body.decode().splitlines())
    for operation in ("CREATE", "UPDATE", "DELETE", "CONNECT", "OTHER"):
        for verdict in ("allowed", "denied", "error"):
            sample = (
                "feedbackstore_webhook_admission_requests_total"
                f'{{operation="{operation}",verdict="{verdict}"}} 0.0'
            )
            assert sample in lines


async def test_an_unusual_operation_is_counted_under_other(webhook: Webhook) -> None:
    sent = create(valid_spec())
    for i in range(3):
        sent["request"]["operation"] = f"WEIRD-{i}"
        await admitted(webhook, sent)
    assert (
        await webhook.client.metric(
            'feedbackstore_webhook_admission_requests_total{operation="OTHER",verdict="allowed"}'
        )
        == 3
    )


async def test_a_denial_is_one_json_log_line_without_the_object(
    webhook: Webhook, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="feedbackstore")
    sent = create(duplicate_spec(), dry_run=True)
    await admitted(webhook, sent)
    lines = [JsonFormatter().format(r) for r in caplog.records if r.name.endswith("admission")]
    assert len(lines) == 1
    entry = orjson.loads(lines[0])
    request = sent["request"]
    assert {
        k: entry[k]
        for k in (
            "msg",
            "uid",
            "operation",
            "namespace",
            "name",
            "user",
            "problems",
            "dry_run",
            "why",
        )
    } == {
        "msg": "denied",
        "uid": request["uid"],
        "operation": "CREATE",
        "namespace": "agents",
        "name": "support-feedback",
        "user": "jane@example.com",
        "problems": 1,
        "dry_run": True,
        "why": "invalid",
    }
    assert "thumbs" not in lines[0]
    assert "spec" not in entry
    assert entry["level"] == "info"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", entry["time"])


async def test_a_denial_s_log_line_is_made_without_looking_up_its_caller(
    webhook: Webhook, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No line shows a file or line number, and finding them walks the stack on the event loop.
    caplog.set_level(logging.INFO, logger="feedbackstore")
    looked_up: list[str] = []
    find_caller = logging.Logger.findCaller

    def spied(log: logging.Logger, *args: Any, **kwargs: Any) -> Any:
        looked_up.append(log.name)
        return find_caller(log, *args, **kwargs)

    monkeypatch.setattr(logging.Logger, "findCaller", spied)
    await admitted(webhook, create(duplicate_spec()))
    assert [r.getMessage() for r in caplog.records if r.name.endswith("admission")] == ["denied"]
    assert [name for name in looked_up if name.endswith("admission")] == []


async def test_a_review_without_resource_or_user_is_logged_as_misdirected_with_empty_fields(
    webhook: Webhook, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="feedbackstore")
    sent = create(valid_spec())
    del sent["request"]["resource"], sent["request"]["userInfo"]
    await admitted(webhook, sent)
    records = [r for r in caplog.records if r.name.endswith("admission")]
    assert [(r.levelname, r.getMessage()) for r in records] == [
        ("WARNING", "allowed without checking")
    ]
    entry = orjson.loads(JsonFormatter().format(records[0]))
    assert (entry["resource"], entry["user"], entry["why"]) == (".", "", "foreign_resource")


async def test_a_bad_request_is_one_warning_log_line(
    webhook: Webhook, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="feedbackstore")
    await webhook.client.post("/validate", b"[" * 5000)
    records = [r for r in caplog.records if r.name.endswith("admission")]
    assert [(r.levelname, r.getMessage()) for r in records] == [("WARNING", "bad request")]
    entry = orjson.loads(JsonFormatter().format(records[0]))
    assert (entry["status"], entry["reason"]) == (400, "too_deep")
    assert entry["remote"] == "127.0.0.1"


async def _tls_connection(port: int, context: ssl.SSLContext) -> tuple[Any, Any]:
    return await asyncio.open_connection(
        "127.0.0.1", port, ssl=context, server_hostname=SERVICE_DNS
    )


async def test_a_body_that_stalls_gets_a_408_and_the_server_keeps_serving(
    start_webhook: WebhookFactory,
) -> None:
    webhook: Webhook = await start_webhook(body_timeout=0.5)
    reader, writer = await _tls_connection(webhook.port, client_context(webhook.ca))
    writer.write(
        f"POST /validate HTTP/1.1\r\nHost: {SERVICE_DNS}\r\nContent-Type: application/json\r\n"
        'Content-Length: 1000\r\n\r\n{"apiVersion":'.encode()
    )
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    assert head.startswith(b"HTTP/1.1 408")
    assert await asyncio.wait_for(reader.read(), 10)  # the JSON Status, then the close
    writer.close()
    assert (await admitted(webhook, create(valid_spec())))["allowed"] is True


async def test_a_client_that_leaves_mid_body_is_not_an_internal_error(
    webhook: Webhook, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="feedbackstore")
    _reader, writer = await _tls_connection(webhook.port, client_context(webhook.ca))
    writer.write(
        f"POST /validate HTTP/1.1\r\nHost: {SERVICE_DNS}\r\nContent-Type: application/json\r\n"
        'Content-Length: 1000\r\n\r\n{"apiVersion":'.encode()
    )
    await writer.drain()
    writer.close()
    await writer.wait_closed()
    assert (await admitted(webhook, create(valid_spec())))["allowed"] is True
    sample = 'feedbackstore_webhook_bad_requests_total{reason="incomplete_body"}'

    async def counted() -> bool:
        return await webhook.client.metric(sample) == 1.0

    await eventually_async(counted)  # the server sees the hang-up when it next reads
    records = [r for r in caplog.records if r.name.endswith("admission")]
    assert [(r.levelname, r.getMessage()) for r in records] == [("WARNING", "bad request")]
    entry = orjson.loads(JsonFormatter().format(records[0]))
    assert (entry["status"], entry["reason"]) == (400, "incomplete_body")
    counter = "feedbackstore_webhook_admission_requests_total"
    assert await webhook.client.metric(f'{counter}{{operation="OTHER",verdict="error"}}') == 0.0
