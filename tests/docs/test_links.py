"""Every relative link in the repository's Markdown resolves: to a file or folder of the
repository, and its `#anchor` to a heading of the file it names.

The docs are split over README.md, docs/ and bench/README.md and link into one another
(and code comments and messages name their sections); a heading renamed or a page moved
would leave a link that GitHub renders and nobody follows. The slug rules are tested on
their own first, so a link is judged as GitHub resolves it."""

from __future__ import annotations

from pathlib import PurePosixPath

import pytest

from tests.docs.markdown_links import Link, anchors, relative_links, resolve, slug
from tests.docs.repo_files import ROOT, repo_dirs, repo_files


@pytest.mark.parametrize(
    ("heading", "expected"),
    [
        pytest.param("Quick start", "quick-start", id="words are lowercased and joined by -"),
        pytest.param(
            "Path 1: without cert-manager (the `certs` command)",
            "path-1-without-cert-manager-the-certs-command",
            id="punctuation is dropped and code keeps its text",
        ),
        pytest.param(
            "Migrate to the inline form (`spec.feedback`)",
            "migrate-to-the-inline-form-specfeedback",
            id="a dot inside code is dropped too",
        ),
        pytest.param("Limits, and why", "limits-and-why", id="a comma is dropped"),
        pytest.param(
            "Hostile reviews: `attack.py`, `trim_ab.py`",
            "hostile-reviews-attackpy-trim_abpy",
            id="an underscore is kept",
        ),
        pytest.param(
            "What the CRD alone refuses (real kube-apiserver v1.37.2)",
            "what-the-crd-alone-refuses-real-kube-apiserver-v1372",
            id="digits are kept and version dots dropped",
        ),
        pytest.param("See [the rules](rules.md)", "see-the-rules", id="a link counts by its text"),
        pytest.param("Start → ready", "start--ready", id="a symbol goes but both spaces stay"),
    ],
)
def test_a_heading_slugs_as_github_slugs_it(heading: str, expected: str) -> None:
    assert slug(heading) == expected


def test_repeated_headings_are_numbered_in_document_order() -> None:
    text = "# Flags\n## Flags\n```\n# Flags (in code: not a heading)\n```\n### Flags\n"
    assert anchors(text) == {"flags", "flags-1", "flags-2"}


def test_links_in_code_and_to_urls_are_not_checked() -> None:
    text = (
        "[a](docs/a.md#x) and `[b](nowhere.md)` and [c](https://example.invalid/x)\n"
        "```\n[d](nowhere.md)\n```\n[e]: ../e.md\n[f](#local)\n"
    )
    assert list(relative_links(text)) == [
        Link(1, "docs/a.md", "x"),
        Link(5, "../e.md", None),
        Link(6, "", "local"),
    ]


@pytest.mark.parametrize(
    ("source", "target", "expected"),
    [
        pytest.param("README.md", "docs/install.md", "docs/install.md", id="from the root"),
        pytest.param("docs/install.md", "../README.md", "README.md", id="up from docs"),
        pytest.param("docs/install.md", "webhook.md", "docs/webhook.md", id="beside it"),
        pytest.param("docs/install.md", "", "docs/install.md", id="an anchor alone is the file"),
        pytest.param("README.md", "../outside.md", "../outside.md", id="out of the repository"),
    ],
)
def test_a_link_resolves_from_its_file(source: str, target: str, expected: str) -> None:
    assert resolve(PurePosixPath(source), Link(1, target, None)) == PurePosixPath(expected)


def broken_links() -> list[str]:
    files = repo_files()
    known = set(files) | repo_dirs(files)
    markdown = [path for path in files if path.suffix == ".md"]
    offered = {path: anchors((ROOT / path).read_text(encoding="utf-8")) for path in markdown}
    broken = []
    for source in markdown:
        for link in relative_links((ROOT / source).read_text(encoding="utf-8")):
            target = resolve(source, link)
            where = f"{source}:{link.line}: {link.path}{'#' + link.anchor if link.anchor else ''}"
            if target not in known:
                broken.append(f"{where}: no such file")
            elif link.anchor is not None and link.anchor not in offered.get(target, {link.anchor}):
                broken.append(f"{where}: {target} has no heading with that anchor")
    return broken


def test_every_relative_link_and_anchor_in_the_docs_resolves() -> None:
    assert broken_links() == []


def test_every_page_of_the_docs_is_on_the_readme_map() -> None:
    """A page nobody links to is a page nobody finds: README.md's map names each one."""
    readme = PurePosixPath("README.md")
    linked = {
        resolve(readme, link)
        for link in relative_links((ROOT / readme).read_text(encoding="utf-8"))
    }
    pages = {path for path in repo_files() if path.parent == PurePosixPath("docs")}
    assert pages, "docs/ has no pages"
    assert pages - linked == set()
