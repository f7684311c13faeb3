"""What a log line says of a failed API call: the server's own words when it sent a Status."""

import pytest
from kubernetes.client.exceptions import ApiException

from webhook.kube.client import error_text

FORBIDDEN = (
    '{"kind":"Status","apiVersion":"v1","status":"Failure","message":"feedbackstores.agents.'
    'ctxmesh.ai is forbidden: User \\"nobody\\" cannot list resource \\"feedbackstores\\" in API '
    'group \\"agents.ctxmesh.ai\\" at the cluster scope","reason":"Forbidden","code":403}'
)


def refused(status: int, body: str | None) -> ApiException:
    error = ApiException(status=status, reason="Forbidden")
    error.body = body
    return error


def test_a_status_body_is_said_by_its_reason_and_message() -> None:
    assert error_text(refused(403, FORBIDDEN)) == (
        'Forbidden: feedbackstores.agents.ctxmesh.ai is forbidden: User "nobody" cannot list '
        'resource "feedbackstores" in API group "agents.ctxmesh.ai" at the cluster scope'
    )


@pytest.mark.parametrize("body", [None, "", "<html>bad gateway</html>", "[1]", '{"message": 3}'])
def test_without_a_status_message_the_exception_is_said(body: str | None) -> None:
    assert error_text(refused(502, body)).startswith("ApiException: (502)")


def test_a_transport_error_is_said_as_it_is_and_bounded() -> None:
    assert (
        error_text(ConnectionResetError("reset by peer")) == "ConnectionResetError: reset by peer"
    )
    assert len(error_text(ValueError("x" * 2000))) == 500
