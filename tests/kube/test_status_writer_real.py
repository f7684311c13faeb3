"""The status writer against a real kube-apiserver and etcd.

Each test runs `feedbackstore-webhook status-writer` (the console script) as a child
process scoped to a fresh namespace, as a user of its own, and checks what it did by what
the real server stores and by the server's audit log, not by the writer's word.

Invalid objects: the shipped CRD (installed for this module) refuses them with CEL, so they
are created while the platform's CRD of today (no CEL) is installed, and the shipped CRD is
put back before any writer starts (`create_unguarded`). That is the writer's reason to
exist — objects that predate the CRD's rules — and it shows the real server lets the writer
apply `status` on an object its current rules would refuse (CRD validation ratcheting: the
unchanged spec is not re-judged).
"""

from __future__ import annotations

import re
import signal
import time
from typing import Any

import pytest
from kubernetes import client as k8s

from tests.kube.cluster import (
    GROUP,
    PLURAL,
    VERSION,
    api_client,
    eventually,
    install_crd,
    new_namespace,
    shipped_crd,
)
from tests.kube.controlplane import ControlPlane
from tests.kube.status_writer_support import (  # noqa: F401 (fixtures)
    INVALID,
    INVALID_MESSAGE,
    LEASE,
    LEASE_DURATION,
    MANAGER,
    RECONCILES,
    RENEW_DEADLINE,
    RETRY_PERIOD,
    VALID,
    Audit,
    Stores,
    Writers,
    _audit,
    _stores,
    _writers,
    condition_of,
    create_unguarded,
    decided_to_leave_alone,
    managed_by,
    settle,
    wall_seconds,
)
from tests.support.stores import VALID_MESSAGE
from tests.support.writer_process import START_SECONDS

pytestmark = [pytest.mark.kube, pytest.mark.xdist_group("kube")]

RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
TWO_SCORES: dict[str, Any] = {
    "human": {"scores": [{"name": "thumbs", "dataType": "BOOLEAN"}, {"name": "stars"}]}
}


@pytest.fixture(scope="module", autouse=True)
def shipped(control_plane: ControlPlane) -> None:
    """Other modules swap the CRD variant; this one starts from the shipped CRD."""
    install_crd(control_plane, shipped_crd())


@pytest.fixture
def namespace(control_plane: ControlPlane) -> str:
    return new_namespace(control_plane, "sw")


YIELDED = "Validated left to another field manager; every problem stays in Stalled"
YIELDED_TOTAL = "feedbackstore_status_validated_yielded_total"


def invalid_stalled(condition: dict[str, Any]) -> bool:
    return condition["status"] == "True"


def coherent(condition: dict[str, Any]) -> bool:
    return condition["status"] == "True"


def invalid(condition: dict[str, Any]) -> bool:
    return condition["status"] == "False"


def at_generation(generation: int) -> Any:
    return lambda condition: condition.get("observedGeneration") == generation


# -- conditions, managedFields, generation -----------------------------------------------


def test_conditions_are_applied_on_status_with_real_managed_fields_and_follow_generation(
    control_plane: ControlPlane, namespace: str, stores: Stores, writers: Writers, audit: Audit
) -> None:
    create_unguarded(control_plane, namespace, {"bad": INVALID})
    stores.create("good", VALID)
    writer = writers.start("a")

    good = stores.wait_condition("good", coherent)
    bad = stores.wait_condition("bad", invalid)
    first_good = condition_of(good)
    assert first_good is not None
    assert {k: v for k, v in first_good.items() if k != "lastTransitionTime"} == {
        "type": "Validated",
        "status": "True",
        "reason": "SpecCoherent",
        "message": VALID_MESSAGE,
        "observedGeneration": 1,
    }
    assert RFC3339.match(first_good["lastTransitionTime"])
    first_bad = condition_of(bad)
    assert first_bad is not None
    assert {k: v for k, v in first_bad.items() if k != "lastTransitionTime"} == {
        "type": "Validated",
        "status": "False",
        "reason": "InvalidSpec",
        "message": INVALID_MESSAGE,
        "observedGeneration": 1,
    }

    assert condition_of(good, "Stalled") == {**first_good, "type": "Stalled", "status": "False"}
    assert condition_of(bad, "Stalled") == {**first_bad, "type": "Stalled", "status": "True"}

    # Server-side apply on /status, as our field manager, owning exactly our two entries.
    fields = {
        ".": {},
        "f:lastTransitionTime": {},
        "f:message": {},
        "f:observedGeneration": {},
        "f:reason": {},
        "f:status": {},
        "f:type": {},
    }
    for obj in (good, bad):
        (entry,) = managed_by(obj, MANAGER)
        assert (entry["operation"], entry["subresource"]) == ("Apply", "status")
        assert entry["fieldsV1"] == {
            "f:status": {
                "f:conditions": {'k:{"type":"Validated"}': fields, 'k:{"type":"Stalled"}': fields}
            }
        }
        # A status write does not move the generation.
        assert obj["metadata"]["generation"] == 1
    audit.flush(namespace)
    patches = audit.status_writes(namespace)
    assert sorted(p.name for p in patches) == ["bad", "good"]
    for patch in patches:
        assert (patch.verb, patch.user, patch.code) == ("patch", writer.user, 200)
        assert f"fieldManager={MANAGER}" in patch.uri
        assert "force=true" in patch.uri

    # A spec change is a new generation; same verdict: lastTransitionTime stays.
    time.sleep(1.1)  # whole seconds: a flip from now on shows a later lastTransitionTime
    assert stores.set_spec("good", TWO_SCORES)["metadata"]["generation"] == 2
    second_good = condition_of(stores.wait_condition("good", at_generation(2)))
    assert second_good is not None
    assert second_good["status"] == "True"
    assert second_good["lastTransitionTime"] == first_good["lastTransitionTime"]

    # Fixing the invalid spec flips the condition and moves lastTransitionTime.
    assert stores.set_spec("bad", VALID)["metadata"]["generation"] == 2
    fixed = condition_of(stores.wait_condition("bad", at_generation(2)))
    assert fixed is not None
    assert (fixed["status"], fixed["reason"], fixed["message"]) == (
        "True",
        "SpecCoherent",
        VALID_MESSAGE,
    )
    assert fixed["lastTransitionTime"] > first_bad["lastTransitionTime"]

    # Metadata changes are not a new generation, so they cost the writer nothing.
    labels = {"metadata": {"labels": {"team": "sales"}}}
    decided_to_leave_alone(writer, lambda: stores.merge("good", labels))
    assert stores.get("good")["metadata"]["generation"] == 2
    audit.flush(namespace)
    assert sorted(p.name for p in audit.status_writes(namespace)) == ["bad", "bad", "good", "good"]
    assert writer.metric("feedbackstore_status_writes_total", result="ok") == 4
    assert writer.metric("feedbackstore_status_watch_events_total", type="MODIFIED") >= 5


def test_another_managers_condition_survives_and_is_never_clobbered(
    namespace: str, stores: Stores, writers: Writers, audit: Audit
) -> None:
    stores.create("shared", VALID)
    ready = {
        "type": "Ready",
        "status": "False",
        "reason": "Waiting",
        "message": "gateway not synced",
        "lastTransitionTime": "2026-01-02T03:04:05Z",
    }
    stores.apply_status("shared", "other-controller", [ready])
    writer = writers.start("a")
    stores.wait_condition("shared", coherent)

    obj = stores.get("shared")
    assert condition_of(obj, "Ready") == ready
    (theirs,) = managed_by(obj, "other-controller")
    assert list(theirs["fieldsV1"]["f:status"]["f:conditions"]) == ['k:{"type":"Ready"}']
    (ours,) = managed_by(obj, MANAGER)
    assert list(ours["fieldsV1"]["f:status"]["f:conditions"]) == [
        'k:{"type":"Stalled"}',
        'k:{"type":"Validated"}',
    ]

    # The other controller changes its condition: ours stays, and is not rewritten.
    validated = condition_of(obj)
    ready_now = {**ready, "status": "True", "reason": "Synced", "message": "gateway synced"}
    decided_to_leave_alone(
        writer, lambda: stores.apply_status("shared", "other-controller", [ready_now])
    )
    audit.flush(namespace)
    assert len(audit.status_writes(namespace, writer.user)) == 1
    obj = stores.get("shared")
    assert condition_of(obj) == validated
    assert condition_of(obj, "Ready") == ready_now

    # Our rewrite (a new generation) leaves theirs exactly as it is.
    stores.set_spec("shared", TWO_SCORES)
    obj = stores.wait_condition("shared", at_generation(2))
    assert condition_of(obj, "Ready") == ready_now
    assert [c["type"] for c in obj["status"]["conditions"]] == ["Ready", "Validated", "Stalled"]
    audit.flush(namespace)
    assert len(audit.status_writes(namespace, writer.user)) == 2


def test_a_validated_another_manager_applied_is_left_to_it_logged_once_and_counted(
    control_plane: ControlPlane, namespace: str, stores: Stores, writers: Writers, audit: Audit
) -> None:
    create_unguarded(control_plane, namespace, {"legacy": INVALID})
    theirs = {
        "type": "Validated",
        "status": "Unknown",
        "reason": "Pending",
        "message": "not checked yet",
        "lastTransitionTime": "2026-01-02T03:04:05Z",
    }
    stores.apply_status("legacy", "legacy-controller", [theirs])
    writer = writers.start("a")

    stalled = stores.wait_for("legacy", "Stalled", invalid_stalled)
    assert condition_of(stalled, "Stalled") == {
        "type": "Stalled",
        "status": "True",
        "reason": "InvalidSpec",
        "message": INVALID_MESSAGE,
        "observedGeneration": 1,
        "lastTransitionTime": condition_of(stalled, "Stalled")["lastTransitionTime"],  # type: ignore[index]
    }
    # Theirs stays as they wrote it, and none of it is ours.
    assert condition_of(stalled) == theirs
    (ours,) = managed_by(stalled, MANAGER)
    assert list(ours["fieldsV1"]["f:status"]["f:conditions"]) == ['k:{"type":"Stalled"}']

    # A new generation: Stalled follows it, Validated is still theirs, nothing is said again.
    stores.set_spec("legacy", {**INVALID, "mode": "Monitor"})
    obj = stores.wait_for("legacy", "Stalled", lambda c: c.get("observedGeneration") == 2)
    assert condition_of(obj) == theirs
    writer.wait_log("condition written", count=2)
    said = writer.messages(YIELDED)
    assert [(e["name"], e["manager"]) for e in said] == [("legacy", "legacy-controller")]
    assert writer.metric(YIELDED_TOTAL, manager="legacy-controller") == 1
    assert writer.metric("feedbackstore_status_objects_validated_yielded") == 1
    audit.flush(namespace)
    assert [w.code for w in audit.status_writes(namespace, writer.user)] == [200, 200]


def test_a_validated_of_ours_another_manager_rewrites_is_left_to_it_and_never_removed(
    control_plane: ControlPlane, namespace: str, stores: Stores, writers: Writers, audit: Audit
) -> None:
    """The hard case: both own parts of it. Leaving it out of our apply would remove the whole
    condition, their message with it (kube-apiserver does: docs/status-writer.md shows it); we keep
    applying what we own as it stands, under a resourceVersion precondition."""
    create_unguarded(control_plane, namespace, {"shared": INVALID})
    writer = writers.start("a")
    ours = condition_of(stores.wait_condition("shared", invalid))
    assert ours is not None
    obj = stores.get("shared")
    theirs = {**ours, "message": "their words for it"}
    obj["status"]["conditions"] = [
        theirs if c["type"] == "Validated" else c for c in obj["status"]["conditions"]
    ]
    other = k8s.CustomObjectsApi(api_client(control_plane))
    other.api_client.user_agent = "another-controller/v1"
    other.replace_namespaced_custom_object_status(GROUP, VERSION, namespace, PLURAL, "shared", obj)
    writer.wait_log(YIELDED)
    (entry,) = managed_by(stores.get("shared"), "another-controller")
    assert entry["fieldsV1"] == {
        "f:status": {"f:conditions": {'k:{"type":"Validated"}': {"f:message": {}}}}
    }

    # Our next write (a new generation: Stalled changes) keeps their Validated whole.
    stores.set_spec("shared", {**INVALID, "mode": "Monitor"})
    obj = stores.wait_for("shared", "Stalled", lambda c: c.get("observedGeneration") == 2)
    assert condition_of(obj) == theirs
    (mine,) = managed_by(obj, MANAGER)
    assert set(mine["fieldsV1"]["f:status"]["f:conditions"]['k:{"type":"Validated"}']) == {
        ".",
        "f:type",
        "f:status",
        "f:reason",
        "f:lastTransitionTime",
        "f:observedGeneration",
    }
    audit.flush(namespace)
    writes = audit.status_writes(namespace, writer.user)
    assert len(writes) == 2
    assert "resourceVersion" not in writes[0].uri  # the precondition is in the body, not seen
    assert writer.metric(YIELDED_TOTAL, manager="another-controller") == 1


# -- restarts, leader election -----------------------------------------------------------


def test_a_restart_with_everything_current_writes_nothing(
    control_plane: ControlPlane, namespace: str, stores: Stores, writers: Writers, audit: Audit
) -> None:
    create_unguarded(control_plane, namespace, {"bad": INVALID})
    stores.create("good", VALID)
    stores.create("other", TWO_SCORES)
    first = writers.start("first")
    stores.wait_current("bad", "good", "other")
    assert first.stop() == 0

    second = writers.start("second", resync_seconds=1.0)
    second.wait_log("started leading")
    # Two resyncs: every object re-checked at least three times, none written.
    second.wait_log("listed")
    eventually(lambda: second.metric(RECONCILES, outcome="up_to_date") >= 9, what="two resyncs")
    audit.flush(namespace)
    assert audit.status_writes(namespace, second.user) == []
    assert audit.writes_by(namespace, second.user, "events") == []
    # One list, then the watch; no GET of single objects, no relist on resync.
    reads = [
        e.verb
        for e in audit.events(namespace)
        if e.user == second.user and e.resource == "feedbackstores" and e.verb != "watch"
    ]
    assert reads == ["list"]
    assert second.metric("feedbackstore_status_writes_total", result="ok") == 0
    assert second.metric("feedbackstore_status_objects_invalid") == 1
    assert [p.user for p in audit.status_writes(namespace)] == [first.user] * 3


def test_two_writers_one_lease_the_standby_never_writes_and_takes_over_a_killed_leader(
    namespace: str, stores: Stores, writers: Writers, audit: Audit
) -> None:
    leader = writers.start("leader")
    leader.wait_log("started leading")
    standby = writers.start("standby")
    # A standby's first list is part of its start (its cache is warm before it may lead):
    # waited for as long as a start, not as a will-happen wait (over 30 s at load 30).
    standby.wait_log("listed", timeout=START_SECONDS)
    for index in range(3):
        stores.create(f"store-{index}", VALID)
    stores.wait_current("store-0", "store-1", "store-2")
    stores.set_spec("store-0", TWO_SCORES)
    stores.wait_current("store-0")
    # It reconciled every change as a standby: seen, and declined.
    eventually(
        lambda: standby.metric(RECONCILES, outcome="standby") >= 4, what="the standby's decisions"
    )
    audit.flush(namespace)

    assert len(audit.status_writes(namespace, leader.user)) == 4
    assert audit.status_writes(namespace, standby.user) == []
    assert audit.writes_by(namespace, standby.user, "leases") == []
    assert standby.messages("started leading") == []
    assert standby.metric("feedbackstore_status_leader") == 0
    assert standby.metric("feedbackstore_status_objects") == 3  # a warm cache

    leader.kill()
    killed_at = time.time()
    (took_over,) = standby.wait_log("started leading", timeout=LEASE_DURATION + 10)
    waited = wall_seconds(took_over) - killed_at
    # It waited for the Lease to expire: a full lease duration after the last renewal it
    # saw, which the leader made at most a renew deadline before it died (an eager standby
    # would have taken it within one retry period); and it took it within a couple of
    # retry periods after that (plus slack for a loaded machine).
    assert LEASE_DURATION - RENEW_DEADLINE <= waited <= LEASE_DURATION + 2 * RETRY_PERIOD + 2.0

    lease = k8s.CustomObjectsApi(api_client(writers.plane)).get_namespaced_custom_object(
        "coordination.k8s.io", "v1", namespace, "leases", LEASE
    )
    spec = lease["spec"]
    assert spec["holderIdentity"] == standby.identity
    assert spec["leaseTransitions"] == 1
    assert spec["leaseDurationSeconds"] == LEASE_DURATION
    assert MICRO_TIME.match(spec["renewTime"])
    assert MICRO_TIME.match(spec["acquireTime"])

    stores.set_spec("store-1", TWO_SCORES)
    stores.wait_current("store-1")
    audit.flush(namespace)
    assert [p.name for p in audit.status_writes(namespace, standby.user)] == ["store-1"]


# -- Events -----------------------------------------------------------------------------


def test_events_are_accepted_by_the_real_validation_and_stored_as_expected(
    control_plane: ControlPlane, namespace: str, stores: Stores, writers: Writers, audit: Audit
) -> None:
    create_unguarded(control_plane, namespace, {"bad": INVALID})
    stores.create("good", VALID)
    writer = writers.start("a", resync_seconds=1.0)
    bad = stores.wait_condition("bad", invalid)
    stores.wait_condition("good", coherent)
    time.sleep(1.1)
    stores.set_spec("bad", VALID)
    stores.wait_condition("bad", coherent)
    # A resync (every second here) re-checks both stores: no more Events.
    decided_to_leave_alone(writer, lambda: None, decisions=2)

    core = k8s.CoreV1Api(api_client(control_plane))
    events = sorted(
        core.list_namespaced_event(namespace).to_dict()["items"],
        key=lambda e: e["metadata"]["creation_timestamp"],
    )
    assert [(e["type"], e["reason"]) for e in events] == [
        ("Warning", "InvalidSpec"),
        ("Normal", "SpecCoherent"),
    ]
    warning, normal = events
    assert warning["message"] == f"spec is invalid: {INVALID_MESSAGE}"
    assert normal["message"] == VALID_MESSAGE
    for event in events:
        involved = event["involved_object"]
        assert (involved["api_version"], involved["kind"], involved["name"]) == (
            "agents.ctxmesh.ai/v1beta1",
            "FeedbackStore",
            "bad",
        )
        assert (involved["namespace"], involved["uid"]) == (namespace, bad["metadata"]["uid"])
        assert event["source"]["component"] == MANAGER
        assert event["reporting_component"] == MANAGER
        assert event["reporting_instance"] == writer.identity
        assert event["count"] == 1
        assert event["first_timestamp"] == event["last_timestamp"]
        assert event["metadata"]["name"].startswith("bad.")
        assert [m["manager"] for m in event["metadata"]["managed_fields"]] == [MANAGER]

    # The same Events through events.k8s.io/v1 (one storage, two views). Read as plain
    # JSON: the client's typed EventsV1Api cannot decode them (its model requires
    # eventTime, which the server leaves null for a core/v1 Event created without one).
    new = k8s.CustomObjectsApi(api_client(control_plane)).list_namespaced_custom_object(
        "events.k8s.io", "v1", namespace, "events"
    )["items"]
    by_reason = {e["reason"]: e for e in new}
    assert set(by_reason) == {"InvalidSpec", "SpecCoherent"}
    for event in new:
        assert event["reportingController"] == MANAGER
        assert event["reportingInstance"] == writer.identity
        assert event["regarding"]["uid"] == bad["metadata"]["uid"]
        assert event["deprecatedSource"] == {"component": MANAGER}
        assert event["deprecatedCount"] == 1
        assert event["eventTime"] is None
        assert "action" not in event
    assert by_reason["InvalidSpec"]["note"] == f"spec is invalid: {INVALID_MESSAGE}"
    assert by_reason["InvalidSpec"]["type"] == "Warning"
    created = audit.writes_by(namespace, writer.user, "events")
    assert [(e.verb, e.code) for e in created] == [("create", 201)] * 2


# -- watch expiry and API-server restarts --------------------------------------------------


def test_a_watch_expired_by_a_real_etcd_compaction_relists_and_converges(
    control_plane: ControlPlane, namespace: str, stores: Stores, writers: Writers, audit: Audit
) -> None:
    for name in ("kept", "changed", "deleted"):
        stores.create(name, VALID)
    writer = writers.start("a")
    stores.wait_current("kept", "changed", "deleted")
    listed_at = writer.wait_log("listed")[-1]["resourceVersion"]

    # The writer misses everything from here (a paused process), while the cluster moves on,
    # etcd is compacted past the writer's resourceVersion, and kube-apiserver restarts (so
    # its watch cache, too, starts after it). Killed rather than stopped: a graceful stop
    # waits for open watches (the paused writer's) until the harness kills it after 30 s.
    writer.signal(signal.SIGSTOP)
    try:
        stores.set_spec("changed", TWO_SCORES)
        stores.create("added", VALID)
        stores.delete("deleted")
        revision = control_plane.compact_etcd()
        assert revision > int(listed_at)
        control_plane.apiserver.stop(signal.SIGKILL)
        control_plane.start_apiserver()

        # The compaction is real: the past is gone from etcd itself. A kube-apiserver just
        # restarted may first answer 429 (its storage for the resource still starting, with a
        # Retry-After), as a client-go reflector would see it: asked again until it answers.
        def exact_list_refused() -> int:
            with pytest.raises(k8s.ApiException) as refused:
                stores.api.list_namespaced_custom_object(
                    "agents.ctxmesh.ai",
                    "v1beta1",
                    namespace,
                    "feedbackstores",
                    resource_version=listed_at,
                    resource_version_match="Exact",
                )
            status = int(refused.value.status)
            assert status != 429, "kube-apiserver still starting"
            return status

        assert eventually(exact_list_refused, what="an answer other than 429") == 410
    finally:
        if not control_plane.apiserver.running():
            control_plane.start_apiserver()
        writer.signal(signal.SIGCONT)

    writer.wait_log("resourceVersion expired (410 Gone); relisting", timeout=60)
    stores.wait_current("kept", "changed", "added", timeout=60)
    assert writer.wait_log("listed", count=2)[-1]["objects"] == 3
    settle(1.0)
    audit.flush(namespace)
    names = [p.name for p in audit.status_writes(namespace, writer.user)]
    # One write each before; after the relist only what changed: no rewrite of "kept".
    assert sorted(names) == ["added", "changed", "changed", "deleted", "kept"]
    assert writer.metric("feedbackstore_status_watch_restarts_total", reason="gone") >= 1
    assert writer.metric("feedbackstore_status_objects") == 3


def test_an_api_server_restart_mid_run_is_survived_without_rewrites(
    control_plane: ControlPlane, namespace: str, stores: Stores, writers: Writers, audit: Audit
) -> None:
    create_unguarded(control_plane, namespace, {"bad": INVALID})
    stores.create("good", VALID)
    writer = writers.start("a")
    stores.wait_current("bad", "good")
    try:
        # SIGTERM: kube-apiserver stops listening at once, but serves open watches (the
        # writer's) until its shutdown ends, which the harness waits 30 s for; like a kubelet
        # with a 5 s grace period, this kills it after 5 s.
        control_plane.apiserver.stop(signal.SIGTERM, timeout=5.0)
        writer.wait_log("list/watch failed")
        writer.wait_log("stopped leading")
    finally:
        if not control_plane.apiserver.running():
            control_plane.start_apiserver()
    stores.set_spec("bad", VALID)
    stores.wait_condition("bad", lambda c: coherent(c) and at_generation(2)(c), timeout=60)
    writer.wait_log("started leading", count=2, timeout=30)
    # The new watch cache starts at etcd's revision of the restart, past the writer's
    # resourceVersion (its own Lease renewals alone moved it): the re-watch is 410, a relist.
    writer.wait_log("resourceVersion expired (410 Gone); relisting")
    assert writer.wait_log("listed", count=2)[-1]["objects"] == 2
    settle(1.0)
    audit.flush(namespace)
    names = [p.name for p in audit.status_writes(namespace, writer.user)]
    assert sorted(names) == ["bad", "bad", "good"]
    assert writer.metric("feedbackstore_status_watch_restarts_total", reason="error") >= 1
    assert writer.process.poll() is None


def test_a_paused_leader_writes_what_it_skipped_once_it_renews(
    namespace: str, stores: Stores, writers: Writers, audit: Audit
) -> None:
    """A leader paused past its renew deadline (GC, a frozen node, SIGSTOP) skips, as a
    standby, the events it finds on resuming; renewing the Lease afterwards is a new
    leadership, whose resync writes them (not the periodic resync, 30 s here)."""
    stores.create("store", VALID)
    writer = writers.start("a")
    stores.wait_current("store")
    writer.signal(signal.SIGSTOP)
    try:
        stores.set_spec("store", TWO_SCORES)
        time.sleep(RENEW_DEADLINE + 0.5)
    finally:
        writer.signal(signal.SIGCONT)
    stores.wait_condition("store", at_generation(2))
    assert writer.messages("stopped leading")[0]["why"] == "renewal deadline passed"
    assert len(writer.messages("started leading")) == 2
    audit.flush(namespace)
    assert len(audit.status_writes(namespace, writer.user)) == 2
