"""A fault inside the webhook is answered in the protocol, over real HTTPS: an AdmissionReview
with the request's uid, `allowed: false` and code 500 (never aiohttp's bare 500 page), logged
once with its traceback, counted, and the server keeps serving."""

from __future__ import annotations

import logging
from typing import NoReturn

import orjson
import pytest

from tests.support.admission_apiserver import accepted_answer
from tests.support.reviews import V1BETA1, create, duplicate_spec, valid_spec
from tests.support.servers import Webhook
from webhook.server import admission_endpoint


def _broken(*_: object) -> NoReturn:
    raise RuntimeError("the verdict broke")


@pytest.mark.parametrize("api_version", ["admission.k8s.io/v1", V1BETA1])
async def test_a_fault_in_the_verdict_is_an_admission_review_with_code_500(
    webhook: Webhook,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    api_version: str,
) -> None:
    caplog.set_level(logging.INFO)
    monkeypatch.setattr(admission_endpoint, "decide", _broken)
    sent = create(valid_spec(), api_version=api_version)
    status, body = await webhook.client.review(sent)
    response = accepted_answer(sent, status, body)
    assert response == {
        "uid": sent["request"]["uid"],
        "allowed": False,
        "status": {
            "code": 500,
            "reason": "InternalError",
            "message": "internal error in the webhook (RuntimeError); its log has the details",
        },
    }
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert errors[0].getMessage() == "internal error"
    assert errors[0].fields["uid"] == sent["request"]["uid"]  # type: ignore[attr-defined]
    assert errors[0].exc_info is not None
    assert "the verdict broke" in caplog.text
    sample = 'feedbackstore_webhook_admission_requests_total{operation="CREATE",verdict="error"}'
    assert await webhook.client.metric(sample) == 1.0
    monkeypatch.undo()
    assert accepted_answer(sent, *await webhook.client.review(sent))["allowed"] is True


async def test_a_fault_while_logging_a_denial_is_answered_in_the_protocol_and_counted_once(
    webhook: Webhook, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(admission_endpoint, "_record", _broken)
    sent = create(duplicate_spec())
    response = accepted_answer(sent, *await webhook.client.review(sent))
    assert (response["uid"], response["allowed"]) == (sent["request"]["uid"], False)
    assert response["status"]["code"] == 500
    assert len([r for r in caplog.records if r.levelno >= logging.ERROR]) == 1
    counter = "feedbackstore_webhook_admission_requests_total"
    assert await webhook.client.metric(f'{counter}{{operation="CREATE",verdict="error"}}') == 1.0
    assert await webhook.client.metric(f'{counter}{{operation="CREATE",verdict="denied"}}') == 0.0
    assert await webhook.client.metric(f'{counter}{{operation="OTHER",verdict="error"}}') == 0.0


async def test_a_fault_before_the_review_is_read_is_a_json_status_500(
    webhook: Webhook, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(admission_endpoint, "decode_review", _broken)
    status, body = await webhook.client.review(create(valid_spec()))
    assert status == 500
    answer = orjson.loads(body)
    assert (answer["kind"], answer["reason"], answer["code"]) == ("Status", "InternalError", 500)
    assert "RuntimeError" in answer["message"]
    assert len([r for r in caplog.records if r.levelno >= logging.ERROR]) == 1
    sample = 'feedbackstore_webhook_admission_requests_total{operation="OTHER",verdict="error"}'
    assert await webhook.client.metric(sample) == 1.0
