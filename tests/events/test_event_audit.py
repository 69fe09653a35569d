"""The event audit (issue #14): every durable event type is emitted by some code path in
``air/`` or listed, with its reason, in the ONE decisions.md entry of types not emitted yet.

An emitting call site is a call of an emitter (``record``, ``new_event``, ``append``, ...)
whose first, second or third positional argument is the type's literal string (or a module-level
upper-case constant holding it). The registry, the
payload models and the projection name every type without emitting it, and ``air demo`` and
``air/testing`` play a scripted model, so none of them counts.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from air.events.registry import default_registry

ROOT = Path(__file__).resolve().parents[2]
EMITTERS = frozenset(
    {
        "record",
        "record_end",
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


def durable_types() -> set[str]:
    registry = default_registry()
    return {t for t, _ in registry.list() if registry.is_durable(t)}


def type_constants() -> dict[str, str]:
    """Module-level ``NAME = "type"`` string constants of ``air/`` (``STATE_EVENT`` ...): an
    emitter called with such a name emits its type."""
    constants: dict[str, str] = {}
    for path in sorted((ROOT / "air").rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            ):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id.isupper():
                        constants[target.id] = node.value.value
    return constants


def emitted_types(durable: set[str]) -> dict[str, set[str]]:
    """Durable type -> the files with an emitting call site of it."""
    found: dict[str, set[str]] = {}
    constants = type_constants()
    for path in sorted((ROOT / "air").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in NOT_EMITTING or rel.startswith(SCRIPTED):
            continue
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name not in EMITTERS:
                continue
            for arg in node.args[:3]:
                value = arg.value if isinstance(arg, ast.Constant) else None
                if isinstance(arg, ast.Name):
                    value = constants.get(arg.id)
                if value in durable:
                    found.setdefault(str(value), set()).add(rel)
    return found


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
    assert "air/nursery/scheduler.py" in emitted["task.created"]
    assert "air/nursery/knowledge.py" in emitted["memory.promoted"]
    assert "air/agents/architecture.py" in emitted["architecture.impact.completed"]
    assert "air/nursery/compaction.py" in emitted["summary.created"]
    assert "air/agents/main.py" in emitted["main_agent.state.changed"]  # via STATE_EVENT
    assert all(not files & {*NOT_EMITTING, "air/cli/demo.py"} for files in emitted.values()), (
        emitted
    )
    assert len(durable) == len(emitted) + len(listed_types())
