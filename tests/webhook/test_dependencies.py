"""Every library the package imports is declared in pyproject.toml, at a version that has what we
call: a library installed only because another one depends on it can go, or change, with that
other one's next release."""

from __future__ import annotations

import ast
import importlib.metadata
import pathlib
import sys
import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import webhook

ROOT = pathlib.Path(webhook.__file__).parent
PYPROJECT = ROOT.parent / "pyproject.toml"


def _declared() -> dict[str, Requirement]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    requirements = (Requirement(text) for text in project["dependencies"])
    return {canonicalize_name(requirement.name): requirement for requirement in requirements}


def _imported_top_level() -> set[str]:
    found: set[str] = set()
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(alias.name.partition(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module.partition(".")[0])
    return found - set(sys.stdlib_module_names) - {"webhook"}


def test_every_library_the_package_imports_is_a_declared_dependency() -> None:
    distributions = importlib.metadata.packages_distributions()
    declared = _declared()
    undeclared = {
        module: distributions.get(module)
        for module in _imported_top_level()
        if not {canonicalize_name(name) for name in distributions.get(module, ())} & set(declared)
    }
    assert undeclared == {}


@pytest.mark.parametrize(
    ("library", "last_without", "first_with"),
    [
        pytest.param(
            "urllib3", "2.2.3", "2.3.0", id="urllib3 has HTTPResponse.shutdown (ends a watch read)"
        )
    ],
)
def test_a_library_is_declared_no_older_than_what_we_call_needs(
    library: str, last_without: str, first_with: str
) -> None:
    specifier = _declared()[library].specifier
    assert last_without not in specifier
    assert first_with in specifier
