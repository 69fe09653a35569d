"""``air doctor`` shows its work (issue 24 item 10): every check it made is listed with its
result and what it found — the versions of git, bubblewrap, SQLite (with WAL), tmux, the C++
tools and the provider libraries — on a healthy machine too, not only "no problems found".
Read from the real ``air doctor`` in tmux (capture-pane) and from ``--json``."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.doctor.helpers import doctor_json, make_project, path_without
from tests.ui.tmux import Tmux


def _version_of(*argv: str) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    return (done.stdout or done.stderr).strip().splitlines()[0]


def _row(screen: str, check: str) -> tuple[str, str]:
    """The result and the text of the listed check ``check`` (``  ok    git   git version ..``)."""
    for line in screen.splitlines():
        found = re.match(rf"^  (ok|info|WARN|FAIL|skip)\s+{re.escape(check)}\s+(.*)$", line)
        if found:
            return found.group(1), found.group(2).strip()
    raise AssertionError(f"{check} is not listed:\n{screen}")


@pytest.mark.slow
def test_a_healthy_cpp_project_lists_every_check_with_its_version(tmp_path: Path) -> None:
    project, home = make_project(tmp_path)
    (project / "CMakeLists.txt").write_text("project(x CXX)\n")
    tmux = Tmux(tmp_path, cols=250, rows=60)
    try:
        tmux.start(
            [sys.executable, "-m", "air", "doctor", "--project", str(project)], {"HOME": str(home)}
        )
        assert tmux.wait_exit(timeout=60) == 0
        screen = tmux.wait_for("no problems found")
    finally:
        tmux.close()
    assert _row(screen, "git") == ("ok", f"{_version_of('git', '--version')} (/usr/bin/git)")
    result, sandbox = _row(screen, "sandbox")
    assert result == "ok"
    assert sandbox.startswith(_version_of("bwrap", "--version"))  # "bubblewrap 0.8.0"
    assert _row(screen, "bootstrap.sqlite") == (
        "ok",
        f"SQLite {sqlite3.sqlite_version}, a test database in WAL journal mode",
    )
    assert _row(screen, "tmux")[1].startswith(_version_of("tmux", "-V"))
    assert _row(screen, "cpp.compiler")[1].startswith(_version_of("g++", "--version"))
    assert _row(screen, "cpp.cmake")[1].startswith(_version_of("cmake", "--version"))
    assert _row(screen, "cpp.cppcheck")[1].startswith("Cppcheck")
    result, providers = _row(screen, "providers")
    assert result == "info"  # nothing configured: said, not a problem
    assert re.search(r"anthropic \d+\.\d+", providers)
    assert re.search(r"httpx \d+\.\d+", providers)
    for check in ("bootstrap.python", "bootstrap.shell", "bootstrap.air_writable"):
        assert _row(screen, check)[0] == "ok"
    for check in ("run_records", "worktrees", "databases", "artifacts"):
        assert _row(screen, check)[0] == "ok"
    listed = re.search(r"air doctor: (\d+) check\(s\) made", screen)
    assert listed is not None
    assert f"no problems found ({listed.group(1)} checks, listed above)" in screen


@pytest.mark.slow
def test_a_missing_tool_is_listed_with_its_result_and_the_rest_still_shown(
    tmp_path: Path,
) -> None:
    project, home = make_project(tmp_path)
    path = path_without("git", "tmux", tmp_path=tmp_path)
    tmux = Tmux(tmp_path, cols=250, rows=60)
    try:
        tmux.start(
            [sys.executable, "-m", "air", "doctor", "--project", str(project)],
            {"HOME": str(home), "PATH": path},
        )
        assert tmux.wait_exit(timeout=60) == 1
        screen = tmux.wait_for("problem(s) found")
    finally:
        tmux.close()
    assert _row(screen, "git") == ("WARN", "git not on PATH")
    assert _row(screen, "tmux") == ("info", "tmux not on PATH")
    assert _row(screen, "bootstrap.sqlite")[0] == "ok"
    assert _row(screen, "providers")[0] == "info"
    result, why = _row(screen, "cpp")
    assert result == "skip"
    assert "C++ project only" in why


def test_the_json_report_lists_the_checks_made(tmp_path: Path) -> None:
    project, home = make_project(tmp_path)
    code, report, _ = doctor_json(project, home)
    assert code == 0, report
    checks = {c["check"]: c for c in report["checks"]}
    assert checks["git"]["result"] == "ok"
    assert checks["git"]["found"].startswith("git version")
    assert checks["cpp"]["result"] == "skipped"
    assert checks["databases"]["found"].startswith("0 session database(s)")
    assert list(checks)[:4] == [
        "bootstrap.python",
        "bootstrap.sqlite",
        "bootstrap.shell",
        "bootstrap.air_writable",
    ]
