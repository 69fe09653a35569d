"""``air --session SID`` with a bad SID or outside a project: a clear error before anything is
drawn or opened (exit 2, no traceback), with a what-to-do that works for the console."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.doctor.helpers import make_project, write_session
from tests.forked_air import air_cli
from tests.ui.tmux import Tmux


def _air(cwd: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env["HOME"] = str(home)
    return air_cli(args, cwd=cwd, env=env, timeout=60)


@pytest.mark.parametrize("replay", [False, True])
def test_a_session_outside_any_project_says_there_is_no_project(
    tmp_path: Path, replay: bool
) -> None:
    home, bare = tmp_path / "home", tmp_path / "bare"
    home.mkdir()
    bare.mkdir()
    out = _air(bare, home, "--session", "nope", *(["--replay"] if replay else []))
    assert out.returncode == 2, out.stderr
    lines = out.stderr.splitlines()
    assert lines[0] == (
        f"air: not_found: --session nope: no air project at {bare} or above it, so no session "
        "to reopen"
    )
    assert lines[1].startswith("  what to do: Run `air --session nope` inside the session's")
    assert "air session list --project PATH" in lines[1]
    assert "resume" not in out.stderr  # not `air resume`'s words: nothing is resumed here
    assert "Traceback" not in out.stderr
    assert not (bare / ".air").exists()


def test_an_unknown_session_in_a_project_says_so(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    project.mkdir()
    assert _air(project, home, "init").returncode == 0
    out = _air(project, home, "--session", "nope")
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith(f"air: not_found: --session nope: no such session in {project}")
    assert "Pick a session id from `air session list`" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_bad_configuration_found_after_the_first_frame_is_said_on_the_restored_terminal(
    tmp_path: Path,
) -> None:
    """In a terminal the console draws before it reads the configuration (IMPL-FRAME-1): a
    project without a model provider ends it with the terminal restored, the clear error on
    stderr, exit 2, and nothing created."""
    home, bare = tmp_path / "home", tmp_path / "bare"
    home.mkdir()
    bare.mkdir()
    env = {k: "" for k in os.environ if k.endswith(("_API_KEY", "_BASE_URL"))}
    tmux = Tmux(tmp_path)
    try:
        tmux.start([sys.executable, "-m", "air", "run", str(bare)], {**env, "HOME": str(home)})
        assert tmux.wait_exit(timeout=30) == 2
        stderr = (tmp_path / "stderr").read_text()
        assert stderr.startswith("air: config_error: no model provider"), stderr
        assert "Traceback" not in stderr
        assert "air · " not in tmux.screen()  # the console's screen is gone
    finally:
        tmux.close()
    assert not (bare / ".air").exists()


def test_a_replay_without_a_terminal_says_to_print_the_history(tmp_path: Path) -> None:
    """stdin and stdout not a terminal (a pipe, a file, /dev/null): urwid's screen could not
    watch stdin, and the replay ended in a traceback."""
    project, home = make_project(tmp_path)
    write_session(project, "ses_replayed", length=30)
    argv = ["--session", "ses_replayed", "--replay", "--project", str(project)]
    out = _air(project, home, *argv)
    assert out.returncode == 2, out.stderr
    assert out.stderr.startswith("air: validation_error: --replay plays a session in a terminal")
    assert "`air history --session ses_replayed --all`" in out.stderr
    assert "Traceback" not in out.stderr
    assert out.stdout == ""


def test_a_replay_that_reaches_a_damaged_row_says_which_on_the_restored_terminal(
    tmp_path: Path,
) -> None:
    """The replay reads its log a page at a time inside the console's nursery: a row that
    holds no JSON ends it with one named error (not a group's traceback), exit 2."""
    project, home = make_project(tmp_path)
    path = write_session(project, "ses_replayed", length=30)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE events SET payload_json = 'not json' WHERE seq = 5")
    tmux = Tmux(tmp_path)
    try:
        argv = ["--session", "ses_replayed", "--replay", "--project", str(project)]
        tmux.start([sys.executable, "-m", "air", *argv], {"HOME": str(home)})
        assert tmux.wait_exit(timeout=30) == 2
        stderr = (tmp_path / "stderr").read_text()
        assert stderr.startswith("air: validation_error: stored event 5 cannot be read"), stderr
        assert "air doctor --fix" in stderr
        assert "Traceback" not in stderr
    finally:
        tmux.close()
