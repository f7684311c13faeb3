"""`feedbackstore-webhook migrate`, end to end through the installed console script: real files,
real processes, real exit codes, as a GitOps repository is migrated from `spec.feedbackStoreRef`
to the inline `spec.feedback`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.rules_builders import channel, feedbackstore, human, score

SCRIPT = Path(sys.executable).with_name("feedbackstore-webhook")

STORE_TEXT = """\
# the support team's store
apiVersion: agents.ctxmesh.ai/v1beta1
kind: FeedbackStore
metadata:
  name: support-feedback
  namespace: agents
spec:
  human:
    scores:
      - name: thumbs
        dataType: BOOLEAN
  external:
    - name: csat-webhook
      score: {name: csat}
"""
STORE_SPEC = {
    "human": {"scores": [{"name": "thumbs", "dataType": "BOOLEAN"}]},
    "external": [{"name": "csat-webhook", "score": {"name": "csat"}}],
}
AGENTS_TEXT = """\
# agents of the support team
apiVersion: agents.ctxmesh.ai/v1beta1
kind: AgentDeployment
metadata:
  name: support-bot  # the main bot
  namespace: agents
spec:
  model: gpt-x
  feedbackStoreRef: support-feedback  # shared with triage
  replicas: 2
---
# the deprecated version, flow style
apiVersion: agents.ctxmesh.ai/v1alpha1
kind: AgentDeployment
metadata: {name: triage-bot, namespace: agents}
spec: {feedbackStoreRef: support-feedback, model: small}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: unrelated, namespace: agents}
data: {feedbackStoreRef: support-feedback}
"""
# What --in-place makes of AGENTS_TEXT: the two entries replaced, every other character kept.
AGENTS_MIGRATED = """\
# agents of the support team
apiVersion: agents.ctxmesh.ai/v1beta1
kind: AgentDeployment
metadata:
  name: support-bot  # the main bot
  namespace: agents
spec:
  model: gpt-x
  feedback:  # shared with triage
    human:
      scores:
      - name: thumbs
        dataType: BOOLEAN
    external:
    - name: csat-webhook
      score:
        name: csat
  replicas: 2
---
# the deprecated version, flow style
apiVersion: agents.ctxmesh.ai/v1alpha1
kind: AgentDeployment
metadata: {name: triage-bot, namespace: agents}
spec: {feedback: {"human":{"scores":[{"name":"thumbs","dataType":"BOOLEAN"}]},\
"external":[{"name":"csat-webhook","score":{"name":"csat"}}]}, model: small}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: unrelated, namespace: agents}
data: {feedbackStoreRef: support-feedback}
"""


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), "migrate", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def validate(*paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), "validate", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def agent(
    name: str, ref: object = "support-feedback", namespace: str | None = "agents", **spec: object
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    body_spec: dict[str, Any] = {"feedbackStoreRef": ref, **spec} if ref is not None else spec
    return {
        "apiVersion": "agents.ctxmesh.ai/v1beta1",
        "kind": "AgentDeployment",
        "metadata": metadata,
        "spec": body_spec,
    }


def store(
    name: str = "support-feedback", spec: object = None, namespace: str | None = "agents"
) -> dict[str, Any]:
    body = feedbackstore(STORE_SPEC if spec is None else spec, name=name)
    if namespace is None:
        del body["metadata"]["namespace"]
    else:
        body["metadata"]["namespace"] = namespace
    return body


def write(path: Path, *docs: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def repository(tmp_path: Path) -> Path:
    """A GitOps directory: the store in one file, two agents and a ConfigMap in another."""
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "store.yaml").write_text(STORE_TEXT)
    (tmp_path / "repo" / "agents.yaml").write_text(AGENTS_TEXT)
    return tmp_path / "repo"


def documents(text: str) -> list[Any]:
    return list(yaml.safe_load_all(text))


def test_in_place_replaces_only_the_reference_and_keeps_every_other_character(
    tmp_path: Path,
) -> None:
    repo = repository(tmp_path)
    result = run("--in-place", str(repo))
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert (repo / "agents.yaml").read_text() == AGENTS_MIGRATED
    assert (repo / "store.yaml").read_text() == STORE_TEXT, "a store is never changed or deleted"


def test_stdout_has_each_migrated_agent_once_as_multi_document_yaml(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    result = run(str(repo))
    assert result.returncode == 0, result.stderr
    printed = documents(result.stdout)
    assert [d["metadata"]["name"] for d in printed] == ["support-bot", "triage-bot"]
    for document in printed:
        assert document["spec"]["feedback"] == STORE_SPEC
        assert "feedbackStoreRef" not in document["spec"]
    assert list(printed[0]["spec"]) == ["model", "feedback", "replicas"], "order kept"
    assert "  name: support-bot  # the main bot\n" in result.stdout, "comments kept"
    assert (repo / "agents.yaml").read_text() == AGENTS_TEXT, "without --in-place no file changes"


def test_the_migrated_agents_pass_validate_as_agents_with_an_inline_declaration(
    tmp_path: Path,
) -> None:
    repo = repository(tmp_path)
    printed = run(str(repo))
    assert printed.returncode == 0, printed.stderr
    (tmp_path / "out.yaml").write_text(printed.stdout)
    checked = validate(tmp_path / "out.yaml")
    assert (checked.returncode, checked.stdout) == (
        0,
        "2 AgentDeployments checked, 0 invalid, 0 other documents skipped\n",
    )
    assert run("--in-place", str(repo)).returncode == 0
    checked = validate(repo)
    assert (checked.returncode, checked.stdout) == (
        0,
        ("1 FeedbackStore and 2 AgentDeployments checked, 0 invalid, 1 other document skipped\n"),
    )


def test_stderr_says_what_was_migrated_shared_and_removable(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    result = run(str(repo))
    agents, stores = repo / "agents.yaml", repo / "store.yaml"
    assert result.stderr.splitlines() == [
        f"{agents}:9:21: AgentDeployment agents/support-bot: spec.feedbackStoreRef: now "
        f"spec.feedback, the spec of FeedbackStore agents/support-feedback ({stores}:2:1)",
        f"{agents}:16:26: AgentDeployment agents/triage-bot: spec.feedbackStoreRef: now "
        f"spec.feedback, the spec of FeedbackStore agents/support-feedback ({stores}:2:1)",
        f"{stores}:2:1: FeedbackStore agents/support-feedback: copied into 2 AgentDeployments "
        "(support-bot, triage-bot): each now holds its own declaration; a later change is made "
        "in each",
        f"{stores}:2:1: FeedbackStore agents/support-feedback: removable: no AgentDeployment of "
        "the inputs references it any more (migrate deletes nothing; agents outside the inputs "
        "may still name it)",
        "migrate: 2 AgentDeployments migrated, 0 not migrated, 1 FeedbackStore removable",
    ]


def test_a_store_still_referenced_by_an_agent_not_migrated_is_not_removable(
    tmp_path: Path,
) -> None:
    path = write(tmp_path / "all.yaml", store(), agent("ok"), agent("both", feedback=STORE_SPEC))
    result = run(str(path))
    assert result.returncode == 1
    assert (
        "agents/both: spec.feedbackStoreRef: spec.feedback is already set beside it: keep "
        "one of the two by hand (not migrated)" in result.stderr
    )
    assert "removable:" not in result.stderr
    assert [d["metadata"]["name"] for d in documents(result.stdout)] == ["ok"]


def test_a_reference_to_a_store_not_in_the_inputs_exits_one_and_the_rest_is_migrated(
    tmp_path: Path,
) -> None:
    path = write(tmp_path / "all.yaml", store(), agent("ok"), agent("lost", "nowhere"))
    result = run("--in-place", str(path))
    assert result.returncode == 1
    assert (
        f"{path}:30:21: AgentDeployment agents/lost: spec.feedbackStoreRef: FeedbackStore "
        "agents/nowhere is not among the inputs: add the file that declares it (not migrated)"
    ) in result.stderr.splitlines()
    ok, lost = documents(path.read_text())[1:]
    assert ok["spec"] == {"feedback": STORE_SPEC}
    assert lost["spec"] == {"feedbackStoreRef": "nowhere"}
    assert result.stderr.splitlines()[-1] == (
        "migrate: 1 AgentDeployment migrated, 1 not migrated, 1 FeedbackStore removable"
    )


def test_an_invalid_store_is_not_migrated_and_its_problems_are_printed_as_validate_prints_them(
    tmp_path: Path,
) -> None:
    bad = write(tmp_path / "bad.yaml", store(spec=human(score("thumbs"), score("thumbs"))))
    agents = write(tmp_path / "agents.yaml", agent("a"), agent("b"))
    result = run("--in-place", str(bad), str(agents))
    assert result.returncode == 1
    said = validate(bad).stdout.splitlines()[:-1]  # validate's lines, without its summary
    assert said == [
        f"{bad}:10:13: agents/support-feedback: spec.human.scores[1].name: Duplicate value: "
        '"thumbs": human score names must be unique (first declared at spec.human.scores[0].name)'
    ]
    lines = result.stderr.splitlines()
    assert lines[0] == said[0], "printed once, however many agents name the store"
    assert lines[1:3] == [
        f"{agents}:{line}:21: AgentDeployment agents/{name}: spec.feedbackStoreRef: FeedbackStore "
        f"agents/support-feedback is invalid ({bad}:1:1, problems above): fix it, then migrate "
        "again (not migrated)"
        for name, line in (("a", 7), ("b", 15))
    ]
    assert agents.read_text() == yaml.safe_dump_all([agent("a"), agent("b")], sort_keys=False)


def test_a_store_with_warnings_is_migrated_and_its_warnings_are_not_hidden(tmp_path: Path) -> None:
    path = write(tmp_path / "all.yaml", store(spec={"mode": "Monitor", **STORE_SPEC}), agent("a"))
    result = run(str(path))
    assert result.returncode == 0, result.stderr
    assert documents(result.stdout)[0]["spec"]["feedback"]["mode"] == "Monitor"


NAMESPACES = [
    pytest.param(None, None, (), True, id="neither names a namespace: both in kubectl's default"),
    pytest.param("default", None, (), True, id="an agent in default finds a store without one"),
    pytest.param(None, None, ("-n", "team"), True, id="-n places both objects without one"),
    pytest.param(
        "default",
        None,
        ("-n", "team"),
        False,
        id="-n team puts the store in team, away from an agent in default",
    ),
    pytest.param("agents", "other", (), False, id="a store of another namespace is not found"),
]


@pytest.mark.parametrize(("agent_ns", "store_ns", "flags", "found"), NAMESPACES)
def test_the_store_is_looked_up_in_the_agents_namespace(
    tmp_path: Path,
    agent_ns: str | None,
    store_ns: str | None,
    flags: tuple[str, ...],
    found: bool,
) -> None:
    path = write(tmp_path / "all.yaml", store(namespace=store_ns), agent("a", namespace=agent_ns))
    result = run(*flags, str(path))
    assert result.returncode == (0 if found else 1), result.stderr
    assert bool(result.stdout) is found


WRONG_REFS = [
    pytest.param(
        {"name": "support-feedback"},
        'Invalid value: "object": must be of type string',
        id="a mapping",
    ),
    pytest.param(
        ["support-feedback"], 'Invalid value: "array": must be of type string', id="a list"
    ),
    pytest.param(7, 'Invalid value: "integer": must be of type string', id="a number"),
    pytest.param(True, 'Invalid value: "boolean": must be of type string', id="a boolean"),
    pytest.param("", "empty: it names no FeedbackStore", id="an empty string"),
]


@pytest.mark.parametrize(("ref", "said"), WRONG_REFS)
def test_a_reference_of_the_wrong_type_is_named_and_left_alone(
    tmp_path: Path, ref: object, said: str
) -> None:
    path = write(tmp_path / "all.yaml", store(), agent("a", ref))
    before = path.read_text()
    result = run("--in-place", str(path))
    assert result.returncode == 1
    assert f"AgentDeployment agents/a: spec.feedbackStoreRef: {said} (not migrated)" in (
        result.stderr
    )
    assert path.read_text() == before
    assert "Traceback" not in result.stderr


def test_a_null_reference_is_no_reference(tmp_path: Path) -> None:
    path = write(tmp_path / "all.yaml", store(), agent("a", None, feedbackStoreRef=None))
    result = run(str(path))
    assert (result.returncode, result.stdout) == (0, "")


# "billion laughs": nine levels of nine aliases each
BOMB = (
    "a: &a ["
    + ",".join(['"lol"'] * 9)
    + "]\n"
    + "".join(
        f"{c}: &{c} [{','.join([f'*{p}'] * 9)}]\n"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    )
).encode()
HOSTILE = [
    pytest.param(
        "bad.yaml",
        b"kind: AgentDeployment\nspec: [1\n",
        "bad.yaml:3:1: cannot parse YAML: ",
        id="malformed YAML names the file and line",
    ),
    pytest.param(
        "bomb.yaml",
        BOMB,
        "bomb.yaml:1: cannot parse YAML: document 1: excessive aliasing",
        id="an alias bomb is refused as kubectl refuses it, without expanding it",
    ),
    pytest.param(
        "loop.yaml",
        b"spec: &s {again: *s}\n",
        "an alias refers to a node that contains it",
        id="an alias inside its own anchor is refused",
    ),
    pytest.param(
        "huge.yaml",
        b"#" * (64 * 2**20 + 1),
        "huge.yaml: larger than 64 MiB: split it",
        id="a file past 64 MiB is refused unread",
    ),
    pytest.param(
        "deep.yaml",
        b"a: " + b"[" * 100_000 + b"]" * 100_000,
        "cannot parse YAML",
        id="absurd nesting is refused",
    ),
]


@pytest.mark.parametrize(("name", "content", "said"), HOSTILE)
def test_unreadable_input_exits_two_and_nothing_is_written(
    tmp_path: Path, name: str, content: bytes, said: str
) -> None:
    good = write(tmp_path / "good.yaml", store(), agent("a"))
    before = good.read_text()
    (tmp_path / name).write_bytes(content)
    result = run("--in-place", str(tmp_path))
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert lines[0].startswith(f"feedbackstore-webhook: error: {tmp_path}/")
    assert said in lines[0]
    assert lines[1] == "migrate: nothing written: every input must be readable"
    assert good.read_text() == before, "an unreadable input may hold agents: nothing is written"
    assert "Traceback" not in result.stderr


def test_in_place_refuses_stdin_and_stdin_alone_prints(tmp_path: Path) -> None:
    stream = yaml.safe_dump_all([store(), agent("a")], sort_keys=False)
    refused = run("--in-place", "-", stdin=stream)
    assert refused.returncode == 2
    assert refused.stderr == "migrate: --in-place cannot rewrite stdin (-)\n"
    printed = run("-", stdin=stream)
    assert printed.returncode == 0, printed.stderr
    assert documents(printed.stdout)[0]["spec"] == {"feedback": STORE_SPEC}


def test_a_json_file_stays_json_with_its_layout(tmp_path: Path) -> None:
    write(tmp_path / "store.yaml", store())
    path = tmp_path / "agent.json"
    path.write_text(
        '{\n  "apiVersion": "agents.ctxmesh.ai/v1beta1",\n  "kind": "AgentDeployment",\n'
        '  "metadata": {"name": "a", "namespace": "agents"},\n  "spec": {\n'
        '    "feedbackStoreRef": "support-feedback",\n    "replicas": 1\n  }\n}\n'
    )
    result = run("--in-place", str(tmp_path))
    assert result.returncode == 0, result.stderr
    text = path.read_text()
    assert text.startswith('{\n  "apiVersion": "agents.ctxmesh.ai/v1beta1",\n')
    assert '    "feedback": {\n      "human": {\n' in text
    assert text.endswith('    },\n    "replicas": 1\n  }\n}\n')
    assert json.loads(text)["spec"] == {"feedback": STORE_SPEC, "replicas": 1}


def test_crlf_line_endings_and_a_byte_order_mark_are_kept(tmp_path: Path) -> None:
    write(tmp_path / "store.yaml", store())
    path = tmp_path / "agent.yaml"
    text = yaml.safe_dump(agent("a"), sort_keys=False)
    path.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    result = run("--in-place", str(tmp_path))
    assert result.returncode == 0, result.stderr
    raw = path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbfapiVersion:")
    assert b"\n" not in raw.replace(b"\r\n", b""), "every line still ends in CRLF"
    assert yaml.safe_load(raw.decode("utf-8-sig"))["spec"] == {"feedback": STORE_SPEC}


def test_a_reference_written_through_a_merge_key_is_written_whole_and_said(
    tmp_path: Path,
) -> None:
    write(tmp_path / "store.yaml", store())
    path = tmp_path / "agents.yaml"
    path.write_text(
        "# shared defaults\nbase: &base {feedbackStoreRef: support-feedback}\n---\n"
        "apiVersion: agents.ctxmesh.ai/v1beta1\nkind: AgentDeployment\n"
        "metadata: {name: a, namespace: agents}\nspec:\n  <<: {feedbackStoreRef: support-feedback}"
        "\n  replicas: 1  # one\n"
    )
    result = run("--in-place", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert f"{path}: document 2: written whole from its object (comments in it are not kept)" in (
        result.stderr.splitlines()
    )
    first, second = documents(path.read_text())
    assert first == {"base": {"feedbackStoreRef": "support-feedback"}}, "other documents kept"
    assert second["spec"] == {"feedback": STORE_SPEC, "replicas": 1}
    assert path.read_text().startswith("# shared defaults\nbase: &base")


def test_agents_inside_a_kubectl_list_are_migrated(tmp_path: Path) -> None:
    items = {"apiVersion": "v1", "kind": "List", "items": [store(), agent("a"), agent("b")]}
    path = write(tmp_path / "list.yaml", items)
    result = run("--in-place", str(path))
    assert result.returncode == 0, result.stderr
    listed = yaml.safe_load(path.read_text())["items"]
    assert listed[0] == store()
    assert [item["spec"] for item in listed[1:]] == [{"feedback": STORE_SPEC}] * 2


def test_the_copied_spec_has_no_anchors_even_when_the_store_used_them(tmp_path: Path) -> None:
    path = tmp_path / "all.yaml"
    path.write_text(
        "apiVersion: agents.ctxmesh.ai/v1beta1\nkind: FeedbackStore\n"
        "metadata: {name: s, namespace: agents}\nspec:\n  human:\n    scores:\n"
        "      - {name: mood, dataType: CATEGORICAL, categories: &moods [happy, sad]}\n"
        "      - {name: tone, dataType: CATEGORICAL, categories: *moods}\n---\n"
        + yaml.safe_dump(agent("a", "s"), sort_keys=False)
    )
    result = run(str(path))
    assert result.returncode == 0, result.stderr
    assert "&" not in result.stdout
    assert "*" not in result.stdout
    scores = documents(result.stdout)[0]["spec"]["feedback"]["human"]["scores"]
    assert [s["categories"] for s in scores] == [["happy", "sad"]] * 2


def test_nothing_to_migrate_prints_nothing_and_exits_zero(tmp_path: Path) -> None:
    path = write(tmp_path / "all.yaml", store(), agent("inline", None, feedback=STORE_SPEC))
    result = run(str(path))
    assert (result.returncode, result.stdout) == (0, "")
    assert result.stderr == (
        "migrate: 0 AgentDeployments migrated, 0 not migrated, 0 FeedbackStores removable\n"
    )


def test_every_store_spec_the_rules_accept_is_copied_exactly(tmp_path: Path) -> None:
    specs = [
        {"mode": "Enforce", **human(score("thumbs", dataType="BOOLEAN"))},
        {"external": [channel("zendesk", "csat", dataType="NUMERIC")]},
        {
            **human(score("mood", dataType="CATEGORICAL", categories=["a", "b: c", "#x", "'q'"])),
            "external": [channel(" spaced ", 'quoted "name"')],
        },
    ]
    stores = [store(f"s{i}", spec) for i, spec in enumerate(specs)]
    agents = [agent(f"a{i}", f"s{i}") for i in range(len(specs))]
    path = write(tmp_path / "all.yaml", *stores, *agents)
    result = run("--in-place", str(path))
    assert result.returncode == 0, result.stderr
    migrated = documents(path.read_text())[len(specs) :]
    assert [a["spec"]["feedback"] for a in migrated] == specs


def test_a_file_named_twice_is_read_once(tmp_path: Path) -> None:
    path = write(tmp_path / "all.yaml", store(), agent("a"))
    result = run("--in-place", str(tmp_path), str(path), str(tmp_path / "." / "all.yaml"))
    assert result.returncode == 0, result.stderr
    assert documents(path.read_text())[1]["spec"] == {"feedback": STORE_SPEC}
