"""`validate` on a whole repository, as the pre-commit hook runs it: every YAML and JSON file
of a realistic tree at once, from the repository's root.

What is not a manifest until a tool makes one (a Helm chart's templates, a kustomize patch)
and YAML of other tools is skipped with a note naming where it is judged instead; what is a
manifest is judged as before. The patch is then judged where the note says: in the overlay
the real kubectl's kustomize builds.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.kubectl_binary import kubectl

SCRIPT = Path(sys.executable).with_name("feedbackstore-webhook")
STORE = """\
apiVersion: agents.ctxmesh.ai/v1beta1
kind: FeedbackStore
metadata:
  name: {name}
  namespace: agents
spec:
  human:
    scores:
      - name: thumbs
        dataType: BOOLEAN
"""
TREE = {
    ".gitlab-ci.yml": """\
.install: &install
  - python -m pip install feedbackstore-webhook
validate:
  script:
    - !reference [.install]
    - feedbackstore-webhook validate deploy/
""",
    "charts/agent/Chart.yaml": "apiVersion: v2\nname: agent\nversion: 1.0.0\n",
    "charts/agent/values.yaml": "store:\n  mode: Enforce\n",
    "charts/agent/templates/store.yaml": """\
apiVersion: agents.ctxmesh.ai/v1beta1
kind: FeedbackStore
metadata:
  name: {{ .Release.Name }}-feedback
spec:
  mode: {{ .Values.store.mode | quote }}
  human:
    scores:
      - name: thumbs
""",
    # parses as YAML, and would be judged with a name no store may have
    "charts/agent/templates/quoted.yaml": STORE.format(name='"{{ .Release.Name }}"'),
    "deploy/base/kustomization.yaml": "resources: [store.yaml]\n",
    "deploy/base/store.yaml": STORE.format(name="support-feedback"),
    "deploy/overlays/prod/kustomization.yaml": (
        "resources: [../../base]\npatches:\n  - path: store-mode.yaml\n"
    ),
    # a part of the base's store: alone it declares no source
    "deploy/overlays/prod/store-mode.yaml": """\
apiVersion: agents.ctxmesh.ai/v1beta1
kind: FeedbackStore
metadata:
  name: support-feedback
  namespace: agents
spec:
  mode: Monitor
""",
    "deploy/overlays/dev/kustomization.yaml": (
        "resources: [../../base]\npatchesStrategicMerge:\n  - store-dev.yaml\n"
    ),
    "deploy/overlays/dev/store-dev.yaml": """\
apiVersion: agents.ctxmesh.ai/v1beta1
kind: FeedbackStore
metadata: {name: support-feedback, namespace: agents}
spec: {mode: Enforce}
""",
    "deploy/overlays/staging/kustomization.yaml": (
        "resources: [../../base]\ncomponents: [../../components/channel]\n"
    ),
    "deploy/components/channel/kustomization.yaml": (
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n"
        "patches:\n  - path: store-channel.yaml\n"
    ),
    "deploy/components/channel/store-channel.yaml": """\
apiVersion: agents.ctxmesh.ai/v1beta1
kind: FeedbackStore
metadata: {name: support-feedback, namespace: agents}
spec:
  external:
    - name: csat-webhook
      score: {name: csat}
""",
    "plain/store.yaml": STORE.format(name="plain-feedback"),
    "plain/configmap.json": '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}',
}
NOT_JUDGED = {
    ".gitlab-ci.yml": "could not determine a constructor for the tag '!reference'",
    "charts/agent/templates/store.yaml": "a Helm template of the chart charts/agent",
    "charts/agent/templates/quoted.yaml": "helm template charts/agent | feedbackstore-webhook",
    "deploy/overlays/prod/store-mode.yaml": "a kustomize patch, listed in "
    "deploy/overlays/prod/kustomization.yaml: a part of an object, whole only where it is "
    "applied; judge the built overlay: kubectl kustomize deploy/overlays/prod | "
    "feedbackstore-webhook validate -",
    "deploy/overlays/dev/store-dev.yaml": "kubectl kustomize deploy/overlays/dev |",
    "deploy/components/channel/store-channel.yaml": "listed in "
    "deploy/components/channel/kustomization.yaml: a part of an object, whole only where it "
    "is applied; judge the built overlay: kubectl kustomize OVERLAY |",
}


def validate(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), "validate", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
        check=False,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for name, text in TREE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / ".git").mkdir()  # what marks the repository's root, as pre-commit runs in it
    return root


def hook_files(root: Path) -> list[str]:
    """What pre-commit hands the hook (`types_or: [yaml, json]`): every such file, relative."""
    return sorted(
        str(path.relative_to(root))
        for path in root.rglob("*")
        if path.suffix in (".yaml", ".yml", ".json") and ".git" not in path.parts
    )


def notes(result: subprocess.CompletedProcess[str]) -> dict[str, str]:
    prefix = "feedbackstore-webhook: note: "
    found = {}
    for line in result.stderr.splitlines():
        assert line.startswith(prefix), result.stderr
        source, _, reason = line.removeprefix(prefix).partition(": not judged: ")
        found[source] = reason
    return found


def test_the_hook_passes_a_whole_repository_noting_what_it_does_not_judge(repo: Path) -> None:
    result = validate(*hook_files(repo), cwd=repo)
    assert result.returncode == 0, result.stdout + result.stderr
    said = notes(result)
    assert set(said) == set(NOT_JUDGED)
    for source, clue in NOT_JUDGED.items():
        assert clue in said[source], said[source]
    assert result.stdout.splitlines()[-1] == (
        "2 FeedbackStores checked, 0 invalid, 8 other documents skipped, 6 files not judged"
    )


def test_a_directory_walk_notes_the_same_files(repo: Path) -> None:
    result = validate(".", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert {os.path.normpath(source) for source in notes(result)} == set(NOT_JUDGED)


def test_json_lists_each_note_beside_the_results(repo: Path) -> None:
    result = validate("-o", "json", *hook_files(repo), cwd=repo)
    body = json.loads(result.stdout)
    assert body["valid"] is True
    assert {note["source"] for note in body["notes"]} == set(NOT_JUDGED)
    assert {note["document"] for note in body["notes"]} == {None}


def test_an_invalid_manifest_beside_them_still_fails(repo: Path) -> None:
    (repo / "plain/store.yaml").write_text(
        STORE.format(name="plain-feedback") + "      - name: thumbs\n"
    )
    result = validate(*hook_files(repo), cwd=repo)
    assert result.returncode == 1
    assert "plain/store.yaml:11:15: agents/plain-feedback: spec.human.scores[1].name" in (
        result.stdout
    )


def test_a_broken_file_that_names_a_feedbackstore_is_still_unreadable(repo: Path) -> None:
    (repo / "plain/broken.yaml").write_text("kind: FeedbackStore\nspec: [\n")
    result = validate(*hook_files(repo), cwd=repo)
    assert result.returncode == 2
    assert "feedbackstore-webhook: error: plain/broken.yaml:3:1: cannot parse YAML" in (
        result.stderr
    )


@pytest.mark.parametrize(
    ("patch", "valid"),
    [
        pytest.param("store-mode.yaml", True, id="a patch that keeps the store valid passes"),
        pytest.param(
            "store-duplicate.yaml", False, id="a patch that makes the store invalid fails there"
        ),
    ],
)
def test_a_patch_is_judged_in_the_overlay_kustomize_builds(
    repo: Path, patch: str, valid: bool
) -> None:
    overlay = repo / "deploy/overlays/prod"
    (overlay / "store-duplicate.yaml").write_text(
        "apiVersion: agents.ctxmesh.ai/v1beta1\nkind: FeedbackStore\n"
        "metadata: {name: support-feedback, namespace: agents}\n"
        "spec:\n  external:\n    - name: thumbs-channel\n      score: {name: thumbs}\n"
    )
    (overlay / "kustomization.yaml").write_text(
        f"resources: [../../base]\npatches:\n  - path: {patch}\n"
    )
    built = subprocess.run(
        [kubectl(), "kustomize", "deploy/overlays/prod"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    result = validate("-", cwd=repo, stdin=built.stdout)
    assert result.returncode == (0 if valid else 1), result.stdout + result.stderr
    assert result.stdout.splitlines()[-1].startswith(
        f"1 FeedbackStore checked, {0 if valid else 1} invalid"
    )
    if not valid:
        assert "agents/support-feedback: spec.external[0].score.name: Duplicate value" in (
            result.stdout
        )


def test_a_strategic_merge_patch_used_from_elsewhere_is_known_by_its_directive(
    tmp_path: Path,
) -> None:
    (tmp_path / "delete-store.yaml").write_text(
        "apiVersion: agents.ctxmesh.ai/v1beta1\nkind: FeedbackStore\n"
        "metadata: {name: old, namespace: agents}\n$patch: delete\n"
        "---\n" + STORE.format(name="kept")
    )
    result = validate("delete-store.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert notes(result) == {
        "delete-store.yaml:1": "a strategic-merge patch ($patch), not a whole object: judge "
        "the object it patches, in the built overlay: kubectl kustomize OVERLAY | "
        "feedbackstore-webhook validate -"
    }
    assert result.stdout.splitlines()[-1] == (
        "1 FeedbackStore checked, 0 invalid, 1 other document skipped"
    )


@pytest.mark.parametrize(
    ("globs", "checked"),
    [
        pytest.param(["plain"], 1, id="a directory's name leaves out everything below it"),
        pytest.param(["plain/*"], 1, id="a glob of paths leaves out what it matches"),
        pytest.param(["*.yaml"], 0, id="a glob of names leaves out matching files anywhere"),
        pytest.param(["deploy", "plain/store.yaml"], 0, id="the flag repeats and each glob counts"),
    ],
)
def test_exclude_leaves_out_what_a_glob_matches(repo: Path, globs: list[str], checked: int) -> None:
    flags = [part for glob in globs for part in ("--exclude", glob)]
    result = validate(*flags, "-o", "json", ".", cwd=repo)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["checked"] == checked


def test_exclude_applies_to_files_named_on_the_command_line(repo: Path) -> None:
    (repo / "plain/broken.yaml").write_text("kind: FeedbackStore\nspec: [\n")
    result = validate("--exclude", "*/broken.yaml", "plain/broken.yaml", "plain/store.yaml",
                      cwd=repo)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1].startswith("1 FeedbackStore checked, 0 invalid")


def test_help_states_the_exit_codes_as_numbers() -> None:
    result = subprocess.run(
        [str(SCRIPT), "validate", "--help"], capture_output=True, text=True, check=True
    )
    said = " ".join(result.stdout.split())
    assert "Exit 0: all valid; 1: some invalid; 2: some input could not be read" in said
    assert "{EXIT" not in said


@pytest.mark.parametrize(
    ("name", "content"),
    [
        pytest.param("tab.yaml", b"a:\n\tb: 1\n", id="broken YAML"),
        pytest.param("dup.yaml", b"key: A\nkey: B\n", id="a key repeated"),
        pytest.param("bad.json", b'{\n  "name": \n}', id="broken JSON"),
        pytest.param("tags.yaml", b"Value: !Ref Bucket\n", id="another tool's YAML tags"),
        pytest.param("ansible.yml", b"- hosts: {{ group }}\n", id="a Jinja template"),
    ],
)
def test_a_file_that_does_not_parse_and_names_no_kind_is_noted_not_unreadable(
    tmp_path: Path, name: str, content: bytes
) -> None:
    (tmp_path / name).write_bytes(content)
    result = validate(name, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (reason,) = notes(result).values()
    assert reason.startswith("cannot parse ")
    assert reason.endswith(", and it names no FeedbackStore or AgentDeployment")
    assert result.stdout.splitlines()[-1].endswith("1 file not judged")


@pytest.mark.parametrize(
    "flags",
    [
        pytest.param([], id="templates and patches are left out of the previous versions too"),
        pytest.param(["--exclude", "plain"], id="so is what --exclude leaves out"),
    ],
)
def test_previous_versions_of_a_whole_repository_are_read_as_the_current_ones(
    repo: Path, flags: list[str]
) -> None:
    before = repo.parent / "before"
    shutil.copytree(repo, before)
    (before / "deploy/base/store.yaml").write_text(
        STORE.format(name="support-feedback") + "      - name: tone\n"
    )
    result = validate(*flags, ".", "--previous", str(before), cwd=repo)
    assert result.returncode == 0, result.stdout + result.stderr
    warned = [line for line in result.stdout.splitlines() if ": warning: " in line]
    assert len(warned) == 1, result.stdout  # the one change made, no store "deleted"
    assert 'score "tone" removed from human' in warned[0]
    assert warned[0].startswith("./deploy/base/store.yaml:")
