"""The unreachable-webhook alert reads kube-apiserver's own metrics: the series its promtool
tests feed (tests/monitoring/alerts_test.yaml) must be what a real kube-apiserver v1.37
exposes after it failed to call the webhook, denied through it, and failed open on a DELETE."""

from __future__ import annotations

import pathlib

import pytest
from kubernetes import client as k8s

from tests.kube.cluster import (
    GROUP,
    PLURAL,
    VERSION,
    api_client,
    feedbackstore,
    install_crd,
    new_namespace,
    platform_today_crd,
    webhook_server,
)
from tests.kube.controlplane import ControlPlane
from tests.kube.kubectl_support import register
from tests.support.monitoring import Series, exposed, fed_series, missing
from tests.support.stores import VALID

pytestmark = [pytest.mark.kube, pytest.mark.xdist_group("kube")]

# Two sources declaring one name: the platform's CRD (no CEL) lets it through to the webhook.
INVALID = {
    "human": {"scores": [{"name": "csat"}]},
    "external": [{"name": "survey", "score": {"name": "csat"}}],
}


def _less_name(series: set[Series]) -> set[Series]:
    """The webhook entry's name differs between a test registration and the tests' input."""
    return {(n, frozenset(p for p in labels if p[0] != "name")) for n, labels in series}


def test_kube_apiserver_exposes_the_series_the_unreachable_alert_reads(
    control_plane: ControlPlane, tmp_path: pathlib.Path
) -> None:
    install_crd(control_plane, platform_today_crd())
    namespace = new_namespace(control_plane)
    api = k8s.CustomObjectsApi(api_client(control_plane))
    with (
        webhook_server(tmp_path) as server,
        register(control_plane, server.url, server.ca_pem, namespace) as registration,
    ):
        api.create_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, feedbackstore("kept", VALID)
        )
        with pytest.raises(k8s.ApiException) as denied:
            api.create_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, feedbackstore("invalid", INVALID)
            )
        assert denied.value.status == 422
        server.process.kill()
        with pytest.raises(k8s.ApiException) as unreachable:
            api.create_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, feedbackstore("refused", VALID)
            )
        assert "failed calling webhook" in str(unreachable.value.body)
        # The DELETE entry (failurePolicy Ignore) fails open.
        api.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "kept")
    text = control_plane.kubectl("get", "--raw", "/metrics", check=True).stdout
    scrape = exposed(text)
    fed = fed_series("apiserver_admission_webhook_")
    assert len(fed) >= 3
    assert missing(_less_name(fed), _less_name(scrape)) == []
    names = {
        dict(labels).get("name")
        for name, labels in scrape
        if name.startswith("apiserver_admission_webhook_")
    }
    # The entries the FeedbackStore requests above went through (not the agents' one).
    entries = {e["name"] for e in registration["webhooks"] if "feedbackstores" in e["name"]}
    assert len(entries) == 2
    assert entries <= names
