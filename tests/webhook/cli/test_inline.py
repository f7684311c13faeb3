"""`validate` on the inline form (a FeedbackStore's spec declared in place): an AgentDeployment's
`spec.feedback` is checked as a FeedbackStore is, through the installed console script, in every
output format and with `--previous`; an AgentDeployment without it is skipped like any other
kind."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.docs.pages import section as docs_section
from tests.support.rules_builders import channel, feedbackstore, human, score
from tests.webhook.cli.test_validate import as_json, run, write_yaml


def agent(feedback: object, name: str = "support-agent", version: str = "v1beta1") -> dict:
    """An AgentDeployment manifest; `feedback` None leaves `spec.feedback` out."""
    spec: dict[str, Any] = {"image": "ghcr.io/ctxmesh/support-agent:1.4", "replicas": 2}
    if feedback is not None:
        spec["feedback"] = feedback
    return {
        "apiVersion": f"agents.ctxmesh.ai/{version}",
        "kind": "AgentDeployment",
        "metadata": {"name": name, "namespace": "agents"},
        "spec": spec,
    }


TWICE = human(score("thumbs"), score("thumbs"))
VALID = {**human(score("thumbs", dataType="BOOLEAN")), "external": [channel()]}
DUPLICATE = (
    'spec.feedback.human.scores[1].name: Duplicate value: "thumbs": human score names must be '
    "unique (first declared at spec.feedback.human.scores[0].name)"
)


def test_an_agents_feedback_is_reported_at_its_line_and_column_under_spec_feedback(
    tmp_path: Path,
) -> None:
    path = write_yaml(tmp_path / "agent.yaml", agent(TWICE))
    result = run(str(path))
    assert (result.returncode, result.stderr) == (1, "")
    assert result.stdout.splitlines() == [
        f"{path}:13:15: agents/support-agent: {DUPLICATE}",
        "1 AgentDeployment checked, 1 invalid, 0 other documents skipped",
    ]


@pytest.mark.parametrize("version", ["v1alpha1", "v1beta1"])
def test_both_served_versions_are_checked(tmp_path: Path, version: str) -> None:
    result = run(str(write_yaml(tmp_path / "a.yaml", agent(VALID, version=version))))
    assert (result.returncode, result.stdout.splitlines()[-1]) == (
        0,
        "1 AgentDeployment checked, 0 invalid, 0 other documents skipped",
    )


def test_an_agent_of_a_version_the_platform_does_not_serve_is_told_which_it_does(
    tmp_path: Path,
) -> None:
    result = run(str(write_yaml(tmp_path / "a.yaml", agent(VALID, version="v1"))))
    assert result.returncode == 1
    assert result.stdout.splitlines()[0].endswith(
        'apiVersion: Unsupported value: "agents.ctxmesh.ai/v1": supported values: '
        '"agents.ctxmesh.ai/v1alpha1", "agents.ctxmesh.ai/v1beta1"'
    )


def test_stores_and_agents_are_counted_apart_and_an_agent_without_feedback_is_skipped(
    tmp_path: Path,
) -> None:
    docs = (feedbackstore(VALID), agent(VALID), agent(None, "plain-agent"), agent(VALID, "b"))
    result = run(str(write_yaml(tmp_path / "mixed.yaml", *docs)))
    assert (result.returncode, result.stdout.splitlines()) == (
        0,
        ["1 FeedbackStore and 2 AgentDeployments checked, 0 invalid, 1 other document skipped"],
    )


def test_the_agents_warnings_are_said_under_spec_feedback(tmp_path: Path) -> None:
    path = write_yaml(tmp_path / "a.yaml", agent({**VALID, "mode": "Monitor"}))
    result = run(str(path))
    assert result.returncode == 0
    assert result.stdout.splitlines()[0] == (
        f"{path}:18:11: agents/support-agent: spec.feedback.mode: warning: Monitor relays "
        "undeclared score names instead of rejecting them (422); use only to migrate"
    )


def test_in_json_a_result_names_its_kind(tmp_path: Path) -> None:
    path = write_yaml(tmp_path / "a.yaml", feedbackstore(VALID), agent(TWICE))
    body = as_json(run(str(path), "-o", "json"))
    assert (body["checked"], body["invalid"]) == (2, 1)
    assert [r["kind"] for r in body["results"]] == ["FeedbackStore", "AgentDeployment"]
    (problem,) = body["results"][1]["problems"]
    assert (problem["field"], problem["line"], problem["column"]) == (
        "spec.feedback.human.scores[1].name",
        28,
        15,
    )


def test_github_junit_and_sarif_name_the_agent(tmp_path: Path) -> None:
    path = write_yaml(tmp_path / "a.yaml", agent(TWICE))
    github = run(str(path), "-o", "github").stdout.splitlines()[0]
    assert github.startswith(
        f"::error file={path},line=13,col=15,title=AgentDeployment agents/support-agent%3A "
        "FieldValueDuplicate::agents/support-agent: spec.feedback.human.scores[1].name"
    )
    junit = ET.fromstring(run(str(path), "-o", "junit").stdout)
    failure = junit.find("testsuite/testcase/failure")
    assert failure is not None
    assert failure.get("type") == "AgentDeploymentInvalid"
    assert failure.text == f"{path}:13:15: {DUPLICATE}"
    sarif = json.loads(run(str(path), "-o", "sarif").stdout)
    (found,) = sarif["runs"][0]["results"]
    assert found["message"]["text"] == f"agents/support-agent: {DUPLICATE}"
    assert found["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 13,
        "startColumn": 15,
    }


def test_previous_says_what_an_agents_feedback_change_does_at_the_new_value(
    tmp_path: Path,
) -> None:
    renamed = {**human(score("thumbs-up", dataType="BOOLEAN")), "external": [channel()]}
    new = write_yaml(tmp_path / "new.yaml", agent(renamed))
    old = write_yaml(tmp_path / "old.yaml", agent(VALID))
    result = run(str(new), "--previous", str(old))
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines() == [
        f"{new}:12:15: agents/support-agent: spec.feedback.human.scores[0].name: warning: "
        'score "thumbs" renamed to "thumbs-up" in human: the gateway rejects "thumbs" (422) '
        "from now on",
        "1 AgentDeployment checked, 0 invalid, 0 other documents skipped",
    ]
    github = run(str(new), "--previous", str(old), "-o", "github").stdout.splitlines()[0]
    assert "title=AgentDeployment agents/support-agent%3A SpecChange" in github


def test_previous_matches_by_kind_and_adding_feedback_or_dropping_an_agent_is_no_change(
    tmp_path: Path,
) -> None:
    """A store and an agent of one name are two things; an agent gone, or one that gains its
    first declaration, loses no score the webhook could warn of."""
    new = write_yaml(tmp_path / "new.yaml", feedbackstore(VALID, "support-agent"), agent(VALID))
    old = write_yaml(
        tmp_path / "old.yaml",
        feedbackstore(VALID, "support-agent"),
        agent(None),
        agent(TWICE, "retired-agent"),
    )
    result = run(str(new), "--previous", str(old))
    assert (result.returncode, result.stdout.splitlines()) == (
        0,
        ["1 FeedbackStore and 1 AgentDeployment checked, 0 invalid, 0 other documents skipped"],
    )


def test_the_docs_show_what_validate_prints_for_the_inline_examples() -> None:
    root = Path(__file__).resolve().parents[3]
    section = docs_section("validate.md", "## Offline: `validate` on agents")
    command = "$ feedbackstore-webhook validate examples/inline/\n"
    block = section[section.index(command) + len(command) : section.index("```\n", 1)]
    result = run("examples/inline/", cwd=root)
    assert result.returncode == 1
    assert result.stdout == block


def test_an_agent_without_a_name_is_told_as_kube_apiserver_tells_it(tmp_path: Path) -> None:
    nameless = agent(VALID)
    del nameless["metadata"]["name"]
    result = run(str(write_yaml(tmp_path / "a.yaml", nameless)))
    assert result.returncode == 1
    assert result.stdout.splitlines()[0].endswith(
        "metadata.name: Required value: name or generateName is required"
    )
