"""Module sizes (issue 23): ``air/cli/run.py`` stays a thin client of ``open_runtime()`` (under
200 lines), and no module of ``air`` passes 600 lines, tables included. A module is cut
along its concerns, never to meet a line count: the cap is a smell detector, and a module that
reaches it is split by what it owns (IMPL-PKG-1), not by halves."""

from __future__ import annotations

from pathlib import Path

AIR = Path(__file__).resolve().parents[1] / "air"
CAP = 600


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def _sizes() -> dict[str, int]:
    return {
        p.relative_to(AIR).as_posix(): _lines(p)
        for p in sorted(AIR.rglob("*.py"))
        if "__pycache__" not in p.parts
    }


def test_the_headless_command_stays_a_thin_client() -> None:
    assert _lines(AIR / "cli" / "run.py") < 200


def test_no_module_passes_600_lines() -> None:
    sizes = _sizes()
    assert len(sizes) > 100, "air has too few modules: the scan looks in the wrong place"
    over = {name: n for name, n in sizes.items() if n > CAP}
    assert over == {}, "split these along their concerns"
