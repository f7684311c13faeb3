"""`validate -o github`: workflow commands the Actions runner turns into annotations."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from webhook.cli.main import main

COMMAND = re.compile(r"^::(error|warning) ([^:]*)::(.*)$")


def unescape(text: str) -> str:
    for escaped, raw in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        text = text.replace(escaped, raw)
    return text


def parse(line: str) -> tuple[str, dict[str, str], str]:
    """Split a workflow command as the runner does: properties on `,` and the first `=`."""
    match = COMMAND.match(line)
    assert match is not None, line
    level, props, message = match.groups()
    properties = dict(p.split("=", 1) for p in props.split(","))
    return level, {k: unescape(v) for k, v in properties.items()}, unescape(message)


def test_problems_and_warnings_are_annotations_with_escaped_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "a,b:c"
    folder.mkdir()
    path = folder / "s.yaml"
    path.write_text(
        "apiVersion: agents.ctxmesh.ai/v1beta1\nkind: FeedbackStore\n"
        "metadata: {name: s, namespace: a}\n"
        'spec: {mode: Monitor, human: {scores: [{name: "50%,\\r\\nx:"}, {name: "50%,\\r\\nx:"}]}}\n'
    )
    assert main(["validate", "-o", "github", str(path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3
    for line in out[:2]:
        assert "\r" not in line
        assert "\n" not in line
        assert line.count("::") == 2  # no unescaped `::` in a property
    level, props, message = parse(out[0])
    assert level == "error"
    assert props == {
        "file": str(path),
        "line": "4",
        "col": "69",
        "title": "FeedbackStore a/s: FieldValueDuplicate",
    }
    assert message.startswith('a/s: spec.human.scores[1].name: Duplicate value: "50%,\\r\\nx:"')
    level, props, message = parse(out[1])
    assert (level, props["line"], props["col"]) == ("warning", "4", "14")
    assert message.startswith("a/s: spec.mode: Monitor")
    assert out[2] == "1 FeedbackStore checked, 1 invalid, 0 other documents skipped"


def test_data_and_properties_escape_as_the_runner_requires() -> None:
    from webhook.cli.validate_output import command

    line = command("error", "100%\r\nok: a,b", file="x:y,z%.yaml", line=3)
    assert line == "::error file=x%3Ay%2Cz%25.yaml,line=3::100%25%0D%0Aok: a,b"


def test_an_unreadable_file_is_an_error_annotation_at_the_parsers_position(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("kind: FeedbackStore\nspec: [\n  a: b\n")
    assert main(["validate", "-o", "github", str(path)]) == 2
    level, props, message = parse(capsys.readouterr().out.splitlines()[0])
    assert (level, props["file"], props["line"], props["col"]) == ("error", str(path), "4", "1")
    assert message.startswith("cannot parse YAML")
