"""No file of the repository points at a document it does not have, or at an issue number.

"SPEC §3" names a specification this repository does not ship, and "issue 27" a thread a
reader of a clone cannot open; both leave the reason somewhere else. A comment, docstring
or doc says the reason in place (or links to a file that is here, which test_links.py
checks). Every file of the repository is read, tests included."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

import pytest

from tests.docs.repo_files import ROOT, repo_files

POINTERS = {
    "a section of a specification the repository does not ship": re.compile(
        r"\bSPEC\b[\s#*/\"]*(?:§|\.md\b)"
    ),
    "an issue number": re.compile(r"\bissues?\s+#?\d+\b", re.IGNORECASE),
}
THIS_FILE = PurePosixPath(__file__).relative_to(ROOT.as_posix())


def pointers(text: str) -> list[tuple[int, str, str]]:
    """Each pointer in a text: its line, what it points at, the words that point."""
    found = []
    for what, pattern in POINTERS.items():
        for match in pattern.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append((line, what, " ".join(match.group(0).split())))
    return sorted(found)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("# see SPEC §6.", [(1, "SPEC §")], id="a section of the spec"),
        pytest.param("(SPEC\n# §7)", [(1, "SPEC # §")], id="a section split over a comment"),
        pytest.param("read SPEC.md first", [(1, "SPEC.md")], id="the spec as a file"),
        pytest.param("as Issue 15 asked", [(1, "Issue 15")], id="an issue by number"),
        pytest.param("two\nissue #27 said", [(2, "issue #27")], id="an issue with a hash"),
        pytest.param("SPEC_PATH = 'spec'", [], id="a name that starts with SPEC is no pointer"),
        pytest.param("RFC 5280 §4.1", [], id="a section of a published standard is fine"),
        pytest.param("an issue with 3 parts", [], id="the word issue alone is fine"),
    ],
)
def test_what_counts_as_a_pointer(text: str, expected: list[tuple[int, str]]) -> None:
    assert [(line, words) for line, _, words in pointers(text)] == expected


def test_no_file_points_at_a_missing_document_or_an_issue_number() -> None:
    found = [
        f"{path}:{line}: {words} ({what})"
        for path in repo_files()
        if path != THIS_FILE
        for line, what, words in pointers((ROOT / path).read_bytes().decode(errors="replace"))
    ]
    assert found == []
