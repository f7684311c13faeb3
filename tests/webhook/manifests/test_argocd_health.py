"""The shipped Argo CD health.lua for FeedbackStores, on gopher-lua, the Lua interpreter Argo CD
runs it on.

Argo CD's own test of a resource customization, run by tests/gitops's gitops-health as
Argo CD's TestLuaHealthScript does: each health_test.yaml case, its testdata object (read
from the real kube-apiserver: tests/kube/test_gitops_health_real.py keeps them so), the
script's {status, message} compared whole. Then the script's other branches on objects
made here, and the argocd-cm snippet of docs/gitops-health.md, which must be the script itself.
"""

from __future__ import annotations

import copy
import json
import pathlib
import re
import shutil
from typing import Any

import pytest
import yaml

from tests.docs.pages import page
from tests.support.gitops_tool import (  # noqa: F401 (fixture)
    ARGOCD,
    HEALTH_LUA,
    REPO,
    GitopsTool,
    Health,
    _gitops_tool,
)


def test_every_health_test_yaml_case_passes_on_gopher_lua(gitops_tool: GitopsTool) -> None:
    result = gitops_tool.argocd_test(ARGOCD)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["got"] == line["want"] for line in lines] == [True] * len(lines)
    statuses = {line["got"]["status"] for line in lines}
    assert statuses == {"Healthy", "Degraded", "Progressing"}


def test_a_case_whose_health_differs_fails(gitops_tool: GitopsTool, tmp_path: pathlib.Path) -> None:
    """The harness can fail: one expectation changed, exit 1 and that case shown."""
    copy = tmp_path / "FeedbackStore"
    shutil.copytree(ARGOCD, copy)
    cases = yaml.safe_load((copy / "health_test.yaml").read_text(encoding="utf-8"))
    cases["tests"][0]["healthStatus"]["status"] = "Degraded"
    (copy / "health_test.yaml").write_text(yaml.safe_dump(cases), encoding="utf-8")
    result = gitops_tool.argocd_test(copy)
    assert result.returncode == 1
    assert "1 of" in result.stderr


def store(generation: int = 1, **status: Any) -> dict[str, Any]:
    conditions = [{"type": kind, **fields} for kind, fields in status.items()]
    return {
        "apiVersion": "agents.ctxmesh.ai/v1beta1",
        "kind": "FeedbackStore",
        "metadata": {"name": "support-feedback", "namespace": "agents", "generation": generation},
        "status": {"conditions": conditions},
    }


COHERENT = {
    "status": "True",
    "reason": "SpecCoherent",
    "message": "coherent",
    "observedGeneration": 2,
}
FIRST_PROBLEM = {
    "status": "False",
    "reason": "InvalidSpec",
    "message": "first problem",
    "observedGeneration": 2,
}
STALLED_FALSE = {
    "status": "False",
    "reason": "SpecCoherent",
    "message": "coherent",
    "observedGeneration": 2,
}
OLD_STALLED = {**STALLED_FALSE, "observedGeneration": 1}
DELETING = {"deletionTimestamp": "2026-12-01T10:05:55Z", "finalizers": ["x"]}

BRANCHES = {
    "the platform's coherent Validated alone is Healthy": (
        store(2, Validated=COHERENT),
        Health("Healthy", "coherent"),
    ),
    "the platform's invalid Validated alone is Degraded with its message": (
        store(2, Validated=FIRST_PROBLEM),
        Health("Degraded", "first problem"),
    ),
    "a problem the platform found for this spec is Degraded while Stalled is older": (
        store(2, Stalled=OLD_STALLED, Validated=FIRST_PROBLEM),
        Health("Degraded", "first problem"),
    ),
    "a coherent Validated does not outvote an older Stalled": (
        store(2, Stalled=OLD_STALLED, Validated=COHERENT),
        Health(
            "Progressing",
            "verdict for generation 1, spec is generation 2: waiting for the status writer",
        ),
    ),
    "Stalled for this spec wins over the platform's Validated": (
        store(2, Stalled=STALLED_FALSE, Validated=FIRST_PROBLEM),
        Health("Healthy", "coherent"),
    ),
    "a condition without observedGeneration counts for the current spec": (
        store(2, Validated={"status": "False", "reason": "InvalidSpec", "message": "m"}),
        Health("Degraded", "m"),
    ),
    "an object with no status at all waits for a verdict": (
        {k: v for k, v in store().items() if k != "status"},
        Health("Progressing", "no verdict yet: waiting for the status writer"),
    ),
    "a store deleted while not in use is pending deletion, as Argo CD says it": (
        store(2, Stalled=STALLED_FALSE) | {"metadata": {**store()["metadata"], **DELETING}},
        Health("Progressing", "Pending deletion"),
    ),
}


@pytest.mark.parametrize(("obj", "health"), BRANCHES.values(), ids=BRANCHES.keys())
def test_health_lua_branches(obj: dict[str, Any], health: Health, gitops_tool: GitopsTool) -> None:
    assert gitops_tool.compute([obj])[0].argocd == health


def test_the_docs_argocd_cm_snippet_is_the_shipped_health_lua() -> None:
    readme = page("gitops-health.md").read_text(encoding="utf-8")
    key = "resource.customizations.health.agents.ctxmesh.ai_FeedbackStore: |\n"
    block = re.search(re.escape(key) + r"((?:    .*\n|\n)+)", readme)
    assert block is not None, "docs/gitops-health.md has no argocd-cm snippet"
    snippet = "\n".join(line.removeprefix("    ") for line in block.group(1).split("\n"))
    assert snippet.rstrip("\n") == HEALTH_LUA.read_text(encoding="utf-8").rstrip("\n")


def test_the_docs_table_is_what_the_tools_say_of_the_testdata(gitops_tool: GitopsTool) -> None:
    section = page("gitops-health.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(testdata/[^`]+)` \| (.*) \|$", section, flags=re.MULTILINE)
    cases = yaml.safe_load((ARGOCD / "health_test.yaml").read_text(encoding="utf-8"))["tests"]
    assert [path for path, _ in rows] == [case["inputPath"] for case in cases]
    objects = [yaml.safe_load((ARGOCD / path).read_text(encoding="utf-8")) for path, _ in rows]
    said = [
        " | ".join(f"**{h.status}**: {h.message}" for h in verdicts)
        for verdicts in gitops_tool.compute(objects)
    ]
    assert [cells for _, cells in rows] == said


def test_kstatus_reads_stalled_and_not_validated(gitops_tool: GitopsTool) -> None:
    """Why the writer keeps `Stalled`: the shipped invalid store without it is Current to both
    kstatus forks (Validated=False means nothing to them), and Failed with it."""
    obj = yaml.safe_load((ARGOCD / "testdata" / "invalid.yaml").read_text(encoding="utf-8"))
    without = copy.deepcopy(obj)
    without["status"]["conditions"] = [
        c for c in without["status"]["conditions"] if c["type"] != "Stalled"
    ]
    before, after = gitops_tool.compute([without, obj])
    assert before.kstatus == before.flux == Health("Current", "Resource is current")
    assert after.kstatus.status == after.flux.status == "Failed"
