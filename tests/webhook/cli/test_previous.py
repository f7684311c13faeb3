"""`validate --previous PATH`: what a change does to the agents and dashboards that read a store,
the change-impact warnings before the cluster,
through the installed console script, on real files and stdin, with exact outputs and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.rules_builders import channel, feedbackstore, human, score
from tests.webhook.cli.test_validate import run, write_yaml

CSAT = {"external": [channel("csat-webhook", "csat")]}
OLD = feedbackstore({**human(score("thumbs", dataType="BOOLEAN"), score("tone")), **CSAT})
NEW = feedbackstore({**human(score("thumbs", dataType="NUMERIC")), **CSAT})
OTHER = feedbackstore(human(score("stars")), name="other")
SUMMARY = "1 FeedbackStore checked, 0 invalid, 0 other documents skipped"


def test_each_change_is_a_warning_at_the_new_manifest(tmp_path: Path) -> None:
    new = write_yaml(tmp_path / "new" / "store.yaml", NEW)
    old = write_yaml(tmp_path / "old" / "store.yaml", OLD)
    result = run(str(new), "--previous", str(old))
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines() == [
        f"{new}:10:17: agents/support-feedback: spec.human.scores[0].dataType: warning: "
        'score "thumbs" dataType BOOLEAN -> NUMERIC: the gateway checks no dataType; it reads '
        "as NUMERIC in Langfuse",
        f"{new}:9:5: agents/support-feedback: spec.human.scores: warning: "
        'score "tone" removed from human: the gateway rejects "tone" (422) from now on',
        SUMMARY,
    ]


@pytest.mark.parametrize(
    "order",
    [
        pytest.param(
            ("--previous", "OLD", "NEW"), id="the flag before the paths, as people type it"
        ),
        pytest.param(("NEW", "--previous", "OLD"), id="the flag after the paths"),
    ],
)
def test_previous_takes_one_path_before_or_after_the_paths(
    tmp_path: Path, order: tuple[str, ...]
) -> None:
    new = write_yaml(tmp_path / "new.yaml", NEW)
    old = write_yaml(tmp_path / "old.yaml", OLD)
    result = run(*(str({"OLD": old, "NEW": new}.get(arg, arg)) for arg in order))
    assert (result.returncode, result.stderr) == (0, "")
    assert [line.split(": ", 1)[0] for line in result.stdout.splitlines()] == [
        f"{new}:10:17",
        f"{new}:9:5",
        SUMMARY,
    ]


def test_previous_repeats_for_more_paths_and_takes_no_second_one(tmp_path: Path) -> None:
    new = write_yaml(tmp_path / "new.yaml", NEW, OTHER)
    old = write_yaml(tmp_path / "old.yaml", OLD)
    other = write_yaml(tmp_path / "other.yaml", feedbackstore(human(score("gone")), name="other"))
    both = run("--previous", str(old), "--previous", str(other), str(new))
    assert both.returncode == 0
    assert [line.split(": ", 2)[1] for line in both.stdout.splitlines()[:-1]] == [
        "agents/support-feedback",
        "agents/support-feedback",
        "agents/other",
    ]
    # the path after a --previous PATH is a path to check, not a second previous one
    checked = run("--previous", str(old), str(new), str(other))
    assert checked.stdout.splitlines()[-1].startswith("3 FeedbackStores checked")


def test_warnings_as_errors_fails_the_pipeline_on_a_change(tmp_path: Path) -> None:
    new = write_yaml(tmp_path / "new.yaml", NEW)
    old = write_yaml(tmp_path / "old.yaml", OLD)
    assert run(str(new), "--previous", str(old), "--warnings-as-errors").returncode == 1
    same = run(str(new), "--previous", str(new), "--warnings-as-errors")
    assert (same.returncode, same.stdout.splitlines()) == (0, [SUMMARY])


def test_a_store_deleted_outright_is_a_warning_of_its_own(tmp_path: Path) -> None:
    new = write_yaml(tmp_path / "new.yaml", NEW)
    old = write_yaml(tmp_path / "old.yaml", NEW, OTHER)
    result = run(str(new), "--previous", str(old))
    assert result.returncode == 0
    assert result.stdout.splitlines() == [
        f"{old}:16:1: agents/other: warning: FeedbackStore deleted: the gateway cannot read it, "
        "so it answers 403 to the scores of the agents that reference it",
        SUMMARY,
    ]


def test_the_previous_manifests_may_come_from_stdin_and_a_directory(tmp_path: Path) -> None:
    old = write_yaml(tmp_path / "old" / "a.yaml", OLD)
    result = run(
        "-", "--previous", str(old.parent), stdin=old.read_bytes().replace(b"tone", b"mood")
    )
    assert result.returncode == 0
    assert result.stdout.splitlines() == [
        '-:11:13: agents/support-feedback: spec.human.scores[1].name: warning: score "tone" '
        'renamed to "mood" in human: the gateway rejects "tone" (422) from now on',
        SUMMARY,
    ]


def test_an_unreadable_previous_path_is_an_input_error(tmp_path: Path) -> None:
    new = write_yaml(tmp_path / "new.yaml", NEW)
    result = run(str(new), "--previous", str(tmp_path / "missing.yaml"))
    assert result.returncode == 2
    assert "missing.yaml" in result.stderr


def test_in_json_each_change_is_an_object_with_its_position(tmp_path: Path) -> None:
    new = write_yaml(tmp_path / "new.yaml", NEW)
    old = write_yaml(tmp_path / "old.yaml", OLD, OTHER)
    result = run(str(new), "--previous", str(old), "-o", "json")
    assert result.returncode == 0
    assert json.loads(result.stdout)["changes"] == [
        {
            "source": str(new),
            "line": 10,
            "column": 17,
            "name": "agents/support-feedback",
            "field": "spec.human.scores[0].dataType",
            "message": 'score "thumbs" dataType BOOLEAN -> NUMERIC: the gateway checks no '
            "dataType; it reads as NUMERIC in Langfuse",
        },
        {
            "source": str(new),
            "line": 9,
            "column": 5,
            "name": "agents/support-feedback",
            "field": "spec.human.scores",
            "message": 'score "tone" removed from human: the gateway rejects "tone" (422) from '
            "now on",
        },
        {
            "source": str(old),
            "line": 17,
            "column": 1,
            "name": "agents/other",
            "field": "",
            "message": "FeedbackStore deleted: the gateway cannot read it, so it answers 403 to "
            "the scores of the agents that reference it",
        },
    ]


def test_for_github_and_sarif_each_change_is_a_warning_annotation(tmp_path: Path) -> None:
    new = write_yaml(tmp_path / "new.yaml", NEW)
    old = write_yaml(tmp_path / "old.yaml", OLD)
    github = run(str(new), "--previous", str(old), "-o", "github").stdout.splitlines()
    assert github[1] == (
        f"::warning file={new},line=9,col=5,title=FeedbackStore agents/support-feedback%3A "
        'SpecChange::agents/support-feedback: spec.human.scores: score "tone" removed from '
        'human: the gateway rejects "tone" (422) from now on'
    )
    sarif = json.loads(run(str(new), "--previous", str(old), "-o", "sarif").stdout)
    results = sarif["runs"][0]["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [("SpecChange", "warning")] * 2
    region = results[0]["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 10, "startColumn": 17}
