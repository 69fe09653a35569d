"""The module graph of ``air`` has no import circles, and no module defines a module-level
``__getattr__`` (issue 23 item 3, IMPL-STRUCT-1).

Every ``import`` counts: at module level, inside functions, and under ``TYPE_CHECKING`` (a
reader and mypy follow those too). A circle is a strongly connected component of more than one
module; the test prints each one. The package layers (no upward or sideways import between
packages) are import-linter's contract, run by ``tests/test_import_boundaries.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import grimp
import pytest


def import_circles(package: str) -> list[list[str]]:
    """The strongly connected components of more than one module in ``package``'s import
    graph (TYPE_CHECKING imports included), each sorted, in a stable order."""
    graph = grimp.build_graph(
        package, include_external_packages=False, exclude_type_checking_imports=False
    )
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    counter = 0

    # Tarjan's algorithm, iterative: the graph has hundreds of modules
    for root in sorted(graph.modules):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = []
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        work.append((root, sorted(graph.find_modules_directly_imported_by(root))))
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph.find_modules_directly_imported_by(nxt))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return sorted(circles)


def test_air_has_no_import_circles() -> None:
    circles = import_circles("air")
    for circle in circles:
        print("import circle:", " <-> ".join(circle))
    assert circles == []


def module_getattrs(root: Path) -> list[str]:
    """The modules under ``root`` that define ``__getattr__`` at module level (PEP 562)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "__getattr__"
            for node in tree.body
        ):
            found.append(str(path.relative_to(root.parent)))
    return found


def test_no_module_resolves_names_lazily() -> None:
    """A name is imported from the module that defines it, never through a module
    ``__getattr__`` (STYLE guideline 17)."""
    assert module_getattrs(Path(__file__).resolve().parents[1] / "air") == []


def test_a_module_getattr_is_found_and_a_class_one_is_not(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "lazy.py").write_text("def __getattr__(name):\n    raise AttributeError(name)\n")
    (package / "plain.py").write_text(
        "class A:\n    def __getattr__(self, name):\n        return 1\n"
    )
    assert module_getattrs(package) == ["pkg/lazy.py"]


def test_a_circle_through_a_function_or_type_checking_import_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check sees an import inside a function and one under ``TYPE_CHECKING``."""
    package = tmp_path / "zz_circles"
    package.mkdir()
    (package / "__init__.py").write_text('"""A package with two circles."""\n')
    (package / "a.py").write_text("from zz_circles import b\n")
    (package / "b.py").write_text("def f():\n    from zz_circles import a\n")
    (package / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from zz_circles.d import X\n"
    )
    (package / "d.py").write_text("from zz_circles.c import TYPE_CHECKING\nX = 1\n")
    (package / "e.py").write_text("from zz_circles import a\n")  # into a circle, not part of one
    monkeypatch.syspath_prepend(str(tmp_path))

    assert import_circles("zz_circles") == [
        ["zz_circles.a", "zz_circles.b"],
        ["zz_circles.c", "zz_circles.d"],
    ]
