"""The project's documents stay true to the code (issue 23 item 6).

``docs/decisions.md`` stays a file a newcomer reads in ten minutes (at most 40 KB, short
entries), and every decision ID cited in the code, the tests, the benchmarks, the README or the
other documents is a heading there. ``docs/architecture.md``'s package map names exactly the
packages of ``air`` (the directories with an ``__init__.py``) and only modules that exist.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DECISIONS = ROOT / "docs" / "decisions.md"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
MAX_DECISIONS_BYTES = 40_000
MAX_ENTRY_LINES = 12
CITED_IN = ("air", "tests", "bench", "scripts", "README.md", "docs")
SCANNED = frozenset({".py", ".md", ".sh", ".toml", ".cfg", ".yaml"})
ID = re.compile(r"IMPL-[A-Z0-9]+(?:-[A-Z0-9]+)*")
HEADING = re.compile(r"(?m)^### (IMPL-[^:]+):")
MAP_ROW = re.compile(r"(?m)^\| `air/([a-z_]+)(/|\.py)` \|")


def citations(root: Path) -> dict[str, set[str]]:
    """Decision ID -> the files (relative to ``root``) that cite it, outside decisions.md."""
    found: dict[str, set[str]] = {}
    for top in CITED_IN:
        base = root / top
        files = [base] if base.is_file() else sorted(base.rglob("*"))
        for path in files:
            if path.suffix not in SCANNED or path == root / "docs" / "decisions.md":
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            for cited in ID.findall(text):
                found.setdefault(cited, set()).add(path.relative_to(root).as_posix())
    return found


def headings(text: str) -> list[str]:
    """Every ID named by an entry heading (``### <id>, <id>: title``)."""
    return [i.strip() for group in HEADING.findall(text) for i in group.split(",")]


def long_entries(text: str, limit: int) -> dict[str, int]:
    """Entries whose body (heading excluded, up to the next heading) passes ``limit`` lines."""
    out: dict[str, int] = {}
    for block in re.split(r"(?m)^(?=#{2,3} )", text):
        if not block.startswith("### "):
            continue
        lines = [ln for ln in block.splitlines()[1:] if ln.strip()]
        if len(lines) > limit:
            out[block.splitlines()[0]] = len(lines)
    return out


def mapped_packages(text: str) -> tuple[set[str], set[str]]:
    """(packages, top-level modules) named in the first cell of the map's rows."""
    rows = MAP_ROW.findall(text)
    return {n for n, kind in rows if kind == "/"}, {n for n, kind in rows if kind == ".py"}


def air_packages(root: Path) -> set[str]:
    return {p.parent.name for p in (root / "air").glob("*/__init__.py")}


def test_decisions_fit_in_forty_kilobytes() -> None:
    size = len(DECISIONS.read_bytes())
    assert size <= MAX_DECISIONS_BYTES, f"docs/decisions.md is {size} bytes"


def test_every_cited_decision_is_a_heading() -> None:
    named = set(headings(DECISIONS.read_text(encoding="utf-8")))
    missing = {i: sorted(f) for i, f in citations(ROOT).items() if i not in named}
    assert not missing, f"cited but not a heading of docs/decisions.md: {missing}"


def test_each_decision_has_one_short_entry() -> None:
    text = DECISIONS.read_text(encoding="utf-8")
    ids = headings(text)
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})
    assert long_entries(text, MAX_ENTRY_LINES) == {}


def test_the_package_map_names_exactly_the_packages() -> None:
    packages, modules = mapped_packages(ARCHITECTURE.read_text(encoding="utf-8"))
    assert packages == air_packages(ROOT)
    assert {m for m in modules if not (ROOT / "air" / f"{m}.py").is_file()} == set()


def test_the_checks_catch_what_they_guard(tmp_path: Path) -> None:
    # a citation without a heading, a duplicate heading, a long entry, an unmapped package;
    # the IDs are built here so that this file cites none itself
    x9, y, z = "IMPL" + "-X-9", "IMPL" + "-Y", "IMPL" + "-Z"
    (tmp_path / "air" / "pkg").mkdir(parents=True)
    (tmp_path / "air" / "pkg" / "__init__.py").write_text(f'"""cites {x9} and {y}."""\n')
    (tmp_path / "air" / "notes.py").write_text("")
    found = citations(tmp_path)
    assert found == {x9: {"air/pkg/__init__.py"}, y: {"air/pkg/__init__.py"}}
    text = f"### {x9}, {z}: a\nWhat: x.\n### {z}: b\n" + "line\n" * 13
    assert headings(text) == [x9, z, z]
    assert set(found) - set(headings(text)) == {y}
    assert long_entries(text, MAX_ENTRY_LINES) == {f"### {z}: b": 13}
    table = "| `air/other/` | x | y |\n| `air/notes.py` | x | y |\n"
    assert mapped_packages(table) == ({"other"}, {"notes"})
    assert air_packages(tmp_path) == {"pkg"}


def test_the_runner_contract_table_names_every_invariant_and_existing_tests() -> None:
    """``docs/runner-contract.md``: one row per invariant 1..32, each naming a test file that
    exists."""
    text = (ROOT / "docs" / "runner-contract.md").read_text(encoding="utf-8")
    rows = re.findall(r"(?m)^\| (\d+) \| [^|]+ \| `?([\w/.]+?)`? \|$", text)
    assert [int(n) for n, _ in rows] == list(range(1, 33))
    for _, where in rows:
        assert (ROOT / "tests" / where).exists(), where
