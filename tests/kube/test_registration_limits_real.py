"""The registration and the body limit against a maximal FeedbackStore on the real server (a hostile
store must cost no more than this): the matchConditions' CEL stays within kube-apiserver's cost
limits on the largest store etcd holds, and the largest AdmissionReview an UPDATE of it produces
fits the webhook's default body limit (`--max-body-bytes`), whose value docs/webhook.md explains
from this measurement.

The maximal store: every list at its limit (64 human scores, 32 channels, 64 categories each),
every name 128 characters, and the categories (the one unbounded string) as long as etcd takes,
made of `<`, `>` and `&`, which Go's JSON encoder writes as six bytes each (`\\u003c`).
"""

from __future__ import annotations

import contextlib
import copy
import http.server
import json
import pathlib
import ssl
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s

from tests.kube.cluster import (
    GROUP,
    PLURAL,
    VERSION,
    api_client,
    eventually,
    feedbackstore,
    install_crd,
    new_namespace,
    platform_today_crd,
    registered,
    registration,
    serving_files,
    webhook_server,
)
from tests.kube.controlplane import ControlPlane
from webhook.admission.decode import MAX_JSON_VALUES, json_values
from webhook.cli.flags import default_of
from webhook.rules import api
from webhook.server.config import ServerConfig

pytestmark = [pytest.mark.kube, pytest.mark.xdist_group("kube")]

# Escaped by Go's JSON encoder (HTML-safe), so each is six bytes in JSON.
_ESCAPED = "<>&"


def maximal_spec(length: int, mark: str = "a") -> dict[str, Any]:
    """Every list at its limit, every name at 128 characters, categories `length` long."""

    def name(kind: str, index: int) -> str:
        return f"{kind}-{index}-".ljust(api.MAX_NAME_LENGTH, mark)

    def categories() -> list[str]:
        return [f"{i:02d}" + (_ESCAPED * length)[: length - 2] for i in range(api.MAX_CATEGORIES)]

    def score(kind: str, index: int) -> dict[str, Any]:
        declared = name(kind, index)
        return {"name": declared, "dataType": "CATEGORICAL", "categories": categories()}

    return {
        "mode": "Enforce",
        "human": {"scores": [score("h", i) for i in range(api.MAX_HUMAN_SCORES)]},
        "external": [
            {"name": name("c", i), "score": score("e", i)} for i in range(api.MAX_EXTERNAL_CHANNELS)
        ],
    }


@contextlib.contextmanager
def capturing_webhook(directory: pathlib.Path) -> Iterator[tuple[str, bytes, list[bytes]]]:
    """A TLS endpoint that allows every review and keeps each body."""
    cert, key, ca = serving_files(directory)
    bodies: list[bytes] = []

    class Capture(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            bodies.append(body)
            review = json.loads(body)
            answer = {
                "apiVersion": review["apiVersion"],
                "kind": "AdmissionReview",
                "response": {"uid": review["request"]["uid"], "allowed": True},
            }
            sent = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(sent)))
            self.end_headers()
            self.wfile.write(sent)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Capture)
    server.daemon_threads = True
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"https://127.0.0.1:{server.server_address[1]}/validate", ca, bodies
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module", name="maximal")
def _maximal(control_plane: ControlPlane) -> tuple[str, dict[str, Any]]:
    """The largest maximal store etcd takes, stored (no webhook registered yet): its namespace
    and the object as stored. Found by bisecting the categories' length."""
    install_crd(control_plane, platform_today_crd())
    namespace = new_namespace(control_plane, "max")
    custom = k8s.CustomObjectsApi(api_client(control_plane))

    def fits(length: int) -> bool:
        """Stored (then deleted again): a dry run never reaches etcd, whose limit this is."""
        body = feedbackstore("probe", maximal_spec(length))
        try:
            custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)
            custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "probe")
        except k8s.ApiException as error:
            # etcd's limit ("request is too large"), past it kube-apiserver's etcd client's
            # ("trying to send message larger than max"), or the request body's ("too large")
            if "too large" in str(error.body) or "larger than max" in str(error.body):
                return False
            raise
        return True

    low, high = 2, 1024
    assert fits(low)
    assert not fits(high)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    stored = custom.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, feedbackstore("maximal", maximal_spec(low))
    )
    return namespace, stored


def test_the_largest_update_review_fits_the_default_body_limit(
    control_plane: ControlPlane, maximal: tuple[str, dict[str, Any]], tmp_path: pathlib.Path
) -> None:
    namespace, stored = maximal
    custom = k8s.CustomObjectsApi(api_client(control_plane))
    length = len(stored["spec"]["human"]["scores"][0]["categories"][0])
    with capturing_webhook(tmp_path / "capture") as (url, ca, bodies):
        document = registration(f"capture-{namespace}", url, ca)
        document["webhooks"][0]["namespaceSelector"] = {
            "matchLabels": {"kubernetes.io/metadata.name": namespace}
        }
        with registered(control_plane, document, namespace, wait=False):
            changed = copy.deepcopy(stored)
            changed["spec"] = maximal_spec(length, mark="b")  # every name changed: judged

            def sent() -> bool:
                custom.replace_namespaced_custom_object(
                    GROUP, VERSION, namespace, PLURAL, "maximal", changed, dry_run="All"
                )
                return bool(bodies)

            eventually(sent, what="the maximal update sent to the webhook")
    largest = max(bodies, key=len)
    stored_bytes = len(json.dumps(stored, separators=(",", ":")).encode())
    print(
        f"\nmaximal store: categories {length} characters, {stored_bytes} bytes as JSON; "
        f"UPDATE review: {len(largest)} bytes, {json_values(largest)} JSON values counted"
    )
    assert len(largest) > 2 * stored_bytes, "the review carries both objects"
    assert len(largest) <= default_of(ServerConfig, "max_body_bytes")
    assert json_values(largest) * 4 <= MAX_JSON_VALUES, "far from the bound on values"


def test_match_conditions_hold_on_a_maximal_store_with_the_webhook_down(
    control_plane: ControlPlane, maximal: tuple[str, dict[str, Any]], tmp_path: pathlib.Path
) -> None:
    """Under failurePolicy Fail a CEL error or cost overrun would refuse the write: the relabel
    passing proves the conditions evaluated within the limits on the largest store."""
    namespace, _ = maximal
    custom = k8s.CustomObjectsApi(api_client(control_plane))
    with webhook_server(tmp_path / "down") as down:
        document = registration(f"down-{namespace}", down.url, down.ca_pem)
        document["webhooks"][0]["namespaceSelector"] = {
            "matchLabels": {"kubernetes.io/metadata.name": namespace}
        }
        with registered(control_plane, document, namespace, wait=False):
            down.process.kill()
            relabel = {"metadata": {"labels": {"team": "support"}}}

            def relabelled() -> bool:
                custom.patch_namespaced_custom_object(
                    GROUP, VERSION, namespace, PLURAL, "maximal", relabel
                )
                return True

            eventually(relabelled, what="the relabel of the maximal store")
            with pytest.raises(k8s.ApiException) as refused:
                custom.patch_namespaced_custom_object(
                    GROUP, VERSION, namespace, PLURAL, "maximal", {"spec": {"mode": "Monitor"}}
                )
    assert refused.value.status == 500
    assert "connection refused" in str(refused.value.body), refused.value.body
