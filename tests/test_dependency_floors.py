"""The lowest-versions job installs exactly the floors setup.cfg declares (IMPL-DEP-1).

``scripts/floors.py`` turns the declarations into pins; this test reads setup.cfg on its own,
with ``packaging``, and checks the pins are the declared floors, one for each direct
dependency, so the job cannot drift from what is declared."""

from __future__ import annotations

import configparser
import subprocess
import sys
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parent.parent
FLOORS = REPO / "scripts" / "floors.py"


def _declared() -> list[Requirement]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(REPO / "setup.cfg", encoding="utf-8")
    lines = parser["options"]["install_requires"].splitlines()
    for extra in parser["options.extras_require"].values():
        lines += extra.splitlines()
    return [Requirement(line) for line in lines if line.strip()]


def _pins(setup_cfg: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(FLOORS), str(setup_cfg)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_pins_are_exactly_the_declared_floors() -> None:
    proc = _pins(REPO / "setup.cfg")
    assert proc.returncode == 0, proc.stderr
    pins: dict[str, str] = {}
    for line in proc.stdout.split():
        name, _, version = line.partition("==")
        assert canonicalize_name(name) not in pins, line
        pins[canonicalize_name(name)] = version
    declared = _declared()
    assert len(pins) == len(declared)
    for requirement in declared:
        floors = [spec.version for spec in requirement.specifier if spec.operator == ">="]
        assert len(floors) == 1, f"{requirement} declares no single floor"
        pin = pins[canonicalize_name(requirement.name)]
        assert Version(pin) == Version(floors[0]), requirement
        assert requirement.specifier.contains(pin), requirement


def test_floors_with_known_faults_stay_raised() -> None:
    floors: dict[str, tuple[Requirement, str]] = {
        str(canonicalize_name(r.name)): (
            r,
            next(s.version for s in r.specifier if s.operator == ">="),
        )
        for r in _declared()
    }
    # h11 < 0.16 has a published request-smuggling vulnerability (CVE-2025-43859)
    assert Version(floors["h11"][1]) >= Version("0.16")
    # the console runs on urwid.TrioEventLoop, which needs urwid's trio extra; Shift+Enter
    # needs the Screen's extended_keys, which urwid 5.0 introduced
    assert "trio" in floors["urwid"][0].extras
    assert Version(floors["urwid"][1]) >= Version("5.0")
    # the SDK transport calls asyncio before 0.46 (no running event loop under Trio); pydantic
    # before 2.10 warns on every `model_` field, before 2.11 writes other JSON schemas, and
    # mcp 2.3 needs 2.12
    assert Version(floors["anthropic"][1]) >= Version("0.46")
    assert Version(floors["pydantic"][1]) >= Version("2.12")


def test_a_dependency_without_a_floor_is_refused(tmp_path: Path) -> None:
    text = (REPO / "setup.cfg").read_text(encoding="utf-8")
    assert "    trio>=" in text
    cfg = tmp_path / "setup.cfg"
    cfg.write_text(
        text.replace("    trio>=", "    trio<1,>=", 1).replace("    h11>=", "    h11<=", 1)
    )
    proc = _pins(cfg)
    assert proc.returncode == 2
    assert "'h11<=" in proc.stderr
    assert "must declare exactly one floor" in proc.stderr


def test_the_full_suite_runs_the_lowest_versions_job_and_the_fast_lane_does_not() -> None:
    test_sh = (REPO / "scripts" / "test.sh").read_text(encoding="utf-8")
    # the full run ends with the lowest-versions job, whose exit code counts
    full = test_sh.split(
        'else\n  run_pytest -m "not slow" -n 4\n  start_checks\n  run_pytest -m slow -n 4\n'
        "  report_checks\n"
    )[1]
    assert full.startswith('  echo "== lowest versions (scripts/lowest.sh)"\n')
    assert "  bash scripts/lowest.sh || status=1\nfi\n" in full
    # the fast lane alone checks too
    assert 'if [ $fast -eq 1 ]; then\n  start_checks\n  run_pytest -m "not slow" -n 4\n' in test_sh
    # so does a run of given tests, unless --fast
    given = test_sh.split('if [ $# -gt 0 ]; then\n  start_checks\n  run_pytest "$@"\n', 1)[1]
    assert given.startswith("  report_checks\n  [ $fast -eq 1 ] || {")
    assert 'bash scripts/lowest.sh "$@" || status=1; }' in given.split("\n")[1]
    # mypy and import-linter (beside a pytest run: the slow lane in a full run) count too
    assert 'grep -q "^mypy failed$\\|^import-linter failed$" "$checks_log" && status=1' in test_sh
    assert "fast=1" in test_sh.split('if [ "${1:-}" = "--fast" ]; then', 1)[1].split("fi")[0]
    assert "exec bash scripts/test.sh\n" in (REPO / ".ci" / "run").read_text(encoding="utf-8")
    lowest = (REPO / "scripts" / "lowest.sh").read_text(encoding="utf-8")
    assert 'scripts/floors.py setup.cfg > "$pins.new"' in lowest
    assert '-c "$pins"' in lowest
    assert "scripts/floors.py --extras setup.cfg" in lowest
    extras = subprocess.run(
        [sys.executable, str(FLOORS), "--extras"], capture_output=True, text=True, check=True
    )
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(REPO / "setup.cfg", encoding="utf-8")
    assert extras.stdout.split() == [",".join(parser["options.extras_require"])]
    assert '-m pytest -m "not slow" -n 4' in lowest
