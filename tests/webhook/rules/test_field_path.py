"""Field paths as a value: built step by step by the rules, said as kube-apiserver says them,
and walked by the CLI as the same steps (never parsed back from the text)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webhook.rules.field_path import Path, Step

SCORES = Path("spec").child("human").child("scores")


@pytest.mark.parametrize(
    ("path", "said"),
    [
        pytest.param(Path("spec"), "spec", id="a root is its name"),
        pytest.param(SCORES.index(1).child("name"), "spec.human.scores[1].name", id="child, index"),
        pytest.param(Path("spec", "feedback").child("mode"), "spec.feedback.mode", id="a base"),
        pytest.param(Path().child("apiVersion"), "apiVersion", id="a child of the root alone"),
        pytest.param(Path(), "", id="the root itself says nothing"),
        pytest.param(Path("spec").child("a.b[0]"), "spec.a.b[0]", id="a key is said verbatim"),
        pytest.param(
            SCORES.index(0).child("categories").index(3),
            "spec.human.scores[0].categories[3]",
            id="an index after a child after an index",
        ),
    ],
)
def test_a_path_is_said_as_kube_apiserver_says_it(path: Path, said: str) -> None:
    assert str(path) == said


def test_a_path_keeps_its_steps() -> None:
    path = SCORES.index(2).child("a.b")
    assert path.steps == ("spec", "human", "scores", 2, "a.b")
    assert path.parent.steps == ("spec", "human", "scores", 2)
    assert Path().parent == Path()


def test_paths_are_values() -> None:
    assert SCORES.index(1) == Path("spec", "human", "scores").index(1)
    assert SCORES.index(1) != SCORES.child("1")
    assert len({SCORES.index(1), Path("spec", "human", "scores").index(1)}) == 1


_STEPS = st.lists(st.one_of(st.text(min_size=1), st.integers(min_value=0)), max_size=8)


@given(st.text(min_size=1), _STEPS)
def test_a_path_is_said_as_the_rules_wrote_it_as_text(root: str, steps: list[Step]) -> None:
    """The text is the one `f"{path}.{name}"` and `f"{path}[{i}]"` built before paths were
    values: messages and causes are unchanged."""
    path, text = Path(root), root
    for step in steps:
        if isinstance(step, int):
            path, text = path.index(step), f"{text}[{step}]"
        else:
            path, text = path.child(step), f"{text}.{step}"
    assert str(path) == text
    assert path.steps == (root, *steps)
