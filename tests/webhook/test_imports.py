"""The package's modules import each other in one direction: no module is part of a cycle.

A cycle (even one hidden behind `TYPE_CHECKING`) means two modules cannot be
read, changed or tested apart; the server's app and its admission endpoint were
one. Read from the source with `ast`, so a cycle is found without importing.
"""

from __future__ import annotations

import ast
import pathlib

import webhook

ROOT = pathlib.Path(webhook.__file__).parent


def _module(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: pathlib.Path, known: set[str]) -> set[str]:
    """The package's modules `path` imports, wherever the import stands in it."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            continue
        found.update(name for name in names if name in known)
    return found


def _graph() -> dict[str, set[str]]:
    paths = {_module(path): path for path in ROOT.rglob("*.py")}
    known = set(paths)
    # A package's __init__ re-exporting its modules is not a cycle with them.
    return {
        name: {m for m in _imports(path, known) if not name.startswith(f"{m}.")}
        for name, path in paths.items()
    }


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return cycles


def test_no_module_of_the_package_imports_itself_through_others() -> None:
    assert _cycles(_graph()) == []


def test_the_finder_sees_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
