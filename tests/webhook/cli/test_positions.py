"""Every problem and warning at the line and column where its value starts.

Real files, in-process through the CLI's own entry point; each case states the
exact position an editor shows for the offending value.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from webhook.cli.main import main

HEAD = (
    "apiVersion: agents.ctxmesh.ai/v1beta1\nkind: FeedbackStore\n"
    "metadata: {name: s, namespace: a}\n"
)
DUPLICATE = "spec.human.scores[1].name"


def validate_json(
    path: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, dict[str, Any]]:
    code = main(["validate", "-o", "json", *extra, str(path)])
    body: dict[str, Any] = json.loads(capsys.readouterr().out)
    return code, body


def positions(body: dict[str, Any]) -> dict[str, tuple[int, int]]:
    found: dict[str, tuple[int, int]] = {}
    for result in body["results"]:
        for entry in result["problems"] + result["warnings"]:
            found[entry["field"]] = (entry["line"], entry["column"])
    return found


CASES = [
    (
        "block style: the scalar after name:",
        HEAD + "spec:\n  human:\n    scores:\n    - name: x\n    - name: x\n",
        {DUPLICATE: (8, 13)},
    ),
    (
        "flow style",
        HEAD + "spec: {human: {scores: [{name: x}, {name: x}]}}\n",
        {DUPLICATE: (4, 43)},
    ),
    (
        "comments before and after the value",
        HEAD + "# top\nspec:\n  human: # h\n    scores:\n    # one\n    - name: x # first\n"
        "    - name: x   # second\n",
        {DUPLICATE: (10, 13)},
    ),
    (
        "CRLF line ends",
        (HEAD + "spec:\n  human:\n    scores:\n    - name: x\n    - name: x\n").replace(
            "\n", "\r\n"
        ),
        {DUPLICATE: (8, 13)},
    ),
    (
        "a byte-order mark does not shift the first line",
        "\ufeffapiVersion: agents.ctxmesh.ai/v9\nkind: FeedbackStore\nmetadata: {name: s}\n"
        "spec: {human: {scores: [{name: x}]}}\n",
        {"apiVersion": (1, 13)},
    ),
    (
        "tabs inside a scalar count as one column",
        HEAD + 'spec:\n  human:\n    scores:\n    - {name: "a\tb", dataType: X}\n'
        '    - {name: "a\tb"}\n',
        {"spec.human.scores[0].dataType": (7, 31), DUPLICATE: (8, 14)},
    ),
    (
        "multi-byte characters before the value count as one column each",
        HEAD
        + "spec:\n  human:\n    scores:\n    - {name: été}\n    - {name: 'été', dataType: ✓}\n",
        {DUPLICATE: (8, 14), "spec.human.scores[1].dataType": (8, 31)},
    ),
    (
        "an alias is reported where its anchor's value is written",
        HEAD + "spec:\n  human:\n    scores:\n    - name: &n x\n    - name: *n\n",
        {DUPLICATE: (7, 13)},
    ),
    (
        "a merge key: the key written after it overrides the merged one",
        HEAD + "spec:\n  human:\n    scores:\n    - &b {name: x, dataType: BOOLEAN}\n"
        "    - <<: *b\n      name: x\n",
        {DUPLICATE: (9, 13)},
    ),
    (
        "a value merged in is reported where the anchor wrote it",
        HEAD + "spec:\n  human:\n    scores:\n    - &b {name: x, dataType: BAD}\n"
        "    - <<: *b\n      name: y\n",
        {"spec.human.scores[0].dataType": (7, 30), "spec.human.scores[1].dataType": (7, 30)},
    ),
    (
        "an unknown field is reported at its key",
        HEAD + "spec:\n  humans:\n    scores: []\n",
        {"spec.humans": (5, 3)},
    ),
    (
        "a missing field at the mapping that should hold it",
        "apiVersion: agents.ctxmesh.ai/v1beta1\nkind: FeedbackStore\nmetadata:\n  namespace: a\n"
        "spec: {human: {scores: [{name: x}]}}\n",
        {"metadata.name": (4, 3)},
    ),
    (
        "a problem with the whole spec at the spec's value",
        HEAD + "spec:\n  mode: Enforce\n",
        {"spec": (5, 3)},
    ),
    (
        "a later document of a multi-document file",
        "kind: ConfigMap\n---\n" + HEAD + "spec: {human: {scores: [{name: x}, {name: x}]}}\n",
        {DUPLICATE: (6, 43)},
    ),
    (
        "an item of a kind: List",
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: agents.ctxmesh.ai/v1beta1\n"
        "  kind: FeedbackStore\n  metadata: {name: s}\n  spec: {human: {scores: [{name: 7}]}}\n",
        {"spec.human.scores[0].name": (7, 34)},
    ),
    (
        "a warning has its position too",
        HEAD + "spec:\n  mode: Monitor\n  human: {scores: [{name: x}]}\n",
        {"spec.mode": (5, 9)},
    ),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_the_position_is_where_the_value_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: dict[str, Any]
) -> None:
    path = tmp_path / "store.yaml"
    path.write_bytes(text.encode())
    _, body = validate_json(path, capsys)
    assert body["errors"] == []
    found = positions(body)
    assert {k: found.get(k) for k in expected} == expected, found


def test_json_sources_are_placed_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "store.json"
    path.write_text(
        '{"apiVersion": "agents.ctxmesh.ai/v1beta1", "kind": "FeedbackStore",\n'
        ' "metadata": {"name": "s"},\n'
        '\t"spec": {"human": {"scores": [{"name": "é"},\t{"name": "é"}]}}}\n'
    )
    code, body = validate_json(path, capsys)
    assert code == 1
    assert positions(body) == {DUPLICATE: (3, 56)}


def test_text_output_is_file_line_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(HEAD + "spec: {human: {scores: [{name: x}, {name: x}]}}\n")
    assert main(["validate", str(path)]) == 1
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"{path}:4:43: a/s: {DUPLICATE}: Duplicate value: ")


BAD_INPUT = [
    ("not YAML", b"kind: FeedbackStore\nspec: [\n  a: b\n", "did not find expected ',' or ']'", 4),
    ("a key repeated", (HEAD + "spec: {}\nspec: {}\n").encode(), "duplicate key", 5),
]


@pytest.mark.parametrize(
    ("content", "clue", "line"), [c[1:] for c in BAD_INPUT], ids=[c[0] for c in BAD_INPUT]
)
def test_unparsable_input_exits_two_at_the_parsers_position(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, clue: str, line: int
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_bytes(content)
    code, body = validate_json(path, capsys)
    assert code == 2
    (error,) = body["errors"]
    assert clue in error["message"]
    assert error["line"] == line


def test_a_deeply_nested_document_is_an_error_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(HEAD + "spec: " + "[" * 100_000 + "]" * 100_000 + "\n")
    code = main(["validate", str(path)])
    captured = capsys.readouterr()
    assert code == 2
    assert f"{path}" in captured.err


def test_a_document_that_is_a_list_is_skipped_as_today(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "list.yaml"
    path.write_text("- a\n- b\n")
    code, body = validate_json(path, capsys)
    assert (code, body["skipped"], body["errors"]) == (0, 1, [])


def test_a_ten_megabyte_store_is_placed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = "x" * 10_000_000
    path = tmp_path / "big.yaml"
    path.write_text(
        "apiVersion: agents.ctxmesh.ai/v1beta1\nkind: FeedbackStore\n"
        f"metadata:\n  name: s\n  annotations: {{big: {big}}}\n"
        "spec: {human: {scores: [{name: x}, {name: x}]}}\n"
    )
    assert path.stat().st_size > 10_000_000
    code, body = validate_json(path, capsys)
    assert code == 1
    assert positions(body) == {DUPLICATE: (6, 43)}


def test_a_key_that_reads_like_a_path_is_not_taken_for_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`human.scores` is a key of its own: the missing `spec.human.scores` is placed at `human`,
    the unknown key `human.scores` at that key."""
    path = tmp_path / "store.yaml"
    path.write_text(HEAD + 'spec:\n  human: {}\n  "human.scores": 1\n')
    _, body = validate_json(path, capsys)
    placed = {
        (entry["field"], entry["type"]): (entry["line"], entry["column"])
        for entry in body["results"][0]["problems"]
    }
    assert placed == {
        ("spec", "FieldValueRequired"): (5, 3),  # no source: the spec's mapping
        ("spec.human.scores", "FieldValueRequired"): (5, 10),
        ("spec.human.scores", "FieldValueForbidden"): (6, 3),
    }
