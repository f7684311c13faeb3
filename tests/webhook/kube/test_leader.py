"""Leader election decisions on a Lease record, as client-go makes them. Pure: no server."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest

from webhook.kube.leader import (
    claimed_spec,
    held_by_other,
    lapses_at,
    read_record,
    released_spec,
)
from webhook.status.writer_settings import holder_identity

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)  # zero microseconds on purpose
STAMP = "2025-06-01T12:00:00.000000Z"
ME = "writer-0_1111"
OTHER = "writer-1_2222"


def lease(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "l", "namespace": "n", "resourceVersion": "5"}, "spec": spec}


HELD: list[tuple[str, dict[str, Any], float, bool]] = [
    (
        "a fresh lease held by another replica is held",
        lease(holderIdentity=OTHER, leaseDurationSeconds=15),
        10.0,
        True,
    ),
    (
        "a lease not renewed for its duration has expired",
        lease(holderIdentity=OTHER, leaseDurationSeconds=15),
        15.0,
        False,
    ),
    (
        "our own lease is never held against us",
        lease(holderIdentity=ME, leaseDurationSeconds=15),
        1.0,
        False,
    ),
    (
        "a released lease (empty holder) is free",
        lease(holderIdentity="", leaseDurationSeconds=1),
        0.0,
        False,
    ),
    ("a lease without a holder is free", lease(), 0.0, False),
    ("a missing duration falls back to ours", lease(holderIdentity=OTHER), 14.0, True),
    (
        "a nonsense duration falls back to ours",
        lease(holderIdentity=OTHER, leaseDurationSeconds="15"),
        16.0,
        False,
    ),
]


@pytest.mark.parametrize(
    ("obj", "elapsed", "held"), [c[1:] for c in HELD], ids=[c[0] for c in HELD]
)
def test_held_by_other_is_measured_on_our_clock_since_we_saw_the_record(
    obj: dict[str, Any], elapsed: float, held: bool
) -> None:
    observed_at = 100.0
    assert held_by_other(read_record(obj), ME, observed_at, observed_at + elapsed, 15) is held


def test_claiming_a_new_lease_sets_every_field_with_microtime() -> None:
    assert claimed_spec(None, ME, 15, NOW) == {
        "holderIdentity": ME,
        "leaseDurationSeconds": 15,
        "acquireTime": STAMP,
        "renewTime": STAMP,
        "leaseTransitions": 0,
    }


def test_renewing_keeps_acquire_time_and_the_transition_count() -> None:
    record = read_record(
        lease(holderIdentity=ME, acquireTime="2025-01-01T00:00:00.000000Z", leaseTransitions=3)
    )
    spec = claimed_spec(record, ME, 15, NOW)
    assert spec["acquireTime"] == "2025-01-01T00:00:00.000000Z"
    assert spec["renewTime"] == STAMP
    assert spec["leaseTransitions"] == 3


def test_taking_over_from_another_holder_counts_a_transition_and_keeps_unknown_fields() -> None:
    record = read_record(
        lease(holderIdentity=OTHER, leaseTransitions=3, strategy="OldestEmulationVersion")
    )
    spec = claimed_spec(record, ME, 15, NOW)
    assert spec["holderIdentity"] == ME
    assert spec["acquireTime"] == STAMP
    assert spec["leaseTransitions"] == 4
    assert spec["strategy"] == "OldestEmulationVersion"


def test_taking_a_released_lease_is_not_a_transition_from_anyone() -> None:
    record = read_record(lease(holderIdentity="", leaseTransitions=4))
    assert claimed_spec(record, ME, 15, NOW)["leaseTransitions"] == 4


def test_release_empties_the_holder_like_client_go() -> None:
    record = read_record(lease(holderIdentity=ME, leaseTransitions=2, leaseDurationSeconds=15))
    assert released_spec(record, NOW) == {
        "holderIdentity": "",
        "leaseDurationSeconds": 1,
        "acquireTime": STAMP,
        "renewTime": STAMP,
        "leaseTransitions": 2,
    }


@pytest.mark.parametrize(
    "obj",
    [{}, {"spec": None, "metadata": []}, {"spec": {"holderIdentity": 5, "leaseTransitions": -1}}],
    ids=["an empty object", "spec and metadata of the wrong type", "fields of the wrong type"],
)
def test_a_malformed_lease_reads_as_free(obj: dict[str, Any]) -> None:
    record = read_record(obj)
    assert record.holder == ""
    assert record.transitions == 0
    assert not held_by_other(record, ME, 0.0, 0.0, 15)


def test_holder_identity_is_the_pod_name_plus_a_unique_suffix() -> None:
    first = holder_identity({"POD_NAME": "status-writer-7d9f-abcde"})
    second = holder_identity({"POD_NAME": "status-writer-7d9f-abcde"})
    assert re.fullmatch(r"status-writer-7d9f-abcde_[0-9a-f-]{36}", first)
    assert first != second


def test_holder_identity_without_pod_name_uses_the_host_name_never_bare() -> None:
    identity = holder_identity({})
    assert "_" in identity
    assert len(identity.rsplit("_", 1)[1]) == 36


@pytest.mark.parametrize(
    ("spec", "lapses"),
    [
        pytest.param(
            {"holderIdentity": OTHER, "leaseDurationSeconds": 15, "renewTime": STAMP},
            datetime(2025, 6, 1, 12, 0, 15, tzinfo=UTC),
            id="a held Lease lapses its duration after its renewal",
        ),
        pytest.param(
            {"holderIdentity": OTHER, "renewTime": "2025-06-01T12:00:00.250000Z"},
            datetime(2025, 6, 1, 12, 0, 15, 250000, tzinfo=UTC),
            id="without a duration, client-go's default of 15 s",
        ),
        pytest.param(
            {"holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": STAMP},
            None,
            id="a released Lease (no holder) holds nobody",
        ),
        pytest.param(
            {"holderIdentity": OTHER, "leaseDurationSeconds": 15},
            None,
            id="a Lease never renewed holds nobody",
        ),
        pytest.param(
            {"holderIdentity": OTHER, "leaseDurationSeconds": 15, "renewTime": "yesterday"},
            None,
            id="an unreadable renewTime holds nobody",
        ),
    ],
)
def test_when_a_lease_lapses_for_a_one_off_reader(
    spec: dict[str, Any], lapses: datetime | None
) -> None:
    assert lapses_at(read_record(lease(**spec)), 15) == lapses
