"""Directories air cannot record, refused before anything is written (exit 2, no traceback): a
project or home whose path holds bytes that are no UTF-8 (a directory an old archive named in
Latin-1: a run ended midway with a traceback), and a current directory removed since the shell
entered it (a worktree deleted under the shell: every command ended with a traceback)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.forked_air import air_cli
from tests.gitrepo import init_repo

AIR = str(Path(sys.executable).with_name("air"))


def _env(home: Path) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("AIR_")} | {"HOME": str(home)}


@pytest.fixture
def latin1_project(tmp_path: Path) -> Path:
    root = Path(os.fsdecode(bytes(tmp_path) + b"/caf\xe9"))
    root.mkdir()
    (root / "notes.txt").write_text("a\n")
    (root / "batch.yaml").write_text("version: 1\ntasks:\n  - id: a\n    title: A\n")
    init_repo(root, message="start")
    return root


@pytest.mark.parametrize(
    "args",
    [
        ("run", "--headless", "batch.yaml"),
        ("run", "--plan", "batch.yaml"),
        ("init",),
        ("history",),
        ("status",),
        ("doctor",),
    ],
)
def test_a_project_whose_path_is_not_utf8_is_refused_first(
    latin1_project: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    done = air_cli(args, cwd=latin1_project, env=_env(home))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "the project's path" in done.stderr
    assert "caf\\udce9 is not UTF-8 text" in done.stderr  # the name, shown exactly
    assert "what to do: Rename the directory" in done.stderr
    assert not (latin1_project / ".air").exists()  # nothing written


def test_project_and_home_paths_are_checked_wherever_air_runs(
    latin1_project: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    elsewhere = air_cli(("status", "--project", str(latin1_project)), cwd=tmp_path, env=_env(home))
    assert elsewhere.returncode == 2
    assert "the project's path" in elsewhere.stderr
    odd_home = Path(os.fsdecode(bytes(tmp_path) + b"/h\xf6me"))
    odd_home.mkdir()
    fine = tmp_path / "fine"
    fine.mkdir()
    done = air_cli(("status",), cwd=fine, env=_env(odd_home))
    assert done.returncode == 2
    assert "your home directory's path" in done.stderr
    assert "Traceback" not in elsewhere.stderr + done.stderr


@pytest.mark.parametrize("args", ["status", "history", "run -p hello", "release"])
def test_a_removed_current_directory_is_named(tmp_path: Path, args: str) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    done = subprocess.run(
        ["sh", "-c", f'cd "$1" && rmdir "$1" && exec "$2" {args}', "sh", str(gone), AIR],
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "air: not_found: the current directory no longer exists" in done.stderr
    assert "Traceback" not in done.stderr
