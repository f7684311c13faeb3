"""The text surgery under `migrate --in-place` (webhook/cli/manifest_edit.py), as properties: for
any value and any common layout of the agent, the edited text decodes to the agent with the entry
replaced, and every character outside the entry is where it was."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from webhook.cli.manifest_edit import Edit, apply, replace_entry
from webhook.cli.manifest_files import Document, parse_text

# Strings YAML must quote or escape: indicators, YAML 1.1 booleans, numbers, unicode, breaks.
TEXT = st.one_of(
    st.sampled_from(
        [
            "yes",
            "no",
            "on",
            "null",
            "~",
            "1e3",
            "0x1F",
            "2024-01-01",
            "- a",
            "#x",
            "a: b",
            "'q'",
            '"q"',
            " lead",
            "trail ",
            "multi\nline",
            "tab\tin",
            "é€😀",
            "",
            "*alias",
            "&anchor",
            "!tag",
            "%",
            "@",
            "`",
        ]
    ),
    st.text(max_size=20),
)
SCORE = st.fixed_dictionaries(
    {"name": TEXT},
    optional={
        "dataType": st.sampled_from(["NUMERIC", "BOOLEAN", "CATEGORICAL"]),
        "categories": st.lists(TEXT, max_size=4),
    },
)
SPEC = st.fixed_dictionaries(
    {},
    optional={
        "mode": st.sampled_from(["Enforce", "Monitor"]),
        "human": st.fixed_dictionaries({"scores": st.lists(SCORE, min_size=1, max_size=3)}),
        "external": st.lists(st.fixed_dictionaries({"name": TEXT, "score": SCORE}), max_size=3),
    },
)
COMMENT = st.sampled_from(["", "  # the shared store", "    #no space"])


def block_agent(step: int, before: list[str], after: list[str], comment: str, crlf: bool) -> str:
    pad = " " * step
    lines = [
        "apiVersion: agents.ctxmesh.ai/v1beta1",
        "kind: AgentDeployment",
        "metadata:",
        f"{pad}name: a  # kept",
        "spec:",
    ]
    lines += [f"{pad}{key}: 1" for key in before]
    lines += [f"{pad}feedbackStoreRef: store{comment}"]
    lines += [f"{pad}{key}: 2  # after" for key in after]
    lines += ["# trailing comment", ""]
    return ("\r\n" if crlf else "\n").join(lines)


def edit_of(text: str, value: object) -> Edit:
    (document,) = [d for d in parse_text("agent.yaml", text) if isinstance(d, Document)]
    root = document.node
    assert isinstance(root, yaml.MappingNode)
    spec_key, spec = next((k, v) for k, v in root.value if k.value == "spec")
    edit = replace_entry(text, spec_key, spec, "feedbackStoreRef", "feedback", value)
    assert edit is not None
    return edit


def decoded(text: str) -> Any:
    (document,) = list(parse_text("agent.yaml", text))
    assert isinstance(document, Document), document
    return document.content


KEYS = st.lists(st.sampled_from(["model", "replicas", "image", "zone"]), max_size=2, unique=True)


@settings(max_examples=300)
@given(
    spec=SPEC,
    step=st.sampled_from([2, 4]),
    before=KEYS,
    after=KEYS,
    comment=COMMENT,
    crlf=st.booleans(),
)
def test_a_block_entry_is_replaced_in_place_and_nothing_else_moves(
    spec: dict[str, Any],
    step: int,
    before: list[str],
    after: list[str],
    comment: str,
    crlf: bool,
) -> None:
    after = [key for key in after if key not in before]
    text = block_agent(step, before, after, comment, crlf)
    edit = edit_of(text, spec)
    edited = apply(text, [edit])
    expected = decoded(text)
    expected["spec"] = {
        ("feedback" if k == "feedbackStoreRef" else k): (spec if k == "feedbackStoreRef" else v)
        for k, v in expected["spec"].items()
    }
    assert decoded(edited) == expected
    assert list(decoded(edited)["spec"]) == list(expected["spec"]), "the key keeps its place"
    assert edited[: edit.start] == text[: edit.start]
    assert edited.endswith(text[edit.end :])
    assert (
        comment.strip() == ""
        or comment.strip() in edited.splitlines()[edited[: edit.start].count("\n")]
    )
    assert ("\r\n" in edited) is crlf
    if crlf:
        assert "\n" not in edited.replace("\r\n", "")


@settings(max_examples=200)
@given(spec=SPEC, first=st.booleans())
def test_a_flow_entry_is_replaced_with_flow_json(spec: dict[str, Any], first: bool) -> None:
    entries = ["feedbackStoreRef: store", "replicas: 2"]
    text = (
        "apiVersion: agents.ctxmesh.ai/v1beta1\nkind: AgentDeployment\nmetadata: {name: a}\n"
        f"spec: {{{', '.join(entries if first else entries[::-1])}}}\n"
    )
    edit = edit_of(text, spec)
    edited = apply(text, [edit])
    assert decoded(edited)["spec"] == {"feedback": spec, "replicas": 2}
    assert edited.count("\n") == text.count("\n"), "one line, as the flow mapping was"
