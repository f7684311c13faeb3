"""Shared pieces for the status-writer tests: objects, a running writer, what "converged" means.

The oracle for "the right condition" is the rules verdict (tested on its own in
tests/webhook/rules/): the writer's job is to mirror it, at the object's
current generation.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.support.emulator import ApiServerEmulator
from webhook.rules import validate_feedbackstore
from webhook.status.controller import StatusController
from webhook.status.writer_settings import WriterSettings

NS = "agents"
FS_PATH = "/apis/agents.ctxmesh.ai/v1beta1"
LEASE_PATH = "/apis/coordination.k8s.io/v1"
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")

VALID: dict[str, Any] = {"human": {"scores": [{"name": "thumbs", "dataType": "BOOLEAN"}]}}
INVALID: dict[str, Any] = {"human": {"scores": [{"name": "thumbs"}, {"name": "thumbs"}]}}
INVALID_MESSAGE = (
    'spec.human.scores[1].name: Duplicate value: "thumbs": human score names must be unique '
    "(first declared at spec.human.scores[0].name)"
)


def fs(name: str, spec: object, **metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": "agents.ctxmesh.ai/v1beta1",
        "kind": "FeedbackStore",
        "metadata": {"name": name, **metadata},
        "spec": spec,
    }


def fast_settings(**overrides: Any) -> WriterSettings:
    """Short leases, backoffs and resyncs, so fault tests finish in seconds."""
    values: dict[str, Any] = {
        "lease_namespace": NS,
        "lease_duration": 2,
        "renew_deadline": 1.5,
        "retry_period": 0.2,
        "resync_seconds": 3600.0,
        "workers": 2,
        "backoff_initial": 0.05,
        "backoff_cap": 0.5,
        "retry_initial": 0.02,
        "retry_cap": 0.5,
    }
    values.update(overrides)
    return WriterSettings(**values)


@contextmanager
def running_writer(emu: ApiServerEmulator, **overrides: Any) -> Iterator[StatusController]:
    """A started writer on its own ApiClient, stopped (and its Lease released) afterwards."""
    client = emu.api_client()
    controller = StatusController(client, fast_settings(**overrides))
    controller.start()
    try:
        yield controller
    finally:
        controller.stop()
        client.close()


def sample(controller: StatusController, name: str, **labels: str) -> float:
    """One value from the writer's own Prometheus registry (0 when not yet recorded)."""
    value = controller.metrics.registry.get_sample_value(name, labels)
    return value or 0.0


def validated(obj: dict[str, Any] | None, kind: str = "Validated") -> dict[str, Any] | None:
    status = (obj or {}).get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    if not isinstance(conditions, list):
        return None
    return next((c for c in conditions if c.get("type") == kind), None)


def stalled(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    return validated(obj, "Stalled")


def mirrors_verdict(obj: dict[str, Any]) -> bool:
    """The object's condition says what the rules say about its current generation."""
    condition = validated(obj)
    if condition is None:
        return False
    expected = "True" if validate_feedbackstore(obj).valid else "False"
    return (
        condition["status"] == expected
        and condition.get("observedGeneration") == obj["metadata"]["generation"]
    )


def stale(emu: ApiServerEmulator, namespace: str | None = None) -> list[str]:
    """Names of objects whose condition does not (yet) mirror their verdict."""
    return [o["metadata"]["name"] for o in emu.objects(namespace) if not mirrors_verdict(o)]


def converged(emu: ApiServerEmulator, timeout: float = 20.0) -> None:
    emu.eventually(lambda: not stale(emu), timeout=timeout, message="objects left stale")


def status_writes(emu: ApiServerEmulator, name: str | None = None) -> list[Any]:
    """Status PATCH requests seen (optionally for one object)."""
    return [
        r
        for r in emu.requests
        if r.method == "PATCH"
        and r.path.endswith("/status")
        and (name is None or r.path.endswith(f"/{name}/status"))
    ]


def store_requests(emu: ApiServerEmulator) -> list[Any]:
    return [r for r in emu.requests if r.path.startswith(FS_PATH)]


def lists(emu: ApiServerEmulator) -> list[Any]:
    return [
        r
        for r in store_requests(emu)
        if r.method == "GET" and r.path.endswith("/feedbackstores") and "watch" not in r.query
    ]
