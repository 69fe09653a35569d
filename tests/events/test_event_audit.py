"""The event audit (issue #14): every durable event type is emitted by some code path in
``air/`` or listed, with its reason, in the ONE decisions.md entry of types not emitted yet.

An emitting call site is a call of an emitter (``record``, ``new_event``, ``append``, ...)
whose first, second or third positional argument is the type's literal string, or a
module-level constant (``STATE_EVENT = "..."``) naming it. The registry, the
payload models and the projection name every type without emitting it, and ``air demo`` and
``air/testing`` play a scripted model, so none of them counts.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

from air.events.registry import default_registry

ROOT = Path(__file__).resolve().parents[2]
EMITTERS = frozenset(
    {
        "record",
        "record_end",
        "end_task",
        "_record_end",
        "_emit",
        "emit",
        "new_event",
        "append",
        "ingest",
        "publish",
    }
)
NOT_EMITTING = ("air/events/payloads.py", "air/events/registry.py", "air/events/projection.py")
SCRIPTED = ("air/cli/demo.py", "air/testing/")
ENTRY_TITLE = "durable event types not emitted yet"


def durable_types() -> frozenset[str]:
    registry = default_registry()
    return frozenset(t for t, _ in registry.list() if registry.is_durable(t))


@functools.cache
def emitted_types(durable: frozenset[str]) -> dict[str, set[str]]:
    """Durable type -> the files with an emitting call site of it (one parse of the tree for
    both tests of this module)."""
    found: dict[str, set[str]] = {}
    trees = _trees_naming(durable)
    # a constant imported from another module (``STATE_EVENT``) names the same literal
    every_constant: dict[str, object] = {}
    for tree in trees.values():
        every_constant.update(module_constants(tree))
    for rel, tree in trees.items():
        if rel in NOT_EMITTING or rel.startswith(SCRIPTED):
            continue
        constants = {**every_constant, **module_constants(tree)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name not in EMITTERS:
                continue
            for arg in node.args[:3]:
                value: object = arg.value if isinstance(arg, ast.Constant) else None
                if isinstance(arg, ast.Name):
                    value = constants.get(arg.id)
                if isinstance(value, str) and value in durable:
                    found.setdefault(value, set()).add(rel)
    return found


def _trees_naming(durable: frozenset[str]) -> dict[str, ast.Module]:
    """The parsed modules of ``air/`` whose source holds a durable type, or the name of a
    module-level constant that is one: no other module can emit one (an argument is a literal
    or a name), and parsing all 3.4 MB of them was most of this module's time."""
    sources = {
        path.relative_to(ROOT).as_posix(): path.read_text()
        for path in sorted((ROOT / "air").rglob("*.py"))
    }
    trees = {
        rel: ast.parse(text, rel)
        for rel, text in sources.items()
        if any(kind in text for kind in durable)
    }
    names = {
        name
        for tree in trees.values()
        for name, value in module_constants(tree).items()
        if value in durable
    }
    for rel, text in sources.items():
        if rel not in trees and any(re.search(rf"\b{name}\b", text) for name in names):
            trees[rel] = ast.parse(text, rel)
    return dict(sorted(trees.items()))


def module_constants(tree: ast.Module) -> dict[str, object]:
    """The module-level ``NAME = <literal>`` assignments of one module."""
    return {
        target.id: stmt.value.value
        for stmt in tree.body
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant)
        for target in stmt.targets
        if isinstance(target, ast.Name)
    }


def listed_types() -> dict[str, str]:
    """The decisions.md entry's ``- `type`: reason`` items (exactly one such entry)."""
    text = (ROOT / "docs" / "decisions.md").read_text()
    entries = re.split(r"(?m)^### ", text)
    matching = [e for e in entries if ENTRY_TITLE in e.splitlines()[0].lower()]
    assert len(matching) == 1, f"want ONE decisions.md entry titled '...{ENTRY_TITLE}'"
    items = re.findall(r"(?m)^- `([a-z.]+)`: (.+)$", matching[0])
    listed = dict(items)
    assert len(listed) == len(items), "a type is listed twice"
    return listed


def test_every_durable_type_is_emitted_or_listed_with_a_reason() -> None:
    durable = durable_types()
    emitted = emitted_types(durable)
    listed = listed_types()
    assert set(listed) <= durable, f"not durable types: {sorted(set(listed) - durable)}"
    assert all(reason.strip() for reason in listed.values())
    missing = durable - set(emitted) - set(listed)
    assert not missing, f"durable types neither emitted nor listed in decisions.md: {missing}"
    stale = {t: sorted(emitted[t]) for t in set(listed) & set(emitted)}
    assert not stale, f"listed as not emitted but now emitted (update the entry): {stale}"


def test_the_scanner_finds_known_call_sites_and_skips_the_definitions() -> None:
    durable = durable_types()
    emitted = emitted_types(durable)
    assert "air/nursery/facts.py" in emitted["task.created"]
    assert "air/session/knowledge.py" in emitted["memory.promoted"]
    assert all(not files & {*NOT_EMITTING, "air/cli/demo.py"} for files in emitted.values()), (
        emitted
    )
    assert len(durable) == len(emitted) + len(listed_types())
