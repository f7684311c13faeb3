"""`feedbackstore-webhook validate`, end to end through the installed console script.

Real files on disk, real processes, real exit codes: what a GitOps pipeline sees.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.rules_builders import channel, feedbackstore, human, score
from tests.webhook.cli.test_migrate import BOMB

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
SCRIPT = Path(sys.executable).with_name("feedbackstore-webhook")

CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {}}
VALID = feedbackstore(human(score("thumbs", dataType="BOOLEAN")), name="valid-store")
INVALID = feedbackstore(human(score("thumbs"), score("thumbs")), name="invalid-store")


def run(
    *args: str, stdin: bytes | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), "validate", *args],
        input=stdin.decode() if stdin is not None else None,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        check=False,
    )


def write_yaml(path: Path, *docs: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def as_json(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(result.stdout)
    return body


def test_a_valid_file_exits_zero_with_a_summary(tmp_path: Path) -> None:
    result = run(str(write_yaml(tmp_path / "ok.yaml", VALID)))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == (
        "1 FeedbackStore checked, 0 invalid, 0 other documents skipped"
    )


def test_an_invalid_document_is_reported_at_file_line_column_object_and_field(
    tmp_path: Path,
) -> None:
    path = write_yaml(tmp_path / "stores.yaml", CONFIGMAP, VALID, INVALID)
    result = run(str(path))
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    # line 27 is the second `    - name: thumbs`; column 13 is where `thumbs` starts
    assert lines[0] == (
        f"{path}:27:13: agents/invalid-store: spec.human.scores[1].name: "
        'Duplicate value: "thumbs": human score names must be unique '
        "(first declared at spec.human.scores[0].name)"
    )
    assert lines[-1] == "2 FeedbackStores checked, 1 invalid, 1 other document skipped"


def test_warnings_are_printed_and_marked_but_do_not_fail(tmp_path: Path) -> None:
    store = feedbackstore({**human(score("topic", dataType="CATEGORICAL")), "mode": "Monitor"})
    result = run(str(write_yaml(tmp_path / "w.yaml", store)))
    assert result.returncode == 0
    assert f"{tmp_path / 'w.yaml'}:11:9: agents/support-feedback: spec.mode: warning: Monitor" in (
        result.stdout
    )
    assert "spec.human.scores[0]: warning: CATEGORICAL score declares no categories" in (
        result.stdout
    )


def test_warnings_as_errors_fails_a_store_with_warnings(tmp_path: Path) -> None:
    store = feedbackstore({**human(score()), "mode": "Monitor"})
    path = write_yaml(tmp_path / "w.yaml", store)
    assert run(str(path)).returncode == 0
    result = run("--warnings-as-errors", "-o", "json", str(path))
    assert result.returncode == 1
    problems = as_json(result)["results"][0]["problems"]
    assert [(p["field"], p["type"]) for p in problems] == [("spec.mode", "Warning")]


def test_directories_are_read_recursively_in_order_skipping_hidden_and_other_files(
    tmp_path: Path,
) -> None:
    write_yaml(tmp_path / "b" / "deep" / "store.yml", INVALID)
    write_yaml(tmp_path / "a.yaml", VALID)
    (tmp_path / "c.json").write_text(json.dumps(VALID))
    (tmp_path / "notes.txt").write_text("not: [a manifest")
    write_yaml(tmp_path / ".git" / "config.yaml", INVALID)
    body = as_json(run("-o", "json", str(tmp_path)))
    assert [Path(r["source"]).relative_to(tmp_path).as_posix() for r in body["results"]] == [
        "a.yaml",
        "b/deep/store.yml",
        "c.json",
    ]
    assert (body["checked"], body["invalid"], body["valid"]) == (3, 1, False)


def test_stdin_is_read_with_a_dash() -> None:
    stream = yaml.safe_dump_all([CONFIGMAP, INVALID]).encode()
    result = run("-", stdin=stream)
    assert result.returncode == 1
    assert result.stdout.startswith("-:16:13: agents/invalid-store: spec.human.scores[1].name:")


def test_json_output_has_the_documented_shape(tmp_path: Path) -> None:
    path = write_yaml(tmp_path / "all.yaml", CONFIGMAP, VALID, INVALID)
    result = run("-o", "json", str(path))
    assert result.returncode == 1
    body = as_json(result)
    assert {k: body[k] for k in ("valid", "checked", "invalid", "skipped")} == {
        "valid": False,
        "checked": 2,
        "invalid": 1,
        "skipped": 1,
    }
    assert body["results"][1] == {
        "source": str(path),
        "document": 3,
        "kind": "FeedbackStore",
        "namespace": "agents",
        "name": "invalid-store",
        "valid": False,
        "problems": [
            {
                "field": "spec.human.scores[1].name",
                "type": "FieldValueDuplicate",
                "message": 'Duplicate value: "thumbs": human score names must be unique '
                "(first declared at spec.human.scores[0].name)",
                "line": 27,
                "column": 13,
            }
        ],
        "warnings": [],
    }
    assert body["results"][0]["valid"] is True
    assert body["results"][0]["problems"] == []


def test_kubectl_list_documents_are_checked_item_by_item(tmp_path: Path) -> None:
    listing = {"apiVersion": "v1", "kind": "List", "items": [VALID, INVALID, CONFIGMAP]}
    body = as_json(run("-o", "json", str(write_yaml(tmp_path / "list.yaml", listing))))
    assert [(r["name"], r["valid"]) for r in body["results"]] == [
        ("valid-store", True),
        ("invalid-store", False),
    ]
    assert body["skipped"] == 1


MANIFEST_PROBLEMS = [
    ("a store without a name", {**VALID, "metadata": {"namespace": "agents"}}, "metadata.name"),
    ("a store with an invalid name", {**VALID, "metadata": {"name": "Bad_Name"}}, "metadata.name"),
    ("a store of another version", {**VALID, "apiVersion": "agents.ctxmesh.ai/v1"}, "apiVersion"),
    ("a store with a typo at the top", {**VALID, "sepc": {}}, "sepc"),
    ("a store without a spec", {k: v for k, v in VALID.items() if k != "spec"}, "spec"),
]


@pytest.mark.parametrize(
    ("doc", "field"), [c[1:] for c in MANIFEST_PROBLEMS], ids=[c[0] for c in MANIFEST_PROBLEMS]
)
def test_manifest_identity_and_metadata_are_checked(
    tmp_path: Path, doc: object, field: str
) -> None:
    result = run("-o", "json", str(write_yaml(tmp_path / "m.yaml", doc)))
    assert result.returncode == 1
    assert field in [p["field"] for p in as_json(result)["results"][0]["problems"]]


def test_other_groups_kinds_and_non_objects_are_skipped(tmp_path: Path) -> None:
    other_group = {**VALID, "apiVersion": "example.com/v1"}
    path = tmp_path / "mixed.yaml"
    path.write_text(
        yaml.safe_dump_all([CONFIGMAP, other_group]) + "---\n- a list\n---\njust text\n---\n"
    )
    result = run(str(path))
    assert result.returncode == 0
    assert result.stdout.splitlines()[-1] == (
        "0 FeedbackStores checked, 0 invalid, 4 other documents skipped"
    )


# Each names a kind `validate` judges: a broken file that names none is no manifest of ours
# and is skipped with a note (tests/webhook/cli/test_repository.py).
UNREADABLE = [
    ("broken YAML names the file and line", "bad.yaml", b"kind: FeedbackStore\nspec: [1\n", ":3:"),
    (
        "a tab-indented YAML file names its line",
        "tab.yaml",
        b"kind: FeedbackStore\na:\n\tb: 1\n",
        ":3:",
    ),
    (
        "a repeated key is an error, not last-one-wins",
        "dup.yaml",
        b"kind: FeedbackStore\nkind: B\n",
        ":2:",
    ),
    (
        "broken JSON names the line",
        "bad.json",
        b'{\n  "kind": "FeedbackStore",\n  "spec": \n}',
        ":4:",
    ),
    (
        "a mapping as a key is refused as kubectl refuses it, not a crash",
        "key.yaml",
        b"kind: FeedbackStore\nmetadata:\n  name: {{ .Release.Name }}\n",
        ":3:10: cannot parse YAML: found a mapping or list as a key",
    ),
    ("a binary file is not a manifest", "bin.yaml", bytes(range(256)), "not a text file"),
    (
        "a non-UTF-8 file is not a manifest",
        "latin.yaml",
        "name: caf\xe9".encode("latin-1"),
        "UTF-8",
    ),
    (
        "absurdly deep nesting is refused",
        "deep.yaml",
        b"kind: FeedbackStore\na: " + b"[" * 100_000 + b"]" * 100_000,
        "cannot parse YAML",
    ),
    (
        "absurdly deep JSON is refused",
        "deep.json",
        b'["AgentDeployment", ' + b"[" * 100_000 + b"]" * 100_001,
        "JSON",
    ),
    (
        "an alias bomb is refused as kubectl refuses it",
        "bomb.yaml",
        b"kind: FeedbackStore\n" + BOMB,
        "excessive aliasing",
    ),
]


@pytest.mark.parametrize(
    ("name", "content", "clue"), [c[1:] for c in UNREADABLE], ids=[c[0] for c in UNREADABLE]
)
def test_unreadable_input_exits_two_with_one_line_naming_the_file(
    tmp_path: Path, name: str, content: bytes, clue: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    result = run(str(path))
    assert result.returncode == 2
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 1, result.stderr
    assert errors[0].startswith(f"feedbackstore-webhook: error: {path}")
    assert clue in errors[0]
    assert "Traceback" not in result.stderr


def test_a_missing_path_exits_two_and_the_other_files_are_still_checked(tmp_path: Path) -> None:
    good = write_yaml(tmp_path / "bad-store.yaml", INVALID)
    result = run(str(tmp_path / "missing.yaml"), str(good))
    assert result.returncode == 2
    assert "missing.yaml: no such file or directory" in result.stderr
    assert "invalid-store: spec.human.scores[1].name" in result.stdout
    assert "1 input unreadable" in result.stdout


def test_documents_before_a_parse_error_are_still_checked(tmp_path: Path) -> None:
    path = tmp_path / "half.yaml"
    path.write_text(yaml.safe_dump(INVALID) + "---\nspec: [\n")
    result = run(str(path))
    assert result.returncode == 2
    assert f"{path}:10:13: agents/invalid-store:" in result.stdout


def test_yaml_timestamps_and_booleans_are_typed_as_kubernetes_sees_them(tmp_path: Path) -> None:
    path = tmp_path / "types.yaml"
    path.write_text(
        "apiVersion: agents.ctxmesh.ai/v1beta1\nkind: FeedbackStore\nmetadata: {name: t}\n"
        "spec:\n  mode: yes\n  human:\n    scores:\n      - name: 2024-01-01\n"
    )
    body = as_json(run("-o", "json", str(path)))
    assert [p["field"] for p in body["results"][0]["problems"]] == ["spec.mode"]


def test_yaml_merge_keys_may_be_overridden_without_a_duplicate_error(tmp_path: Path) -> None:
    path = tmp_path / "merge.yaml"
    path.write_text(
        "apiVersion: agents.ctxmesh.ai/v1beta1\nkind: FeedbackStore\nmetadata: {name: m}\n"
        "spec:\n  human:\n    scores:\n      - &base {name: thumbs, dataType: BOOLEAN}\n"
        "      - <<: *base\n        name: csat\n"
    )
    result = run(str(path))
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_huge_invalid_store_gets_a_bounded_report(tmp_path: Path) -> None:
    # Within the limits (64 scores of 64 categories), so every item is judged: 4,095 problems.
    store = feedbackstore(human(*[score(categories=["a"] * 64) for _ in range(64)]))
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(store))
    result = run("-o", "json", str(path))
    assert result.returncode == 1
    problems = as_json(result)["results"][0]["problems"]
    assert len(problems) <= 1001
    assert problems[-1]["message"].startswith("and ")


def test_no_paths_is_a_usage_error() -> None:
    result = run()
    assert result.returncode == 2
    assert "usage:" in result.stderr


def test_the_examples_directory_is_what_the_readme_says(tmp_path: Path) -> None:
    valid = run(str(EXAMPLES / "minimal.yaml"), str(EXAMPLES / "full.yaml"))
    assert valid.returncode == 0, valid.stdout
    invalid = run("-o", "json", str(EXAMPLES / "invalid"))
    body = as_json(invalid)
    assert invalid.returncode == 1
    assert body["invalid"] == body["checked"] == len(list((EXAMPLES / "invalid").glob("*.yaml")))


@pytest.mark.parametrize(
    "spec",
    [
        {"external": [channel(), channel()]},
        {"human": {"scores": "x"}, "external": {"a": 1}},
    ],
    ids=["duplicate channels", "wrong types at two levels"],
)
def test_cli_and_library_agree(tmp_path: Path, spec: object) -> None:
    from webhook.rules import validate_spec

    body = as_json(run("-o", "json", str(write_yaml(tmp_path / "s.yaml", feedbackstore(spec)))))
    assert [p["field"] for p in body["results"][0]["problems"]] == [
        p.field for p in validate_spec(spec).problems
    ]
