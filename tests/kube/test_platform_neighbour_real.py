"""The status writer beside the platform's own FeedbackStore reconciler, on the real server.

The platform's reconciler (tests/kube/platform_reconciler.py, a stand-in with its own
ServiceAccount, RBAC and field manager `ctxmesh-operator`) writes `Validated` with its first
problem on every change of a store; our writer names every problem. Both run here on four
stores at once: a valid one, an invalid one with one problem, one with several, and one an
AgentDeployment uses. After the first seconds neither may write again while nothing changes:
counted in kube-apiserver's audit log (and by resourceVersions) over one 40-second window for
all four. `Validated` then says the platform's words with the status our verdict has, every
problem of ours is in `Stalled`, and `InUse` and our finalizer survived the platform's UPDATEs.
"""

from __future__ import annotations

import contextlib
import io
import json
import pathlib
import shlex
import time
from collections import Counter
from typing import Any

import pytest

from tests.kube.cluster import install_crd, new_namespace, shipped_crd
from tests.kube.controlplane import ControlPlane
from tests.kube.inuse_support import FINALIZER, Agents, agent_crd_installed
from tests.kube.platform_reconciler import USER, PlatformProcess, install_identity
from tests.kube.status_writer_support import (  # noqa: F401 (fixtures)
    INVALID_MESSAGE,
    MANAGER,
    Audit,
    Stores,
    Writers,
    _audit,
    _stores,
    _writers,
    condition_of,
    create_unguarded,
    eventually,
)
from tests.support.stores import VALID
from webhook.cli.main import main

pytestmark = [pytest.mark.kube, pytest.mark.xdist_group("kube")]

YIELDED = "Validated left to another field manager; every problem stays in Stalled"
# Long enough to see any loop of either side: each write of one is the other's next change.
WINDOW_SECONDS = 40.0
# A write before this much quiet is still part of the first seconds.
QUIET_SECONDS = 3.0
COHERENT = "feedback store spec is coherent"
PLATFORM_DUPLICATE = (
    'score name "thumbs" is declared by both human and human — names must be unique across the '
    "whole store (they are the source-attribution key)"
)
SEVERAL: dict[str, Any] = {
    "human": {"scores": [{"name": "thumbs"}, {"name": "stars"}, {"name": "thumbs"}]},
    "external": [
        {"name": "csat-webhook", "score": {"name": "csat"}},
        {"name": "csat-webhook", "score": {"name": "stars"}},
    ],
}
SEVERAL_MESSAGE = (
    'spec.human.scores[2].name: Duplicate value: "thumbs": human score names must be unique '
    "(first declared at spec.human.scores[0].name); spec.external[1].name: Duplicate value: "
    '"csat-webhook": external channel names must be unique (first declared at '
    'spec.external[0].name); spec.external[1].score.name: Duplicate value: "stars": a score '
    "name is declared by both human and an external channel; score names must be unique across "
    "all sources (first declared at spec.human.scores[1].name)"
)
ONE_PROBLEM: dict[str, Any] = {"human": {"scores": [{"name": "thumbs"}, {"name": "thumbs"}]}}

# name: (spec, Validated's status and the platform's message, our Stalled status and message)
CASES: dict[str, tuple[dict[str, Any], tuple[str, str], tuple[str, str]]] = {
    "valid": (VALID, ("True", COHERENT), ("False", COHERENT)),
    "one-problem": (ONE_PROBLEM, ("False", PLATFORM_DUPLICATE), ("True", INVALID_MESSAGE)),
    "several": (SEVERAL, ("False", PLATFORM_DUPLICATE), ("True", SEVERAL_MESSAGE)),
    "in-use": (VALID, ("True", COHERENT), ("False", COHERENT)),
}


@pytest.fixture(scope="module", autouse=True)
def shipped(control_plane: ControlPlane) -> None:
    install_crd(control_plane, shipped_crd())


@pytest.fixture
def namespace(control_plane: ControlPlane) -> str:
    return new_namespace(control_plane, "nb")


def settled(stores: Stores, name: str) -> dict[str, Any] | None:
    """The store once both sides' conditions say what they should (None before)."""
    _, (status, message), (stalled_status, stalled_message) = CASES[name]
    obj = stores.get(name)
    validated, stalled = condition_of(obj), condition_of(obj, "Stalled")
    if validated is None or stalled is None:
        return None
    if (validated["status"], validated["message"]) != (status, message):
        return None
    if (stalled["status"], stalled["message"], stalled.get("observedGeneration")) != (
        stalled_status,
        stalled_message,
        1,
    ):
        return None
    return obj


def quiet(stores: Stores, names: list[str], seconds: float, timeout: float) -> dict[str, str]:
    """Wait until no store's resourceVersion moved for `seconds`; their versions then."""
    deadline = time.monotonic() + timeout
    versions = {n: stores.get(n)["metadata"]["resourceVersion"] for n in names}
    since = time.monotonic()
    while time.monotonic() - since < seconds:
        assert time.monotonic() < deadline, f"still being written after {timeout} s: {versions}"
        time.sleep(0.25)
        now = {n: stores.get(n)["metadata"]["resourceVersion"] for n in names}
        if now != versions:
            versions, since = now, time.monotonic()
    return versions


def writes(audit: Audit, namespace: str, user: str) -> Counter[str]:
    """Every request of `user` that could change a store (status or main resource), by store."""
    return Counter(
        e.name
        for e in audit.events(namespace)
        if e.user == user and e.resource == "feedbackstores" and e.verb in ("update", "patch")
    )


# The window, after up to a minute each for the stores to settle and to fall quiet: on a loaded
# machine that is more than the suite's two minutes per test.
@pytest.mark.timeout(WINDOW_SECONDS + 2 * 60 + 120)
def test_beside_the_platforms_reconciler_both_fall_quiet_and_every_problem_stays_visible(
    control_plane: ControlPlane,
    namespace: str,
    stores: Stores,
    writers: Writers,
    audit: Audit,
    tmp_path: pathlib.Path,
) -> None:
    names = list(CASES)
    with agent_crd_installed(control_plane):
        Agents(control_plane, namespace).create("support-agent", "in-use")
        invalid = ("one-problem", "several")
        create_unguarded(control_plane, namespace, {n: CASES[n][0] for n in invalid})
        for name in ("valid", "in-use"):
            stores.create(name, CASES[name][0])
        platform = PlatformProcess(
            install_identity(control_plane), namespace, tmp_path / "platform.log"
        )
        try:
            writer = writers.start("a")
            for name in names:
                eventually(lambda n=name: settled(stores, n), timeout=60, what=f"{name} settled")
            versions = quiet(stores, names, QUIET_SECONDS, timeout=60)
            audit.flush(namespace)
            ours_before = writes(audit, namespace, writer.user)
            theirs_before = writes(audit, namespace, USER)

            time.sleep(WINDOW_SECONDS)

            audit.flush(namespace)
            ours_after = writes(audit, namespace, writer.user)
            theirs_after = writes(audit, namespace, USER)
            final = {name: stores.get(name) for name in names}
            assert platform.process.poll() is None, "the platform's reconciler exited"
        finally:
            platform.kill()

    # Nothing written by either side through the whole window, and nothing changed.
    assert ours_after - ours_before == Counter(), "the status writer wrote in the window"
    assert theirs_after - theirs_before == Counter(), "the platform wrote in the window"
    assert {n: o["metadata"]["resourceVersion"] for n, o in final.items()} == versions

    # Both sides did write each store before: the platform's UPDATEs reached every one.
    assert set(theirs_before) == set(names), theirs_before
    assert set(ours_before) == set(names), ours_before
    for name, obj in final.items():
        assert settled(stores, name) is not None, (name, obj["status"])
    # InUse and our finalizer went through the platform's full-status UPDATEs.
    in_use = final["in-use"]
    assert FINALIZER in in_use["metadata"]["finalizers"]
    condition = condition_of(in_use, "InUse")
    assert condition is not None
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "True",
        "Referenced",
        "in use by 1 AgentDeployment: support-agent",
    )
    # Where the platform's words differ from ours, the writer left Validated to it, said so
    # once per store, and counted it.
    said = writer.messages(
        "Validated left to another field manager; every problem stays in Stalled"
    )
    assert {(e["name"], e["manager"]) for e in said} >= {
        ("one-problem", "ctxmesh-operator"),
        ("several", "ctxmesh-operator"),
    }
    assert len(said) == len({e["name"] for e in said})
    yielded = writer.metric(
        "feedbackstore_status_validated_yielded_total", manager="ctxmesh-operator"
    )
    assert yielded == len(said)
    for name in ("one-problem", "several"):
        managers = {e["manager"] for e in final[name]["metadata"]["managedFields"]}
        assert {MANAGER, "ctxmesh-operator"} <= managers


def test_the_doctor_names_a_second_writer_of_validated_and_its_fix_hands_it_back(
    control_plane: ControlPlane, namespace: str, stores: Stores, writers: Writers
) -> None:
    create_unguarded(control_plane, namespace, {"legacy": ONE_PROBLEM})
    theirs = {
        "type": "Validated",
        "status": "True",
        "reason": "Checked",
        "message": "looked fine to me",
        "lastTransitionTime": "2026-01-02T03:04:05Z",
    }
    stores.apply_status("legacy", "legacy-controller", [theirs])
    writer = writers.start("a")
    writer.wait_log(YIELDED)

    check = doctor(control_plane, namespace)
    assert (check["status"], check["detail"]) == (
        "warn",
        f"Validated is also written by legacy-controller on 1 FeedbackStore ({namespace}/legacy):"
        " the status writer leaves it to them and keeps every problem in Stalled",
    )
    command = check["fix"].split("e.g. ", 1)[1]
    assert command.startswith(f"kubectl -n {namespace} patch fs legacy --subresource=status ")
    control_plane.kubectl(*shlex.split(command)[1:], check=True)

    # Nobody else owns any of it now: the writer writes its own, with every problem.
    obj = stores.wait_condition("legacy", lambda c: c["message"] == INVALID_MESSAGE)
    validated = condition_of(obj)
    assert validated is not None
    assert (validated["status"], validated["reason"]) == ("False", "InvalidSpec")
    writer.wait_log("Validated written again: no other field manager owns it")
    assert doctor(control_plane, namespace)["status"] == "ok"


def doctor(plane: ControlPlane, namespace: str) -> dict[str, str]:
    """The doctor's `validated-writers` check on the stores of `namespace` (`-o json`)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(
            [
                "doctor",
                "--kubeconfig",
                str(plane.kubeconfig),
                "--store-namespace",
                namespace,
                "-o",
                "json",
            ]
        )
    checks = {check["name"]: check for check in json.loads(out.getvalue())["checks"]}
    found: dict[str, str] = checks["validated-writers"]
    return found
