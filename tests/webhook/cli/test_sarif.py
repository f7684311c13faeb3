"""`validate -o sarif`: SARIF 2.1.0, checked against its object model (sarif-pydantic)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sarif_pydantic import Sarif

from webhook.cli.main import main


def test_one_rule_per_problem_type_results_at_line_and_column_warnings_as_warnings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "apiVersion: agents.ctxmesh.ai/v1beta1\nkind: FeedbackStore\n"
        "metadata: {name: s, namespace: a}\n"
        "spec: {mode: Monitor, human: {scores: [{name: x}, {name: x, dataType: B}]}}\n"
    )
    missing = tmp_path / "missing.yaml"
    assert main(["validate", "-o", "sarif", str(path), str(missing)]) == 2
    body = json.loads(capsys.readouterr().out)
    log = Sarif.model_validate(body)
    assert log.version == "2.1.0"
    (run,) = log.runs
    rules = [rule.id for rule in run.tool.driver.rules or []]
    assert rules == ["FieldValueNotSupported", "FieldValueDuplicate", "Warning", "Unreadable"]
    placed = [
        (
            r.rule_id,
            str(r.level.value if r.level else None),
            r.locations[0].physical_location.artifact_location.uri,
            r.locations[0].physical_location.region.start_line,
            r.locations[0].physical_location.region.start_column,
        )
        for r in run.results or []
        if r.locations
        and r.locations[0].physical_location
        and r.locations[0].physical_location.artifact_location
        and r.locations[0].physical_location.region
    ]
    assert placed == [
        ("FieldValueNotSupported", "error", str(path), 4, 71),
        ("FieldValueDuplicate", "error", str(path), 4, 58),
        ("Warning", "warning", str(path), 4, 14),
        ("Unreadable", "error", str(missing), 1, 1),
    ]
    for result in body["runs"][0]["results"]:
        assert rules[result["ruleIndex"]] == result["ruleId"]
