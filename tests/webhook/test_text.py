"""How every message cuts, counts and lists: one ellipsis, one plural, one list tail."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webhook.text import and_more, counted, cut, named


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        pytest.param("abcdef", 6, "abcdef", id="a text that fits is kept whole"),
        pytest.param(
            "abcdefg", 6, "abc...", id="a longer one is cut to the limit, ellipsis included"
        ),
        pytest.param("abcdefg", 2, "...", id="a limit with no room for text leaves the ellipsis"),
    ],
)
def test_cut(text: str, limit: int, expected: str) -> None:
    assert cut(text, limit) == expected


@given(st.text(), st.integers(min_value=3, max_value=200))
def test_a_cut_text_fits_its_limit_and_starts_as_the_text_did(text: str, limit: int) -> None:
    shown = cut(text, limit)
    assert len(shown) <= limit
    assert shown == text or (text.startswith(shown[:-3]) and shown.endswith("..."))


@pytest.mark.parametrize(
    ("count", "noun", "expected"),
    [
        pytest.param(1, "problem", "1 problem", id="one is singular"),
        pytest.param(0, "problem", "0 problems", id="none is plural"),
        pytest.param(2, "AgentDeployment", "2 AgentDeployments", id="a kind takes the same plural"),
    ],
)
def test_counted(count: int, noun: str, expected: str) -> None:
    assert counted(count, noun) == expected


@pytest.mark.parametrize(
    ("count", "noun", "expected"),
    [
        pytest.param(3, "", "and 3 more", id="without a noun"),
        pytest.param(1, "warning", "and 1 more warning", id="one more, singular"),
        pytest.param(2, "problem", "and 2 more problems", id="with a noun, plural"),
    ],
)
def test_and_more(count: int, noun: str, expected: str) -> None:
    assert and_more(count, noun) == expected


@pytest.mark.parametrize(
    ("names", "total", "expected"),
    [
        pytest.param(("a", "b"), 2, "a, b", id="all named: no tail"),
        pytest.param(("a", "b"), 5, "a, b and 3 more", id="the rest counted"),
    ],
)
def test_named(names: tuple[str, ...], total: int, expected: str) -> None:
    assert named(names, total) == expected
