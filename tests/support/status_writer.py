"""Shared pieces for the status-writer tests: objects, a running writer, what "converged" means.

"Converged" is each object's Validated condition saying, word for word, what a person must read
for its spec (status, reason and message written out here, not asked of the rules), at the
object's current generation.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import orjson

from tests.support.emulator import ApiServerEmulator
from tests.support.stores import INVALID as INVALID  # the status tests' import
from tests.support.stores import INVALID_MESSAGE as INVALID_MESSAGE
from tests.support.stores import VALID as VALID
from tests.support.stores import VALID_MESSAGE as VALID_MESSAGE
from tests.support.stores import fs as fs
from webhook.status.controller import StatusController
from webhook.status.writer_metrics import RECONCILE_OUTCOMES
from webhook.status.writer_settings import WriterSettings

NS = "agents"
FS_PATH = "/apis/agents.ctxmesh.ai/v1beta1"
LEASE_PATH = "/apis/coordination.k8s.io/v1"
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")

# A Validated condition's status, reason and message.
Expected = tuple[str, str, str]
NO_PINS: Mapping[str, Expected] = {}


def _spec_key(spec: object) -> bytes:
    return orjson.dumps(spec, option=orjson.OPT_SORT_KEYS)


# The condition of each example spec.
EXAMPLE_CONDITIONS: dict[bytes, Expected] = {
    _spec_key(VALID): ("True", "SpecCoherent", VALID_MESSAGE),
    _spec_key(INVALID): ("False", "InvalidSpec", INVALID_MESSAGE),
}


# The writer's Lease in tests, in-process, as a process and on the real server: short enough for
# a test, long enough for a loaded 2-core machine to renew in time (a renewal may run a second
# and a half late without the leader losing the Lease between two writes a test counts), and to
# write within half the gap between the two (ElectionSettings.write_timeout: 1.5 s).
LEASE_DURATION = 5
RENEW_DEADLINE = 2.0
RETRY_PERIOD = 0.25


def fast_settings(**overrides: Any) -> WriterSettings:
    """Short leases, backoffs and resyncs, so fault tests finish in seconds."""
    values: dict[str, Any] = {
        "lease_namespace": NS,
        "lease_duration": LEASE_DURATION,
        "renew_deadline": RENEW_DEADLINE,
        "retry_period": RETRY_PERIOD,
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


def reconciles(controller: StatusController) -> float:
    """Reconciles finished, whatever their outcome: each is a decision taken about one object, so
    a test that must see nothing written waits for the decision rather than for a guessed time."""
    name = "feedbackstore_status_reconciles_total"
    return sum(sample(controller, name, outcome=outcome) for outcome in RECONCILE_OUTCOMES)


def validated(obj: dict[str, Any] | None, kind: str = "Validated") -> dict[str, Any] | None:
    status = (obj or {}).get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    if not isinstance(conditions, list):
        return None
    return next((c for c in conditions if c.get("type") == kind), None)


def stalled(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    return validated(obj, "Stalled")


def expected_condition(obj: dict[str, Any], pins: Mapping[str, Expected] = NO_PINS) -> Expected:
    """What the object's condition must say: pinned by its name, else that of its example spec."""
    name = obj["metadata"]["name"]
    if name in pins:
        return pins[name]
    expected = EXAMPLE_CONDITIONS.get(_spec_key(obj.get("spec")))
    assert expected is not None, f"{name}: not an example spec; pin the condition it must get"
    return expected


def up_to_date(obj: dict[str, Any], pins: Mapping[str, Expected] = NO_PINS) -> bool:
    """The condition says what it must, about the object's current generation."""
    condition = validated(obj)
    if condition is None:
        return False
    said = (condition["status"], condition.get("reason"), condition.get("message"))
    current = condition.get("observedGeneration") == obj["metadata"]["generation"]
    return current and said == expected_condition(obj, pins)


def stale(
    emu: ApiServerEmulator, namespace: str | None = None, pins: Mapping[str, Expected] = NO_PINS
) -> list[str]:
    """Names of objects whose condition does not (yet) say what it must."""
    return [o["metadata"]["name"] for o in emu.objects(namespace) if not up_to_date(o, pins)]


def converged(
    emu: ApiServerEmulator, timeout: float = 30.0, pins: Mapping[str, Expected] = NO_PINS
) -> None:
    """Every object's condition says what it must (`pins`: by name, for non-example specs)."""
    emu.eventually(lambda: not stale(emu, pins=pins), timeout=timeout, message="objects left stale")


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
