"""The status writer against the API-server emulator, through the real kubernetes client.

Nothing in the writer is mocked: it lists, watches and applies over HTTP, and
these tests read back what the "cluster" holds.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from tests.support.emulator import ApiServerEmulator
from tests.support.status_writer import (
    INVALID,
    INVALID_MESSAGE,
    NS,
    RFC3339,
    VALID,
    VALID_MESSAGE,
    Expected,
    converged,
    fs,
    lists,
    reconciles,
    running_writer,
    sample,
    stale,
    stalled,
    status_writes,
    store_requests,
    validated,
)

CASES: list[tuple[str, object, str, str, str]] = [
    ("a valid store is SpecCoherent", VALID, "True", "SpecCoherent", VALID_MESSAGE),
    ("duplicate names are InvalidSpec", INVALID, "False", "InvalidSpec", INVALID_MESSAGE),
    (
        "a store without a spec names the missing source",
        None,
        "False",
        "InvalidSpec",
        (
            "spec: Required value: feedback must declare at least one source: "
            "human.scores or an external channel"
        ),
    ),
    (
        "a typo in spec is an unknown field",
        {
            "humans": {"scores": [{"name": "a"}]},
            "external": [{"name": "c", "score": {"name": "b"}}],
        },
        "False",
        "InvalidSpec",
        'spec.humans: Forbidden: unknown field "spec.humans"; did you mean "spec.human"?',
    ),
    (
        "wrong types in spec are named",
        {"human": {"scores": "thumbs"}, "mode": 3},
        "False",
        "InvalidSpec",
        'spec.mode: Invalid value: "integer": must be of type string; '
        'spec.human.scores: Invalid value: "string": must be of type array',
    ),
]


@pytest.mark.parametrize(
    ("spec", "status", "reason", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_each_object_gets_the_condition_of_its_verdict(
    apiserver: ApiServerEmulator, spec: object, status: str, reason: str, message: str
) -> None:
    apiserver.create(NS, fs("store", spec))
    with running_writer(apiserver):
        apiserver.eventually(lambda: validated(apiserver.get(NS, "store")))
    condition = validated(apiserver.get(NS, "store"))
    assert condition is not None
    assert {k: v for k, v in condition.items() if k != "lastTransitionTime"} == {
        "type": "Validated",
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": 1,
    }
    assert RFC3339.match(condition["lastTransitionTime"])


def test_a_huge_invalid_object_gets_a_bounded_message(apiserver: ApiServerEmulator) -> None:
    huge = {"human": {"scores": [{"name": "x", "categories": ["c"] * 64}] * 3000}}
    apiserver.create(NS, fs("huge", huge))
    # The emulator, Python on the same loaded cores, may take seconds to apply status to a 1 MB
    # object: a long Lease gives the write a timeout of 20 s (half the gap to the deadline).
    with running_writer(apiserver, lease_duration=60, renew_deadline=20.0):
        apiserver.eventually(lambda: validated(apiserver.get(NS, "huge")), timeout=60)
    condition = validated(apiserver.get(NS, "huge"))
    assert (condition["status"], condition["reason"]) == ("False", "InvalidSpec")
    message = condition["message"]
    assert len(message) <= 32768
    assert message.startswith("spec.human.scores: Too many: 3000: must have at most 64 items")
    assert message.endswith("more problems")


def test_fixing_a_spec_flips_the_condition_and_moves_last_transition_time(
    apiserver: ApiServerEmulator,
) -> None:
    apiserver.create(NS, fs("store", INVALID))
    with running_writer(apiserver):
        converged(apiserver)
        broken = validated(apiserver.get(NS, "store"))
        assert broken is not None
        time.sleep(1.1)  # lastTransitionTime has whole seconds: make the move visible

        def fix(obj: dict[str, Any]) -> None:
            obj["spec"] = VALID

        apiserver.update(NS, "store", fix)
        apiserver.eventually(lambda: validated(apiserver.get(NS, "store"))["status"] == "True")
        fixed = validated(apiserver.get(NS, "store"))
        assert fixed is not None
        assert (fixed["reason"], fixed["message"], fixed["observedGeneration"]) == (
            "SpecCoherent",
            VALID_MESSAGE,
            2,
        )
        assert fixed["lastTransitionTime"] > broken["lastTransitionTime"]


def test_a_new_generation_with_the_same_verdict_keeps_last_transition_time(
    apiserver: ApiServerEmulator,
) -> None:
    apiserver.create(NS, fs("store", VALID))
    with running_writer(apiserver):
        converged(apiserver)
        before = validated(apiserver.get(NS, "store"))
        time.sleep(1.1)
        apiserver.update(NS, "store", lambda o: o["spec"].update(mode="Monitor"))
        apiserver.eventually(
            lambda: validated(apiserver.get(NS, "store"))["observedGeneration"] == 2
        )
        after = validated(apiserver.get(NS, "store"))
    assert before is not None
    assert after is not None
    assert after["lastTransitionTime"] == before["lastTransitionTime"]


def test_a_spec_change_arrives_through_the_watch_not_a_resync(apiserver: ApiServerEmulator) -> None:
    apiserver.create(NS, fs("store", VALID))
    with running_writer(apiserver, resync_seconds=3600.0) as writer:
        converged(apiserver)
        apiserver.reset_requests()
        apiserver.update(NS, "store", lambda o: o.update(spec=INVALID))
        apiserver.eventually(lambda: validated(apiserver.get(NS, "store"))["status"] == "False")
        assert sample(writer, "feedbackstore_status_lists_total") == 1  # no relist was needed
    assert not lists(apiserver)
    assert len(status_writes(apiserver)) == 1


def test_an_up_to_date_cluster_costs_no_write_on_resync(apiserver: ApiServerEmulator) -> None:
    for i in range(20):
        apiserver.create(NS, fs(f"s{i}", VALID if i % 3 else INVALID))
    with running_writer(apiserver, resync_seconds=0.2) as writer:
        converged(apiserver)
        apiserver.eventually(lambda: len(status_writes(apiserver)) == 20)
        apiserver.reset_requests()
        resyncs = sample(writer, "feedbackstore_status_reconciles_total", outcome="up_to_date")
        apiserver.eventually(
            lambda: (
                sample(writer, "feedbackstore_status_reconciles_total", outcome="up_to_date")
                >= resyncs + 40
            ),
            message="two resyncs did not run",
        )
        assert store_requests(apiserver) == []  # no write, no list, no get


def test_a_second_start_against_an_up_to_date_cluster_lists_once_and_writes_nothing(
    apiserver: ApiServerEmulator,
) -> None:
    for i in range(10):
        apiserver.create(NS, fs(f"s{i}", VALID if i % 2 else INVALID))
    with running_writer(apiserver):
        converged(apiserver)
    apiserver.reset_requests()
    with running_writer(apiserver) as writer:
        apiserver.eventually(writer.is_leader)
        apiserver.eventually(
            lambda: (
                sample(writer, "feedbackstore_status_reconciles_total", outcome="up_to_date") >= 10
            )
        )
        time.sleep(0.3)
    assert status_writes(apiserver) == []
    assert len(lists(apiserver)) == 1


def test_another_controllers_condition_survives(apiserver: ApiServerEmulator) -> None:
    ready = {
        "type": "Ready",
        "status": "False",
        "reason": "Provisioning",
        "message": "gateway not yet configured",
        "lastTransitionTime": "2024-01-01T00:00:00Z",
    }
    body = fs("store", VALID)
    body["status"] = {"conditions": [ready]}
    apiserver.create(NS, body, field_manager="gateway-controller")
    with running_writer(apiserver):
        converged(apiserver)
        apiserver.update(NS, "store", lambda o: o.update(spec=INVALID))
        converged(apiserver)
    conditions = apiserver.get(NS, "store")["status"]["conditions"]
    assert [c["type"] for c in conditions] == ["Ready", "Validated", "Stalled"]
    assert conditions[0] == ready


def test_a_validated_condition_another_manager_writes_is_left_to_it_logged_and_counted_once(
    apiserver: ApiServerEmulator, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="feedbackstore")
    theirs = {
        "type": "Validated",
        "status": "True",
        "reason": "SpecCoherent",
        "message": "written by someone else",
        "lastTransitionTime": "2024-01-01T00:00:00Z",
    }
    body = fs("store", INVALID)
    body["status"] = {"conditions": [theirs]}
    apiserver.create(NS, body, field_manager="old-controller")
    with running_writer(apiserver) as writer:
        apiserver.eventually(lambda: stalled(apiserver.get(NS, "store")))
        apiserver.update(NS, "store", lambda o: o["metadata"].update(labels={"touched": "1"}))
        apiserver.update(NS, "store", lambda o: o["spec"]["human"]["scores"].append({"name": "x"}))
        apiserver.eventually(lambda: stalled(apiserver.get(NS, "store"))["observedGeneration"] == 2)
        decided = reconciles(writer)
        writer.resync()
        apiserver.eventually(lambda: reconciles(writer) > decided, message="the resync reconciled")
        assert sample(writer, "feedbackstore_status_objects_validated_yielded") == 1
        yielded = "feedbackstore_status_validated_yielded_total"
        assert sample(writer, yielded, manager="old-controller") == 1
    stored = apiserver.get(NS, "store")
    assert validated(stored) == theirs
    assert stalled(stored)["message"] == INVALID_MESSAGE
    assert all(r.status == 200 for r in status_writes(apiserver))
    said = [r for r in caplog.records if r.getMessage().startswith("Validated left to another")]
    assert [r.fields["manager"] for r in said] == ["old-controller"]  # type: ignore[attr-defined]


def test_only_the_watched_namespace_is_written(apiserver: ApiServerEmulator) -> None:
    apiserver.create(NS, fs("mine", INVALID))
    apiserver.create("elsewhere", fs("theirs", INVALID))
    with running_writer(apiserver, namespace=NS) as writer:
        apiserver.eventually(lambda: not stale(apiserver, NS))
        time.sleep(0.3)
        assert sample(writer, "feedbackstore_status_objects") == 1
    assert validated(apiserver.get("elsewhere", "theirs")) is None


def test_all_namespaces_are_written_by_default(apiserver: ApiServerEmulator) -> None:
    for namespace in ("a", "b", "c"):
        apiserver.create(namespace, fs("store", INVALID))
    with running_writer(apiserver):
        converged(apiserver)


def test_events_tell_why_when_a_verdict_turns_invalid_and_valid_again(
    apiserver: ApiServerEmulator,
) -> None:
    apiserver.create(NS, fs("born-valid", VALID))
    apiserver.create(NS, fs("born-broken", INVALID))
    with running_writer(apiserver):
        converged(apiserver)
        apiserver.update(NS, "born-broken", lambda o: o.update(spec=VALID))
        apiserver.update(NS, "born-valid", lambda o: o.update(spec=INVALID))
        converged(apiserver)
        apiserver.eventually(lambda: len(apiserver.events(NS)) == 3)
    seen = [
        (e["involvedObject"]["name"], e["type"], e["reason"], e["message"])
        for e in apiserver.events(NS)
    ]
    invalid = f"spec is invalid: {INVALID_MESSAGE}"
    assert sorted(seen) == sorted(
        [
            ("born-broken", "Warning", "InvalidSpec", invalid),
            ("born-broken", "Normal", "SpecCoherent", VALID_MESSAGE),
            ("born-valid", "Warning", "InvalidSpec", invalid),
        ]
    )
    for event in apiserver.events(NS):
        assert event["involvedObject"]["kind"] == "FeedbackStore"
        assert (
            event["involvedObject"]["uid"]
            == apiserver.get(NS, event["involvedObject"]["name"])["metadata"]["uid"]
        )
        assert event["source"]["component"] == "feedbackstore-status-writer"


def test_an_object_deleted_before_its_write_is_skipped(apiserver: ApiServerEmulator) -> None:
    apiserver.create(NS, fs("doomed", INVALID))
    apiserver.faults.delay(1.0, method="PATCH", path_contains="/doomed/status", count=1)
    with running_writer(apiserver) as writer:
        apiserver.eventually(lambda: status_writes(apiserver, "doomed"))
        apiserver.delete(NS, "doomed")
        apiserver.create(NS, fs("survivor", INVALID))
        converged(apiserver)
        apiserver.eventually(
            lambda: sample(writer, "feedbackstore_status_writes_total", result="not_found") == 1
        )
        time.sleep(0.3)
    assert len(status_writes(apiserver, "doomed")) == 1  # a 404 is not retried
    assert [r.status for r in status_writes(apiserver, "doomed")] == [404]


HOSTILE: list[tuple[str, dict[str, Any]]] = [
    ("spec is a list", fs("a", [1, 2, 3])),
    ("spec is a string", fs("b", "human")),
    (
        "a deeply nested spec",
        fs("c", {"human": {"scores": [{"name": {"x": {"y": {"z": [[[[1]]]]}}}}]}}),
    ),
    ("status is a string", {**fs("d", VALID), "status": "broken"}),
    (
        "conditions is not a list",
        {**fs("e", VALID), "status": {"conditions": {"type": "Validated"}}},
    ),
    ("a score name too long in code points", fs("f", {"human": {"scores": [{"name": "é" * 129}]}})),
]


HOSTILE_CONDITIONS: dict[str, Expected] = {
    "a": ("False", "InvalidSpec", 'spec: Invalid value: "array": must be of type object'),
    "b": ("False", "InvalidSpec", 'spec: Invalid value: "string": must be of type object'),
    "c": (
        "False",
        "InvalidSpec",
        'spec.human.scores[0].name: Invalid value: "object": must be of type string',
    ),
    "f": (
        "False",
        "InvalidSpec",
        "spec.human.scores[0].name: Too long: may not be more than 128 characters",
    ),
}


def test_hostile_objects_get_conditions_and_do_not_stop_the_writer(
    apiserver: ApiServerEmulator,
) -> None:
    for _, body in HOSTILE:
        apiserver.create(NS, body)
    apiserver.create(NS, fs("ordinary", VALID))
    with running_writer(apiserver):
        converged(apiserver, pins=HOSTILE_CONDITIONS)
