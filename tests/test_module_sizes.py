"""Issue #11's size limits on the runtime spine, kept: ``air/cli/run.py`` under 200 lines (a
thin client of ``open_runtime()``) and no module of ``air/nursery`` over 400 lines (each part
a reader can hold in their head)."""

from __future__ import annotations

from pathlib import Path

AIR = Path(__file__).resolve().parents[1] / "air"


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_the_headless_command_stays_a_thin_client() -> None:
    assert _lines(AIR / "cli" / "run.py") < 200


def test_no_nursery_module_passes_400_lines() -> None:
    sizes = {p.name: _lines(p) for p in sorted((AIR / "nursery").glob("*.py"))}
    assert sizes, "air/nursery has no modules"
    assert {name: n for name, n in sizes.items() if n > 400} == {}
