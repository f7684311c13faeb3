"""GitOps health of FeedbackStores as the real tools compute it.

Each case makes a store on the real kube-apiserver, runs the status writer (the console
script) as far as the case needs, reads the object back, and hands it to the tools' own
code (tests/support/gitops_tool.py): kstatus' `status.Compute` from sigs.k8s.io/cli-utils and
from Flux's fork, and the shipped Argo CD health.lua on gopher-lua.

The objects read back are Argo CD's testdata (argocd/.../FeedbackStore/testdata): each
case checks that the shipped file is still what the server and the writer make, up to
what differs on every run (uids, resourceVersions, timestamps, the namespace), and that
health.lua gives the object what health_test.yaml says. tests/gitops/regenerate.sh runs
this module with FEEDBACKSTORE_WRITE_ARGOCD_TESTDATA=1, which writes the files instead.

What kstatus cannot see, said as it is: it reads no condition's observedGeneration and
takes an object without conditions as Current, so a store with no verdict yet is Current
and one whose verdict is for an older spec keeps that verdict's status; only a top-level
`status.observedGeneration` would say otherwise, and the platform's operator drops it on
each of its status updates (docs/gitops-health.md).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import pytest
import yaml
from kubernetes import client as k8s

from tests.kube.cluster import (
    eventually,
    install_crd,
    new_namespace,
    shipped_crd,
)
from tests.kube.controlplane import ControlPlane
from tests.kube.inuse_support import Agents, agent_crd_installed
from tests.kube.platform_reconciler import PlatformProcess, first_problem, install_identity
from tests.kube.status_writer_support import (  # noqa: F401 (fixtures)
    INVALID,
    INVALID_MESSAGE,
    VALID,
    Stores,
    Writers,
    _stores,
    _writers,
    condition_of,
    create_unguarded,
)
from tests.support.gitops_tool import ARGOCD, GitopsTool, Health, _gitops_tool  # noqa: F401 (fixture)

pytestmark = [pytest.mark.kube, pytest.mark.xdist_group("kube")]

WRITE_ENV = "FEEDBACKSTORE_WRITE_ARGOCD_TESTDATA"
TESTDATA_NAMESPACE = "agents"
HEADER = (
    "# Read from the real kube-apiserver as a case of tests/kube/test_gitops_health_real.py\n"
    "# left it (the status writer run as far as the case needs); tests/gitops/regenerate.sh\n"
    "# writes it anew.\n"
    "# managedFields left out; the namespace is the test's, renamed.\n"
)
CURRENT = Health("Current", "Resource is current")
TERMINATING = Health("Terminating", "Resource scheduled for deletion")


@pytest.fixture(scope="module", autouse=True)
def crds(control_plane: ControlPlane) -> Iterator[None]:
    install_crd(control_plane, shipped_crd())
    with agent_crd_installed(control_plane):
        yield


@pytest.fixture
def namespace(control_plane: ControlPlane) -> str:
    return new_namespace(control_plane, "gitops")


# -- the cases: each makes its store and returns it as the server has it ----------------


def judged(obj: dict[str, Any]) -> bool:
    """The writer is done with the store: its Stalled is for the current generation and its InUse
    is written. The writer judges a store before its watch of AgentDeployments has synced and
    writes InUse only once it has (until then it cannot know who uses the store), in a second
    apply; Stalled alone would catch the object between the two."""
    stalled = condition_of(obj, "Stalled") or {}
    current = stalled.get("observedGeneration") == obj["metadata"]["generation"]
    return current and condition_of(obj, "InUse") is not None


def judged_by_the_writer(stores: Stores, name: str) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        obj = stores.get(name)
        return obj if judged(obj) else None

    found: dict[str, Any] = eventually(check, what=f"{name}: Stalled for its generation, InUse")
    return found


def valid(stores: Stores, writers: Writers, plane: ControlPlane) -> dict[str, Any]:
    stores.create("sales-feedback", VALID)
    writers.start("gitops")
    return judged_by_the_writer(stores, "sales-feedback")


def invalid(stores: Stores, writers: Writers, plane: ControlPlane) -> dict[str, Any]:
    create_unguarded(plane, stores.namespace, {"support-feedback": INVALID})
    writers.start("gitops")
    return judged_by_the_writer(stores, "support-feedback")


def no_verdict_yet(stores: Stores, writers: Writers, plane: ControlPlane) -> dict[str, Any]:
    """Created with no writer running: what a GitOps tool sees right after applying it."""
    return stores.create("new-feedback", VALID)


def older_generation(stores: Stores, writers: Writers, plane: ControlPlane) -> dict[str, Any]:
    """An invalid store fixed while the writer is down: its verdict is for generation 1."""
    create_unguarded(plane, stores.namespace, {"support-feedback": INVALID})
    writer = writers.start("gitops")
    judged_by_the_writer(stores, "support-feedback")
    assert writer.stop() == 0
    fixed = stores.set_spec("support-feedback", VALID)
    assert fixed["metadata"]["generation"] == 2
    return fixed


def terminating_in_use(stores: Stores, writers: Writers, plane: ControlPlane) -> dict[str, Any]:
    """Deleted while an agent names it: held by the writer's finalizer, InUse says by whom."""
    agents = Agents(plane, stores.namespace)
    stores.create("billing-feedback", VALID)
    agents.create("billing-agent", "billing-feedback")
    writers.start("gitops")
    eventually(
        lambda: (stores.condition("billing-feedback", "InUse") or {}).get("status") == "True",
        what="InUse True",
    )
    stores.delete("billing-feedback")

    def deferred() -> dict[str, Any] | None:
        obj = stores.get("billing-feedback")
        reason = (condition_of(obj, "InUse") or {}).get("reason")
        return obj if reason == "DeletionDeferred" else None

    found: dict[str, Any] = eventually(deferred, what="InUse DeletionDeferred")
    agents.delete("billing-agent")  # then the writer lets it go (checked: the test's cleanup)
    eventually(lambda: _gone(stores, "billing-feedback"), what="store deleted once unused")
    return found


def validated_by_the_platform(
    stores: Stores, writers: Writers, plane: ControlPlane
) -> dict[str, Any]:
    """Beside the platform's operator (its stand-in, tests/kube/platform_reconciler.py): it
    writes Validated with its first problem in its own words, the writer leaves Validated to
    it and keeps every problem in Stalled."""
    create_unguarded(plane, stores.namespace, {"platform-feedback": INVALID})
    log = writers.workdir / "platform.log"
    platform = PlatformProcess(install_identity(plane), stores.namespace, log)

    def settled() -> dict[str, Any] | None:
        obj = stores.get("platform-feedback")
        validated = condition_of(obj, "Validated") or {}
        theirs = validated.get("message") == first_problem(obj["spec"])
        return obj if judged(obj) and theirs else None

    try:
        writers.start("gitops")
        found: dict[str, Any] = eventually(settled, timeout=60, what="both sides settled")
    finally:
        platform.kill()
    return found


def _gone(stores: Stores, name: str) -> bool:
    try:
        stores.get(name)
    except k8s.ApiException as error:
        return error.status == 404
    return False


class Case(NamedTuple):
    testdata: str  # file under testdata/, named in health_test.yaml
    make: Callable[[Stores, Writers, ControlPlane], dict[str, Any]]
    kstatus: Callable[[dict[str, Any]], Health]  # what both kstatus forks compute


def stalled_message(status: str) -> Callable[[dict[str, Any]], Health]:
    return lambda obj: Health(status, (condition_of(obj, "Stalled") or {})["message"])


CASES = {
    "a valid store is Current and Healthy": Case("valid.yaml", valid, lambda _: CURRENT),
    "an invalid store is Failed with every problem and Degraded": Case(
        "invalid.yaml", invalid, stalled_message("Failed")
    ),
    "a store with no verdict yet is Progressing, and Current to kstatus": Case(
        "no-verdict.yaml", no_verdict_yet, lambda _: CURRENT
    ),
    "a verdict for an older spec is Progressing, and still that verdict to kstatus": Case(
        "older-generation.yaml", older_generation, stalled_message("Failed")
    ),
    "a store deleted in use is Terminating and Progressing naming its agents": Case(
        "terminating-in-use.yaml", terminating_in_use, lambda _: TERMINATING
    ),
    "a store the platform validated first is Failed and Degraded with every problem": Case(
        "platform-validated.yaml", validated_by_the_platform, stalled_message("Failed")
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_health_as_the_gitops_tools_compute_it(
    case: Case,
    stores: Stores,
    writers: Writers,
    control_plane: ControlPlane,
    gitops_tool: GitopsTool,
) -> None:
    obj = case.make(stores, writers, control_plane)
    verdicts = gitops_tool.compute([obj])[0]
    assert verdicts.kstatus == case.kstatus(obj)
    assert verdicts.flux == verdicts.kstatus
    assert verdicts.argocd == expected_argocd_health(case.testdata)
    path = ARGOCD / "testdata" / case.testdata
    if os.environ.get(WRITE_ENV) == "1":
        path.write_text(
            HEADER + yaml.safe_dump(as_testdata(obj), sort_keys=False, allow_unicode=True),
            encoding="utf-8",
        )
    shipped = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert comparable(shipped) == comparable(obj), f"{path} is not what the server made now"


def test_problems_reach_the_gitops_tools_in_full(
    stores: Stores, writers: Writers, control_plane: ControlPlane, gitops_tool: GitopsTool
) -> None:
    """kstatus' message and Argo CD's are the writer's Stalled message: every problem."""
    obj = invalid(stores, writers, control_plane)
    verdicts = gitops_tool.compute([obj])[0]
    assert INVALID_MESSAGE in verdicts.kstatus.message
    assert INVALID_MESSAGE in verdicts.argocd.message
    assert verdicts.argocd.status == "Degraded"


def test_every_testdata_file_is_made_by_a_case_and_named_in_health_test_yaml() -> None:
    cases = yaml.safe_load((ARGOCD / "health_test.yaml").read_text(encoding="utf-8"))["tests"]
    named = sorted(case["inputPath"] for case in cases)
    made = sorted(f"testdata/{case.testdata}" for case in CASES.values())
    on_disk = sorted(f"testdata/{p.name}" for p in (ARGOCD / "testdata").glob("*.yaml"))
    assert named == made == on_disk


def expected_argocd_health(testdata: str) -> Health:
    cases = yaml.safe_load((ARGOCD / "health_test.yaml").read_text(encoding="utf-8"))["tests"]
    wanted = next(c["healthStatus"] for c in cases if c["inputPath"] == f"testdata/{testdata}")
    return Health(wanted["status"], wanted.get("message", ""))


# -- testdata: the object as read, and what is compared ---------------------------------

VOLATILE_METADATA = ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp")


def as_testdata(obj: dict[str, Any]) -> dict[str, Any]:
    kept = copy.deepcopy(obj)
    kept["metadata"].pop("managedFields", None)
    kept["metadata"]["namespace"] = TESTDATA_NAMESPACE
    return kept


def comparable(obj: dict[str, Any]) -> dict[str, Any]:
    """The object with what differs on every run replaced by a mark of its presence."""
    kept = as_testdata(obj)
    for key in VOLATILE_METADATA:
        if key in kept["metadata"]:
            kept["metadata"][key] = "<volatile>"
    for condition in (kept.get("status") or {}).get("conditions") or []:
        condition["lastTransitionTime"] = "<volatile>"
    return kept
