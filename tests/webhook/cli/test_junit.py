"""`validate -o junit`: a report GitLab and Jenkins read, checked with a JUnit reader."""

from __future__ import annotations

from pathlib import Path

import pytest
from junitparser import Error, Failure, JUnitXml

from webhook.cli.main import main

STORE = (
    "apiVersion: agents.ctxmesh.ai/v1beta1\nkind: FeedbackStore\n"
    "metadata: {{name: {name}, namespace: a}}\nspec: {{human: {{scores: [{scores}]}}}}\n"
)


def test_one_suite_per_file_one_case_per_store_a_failure_per_invalid_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stores = tmp_path / "stores.yaml"
    stores.write_text(
        STORE.format(name="good", scores="{name: x, dataType: BOOLEAN}")
        + "---\n"
        + STORE.format(name="bad & <odd>", scores="{name: x}, {name: x}")
    )
    missing = tmp_path / "missing.yaml"
    assert main(["validate", "-o", "junit", str(stores), str(missing)]) == 2
    xml = JUnitXml.fromstring(capsys.readouterr().out.encode())
    suites = {suite.name: suite for suite in xml}
    assert set(suites) == {str(stores), str(missing)}
    cases = {case.name: case for case in suites[str(stores)]}
    assert set(cases) == {"a/good", "a/bad & <odd>"}
    assert cases["a/good"].is_passed
    (failure,) = cases["a/bad & <odd>"].result
    assert isinstance(failure, Failure)
    assert failure.message == "2 problems"  # the name is not a DNS subdomain either
    assert failure.text.splitlines()[1] == (
        f"{stores}:9:43: spec.human.scores[1].name: Duplicate value: "
        '"x": human score names must be unique (first declared at spec.human.scores[0].name)'
    )
    assert (suites[str(stores)].tests, suites[str(stores)].failures) == (2, 1)
    (missing_case,) = suites[str(missing)]
    (error,) = missing_case.result
    assert isinstance(error, Error)
    assert "no such file or directory" in (error.message or "")
