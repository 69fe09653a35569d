"""The real console in a real terminal: urwid on TrioEventLoop in tmux, driven by send-keys.

The process is ``python -m air.testing.console_driver`` (a real ProjectionStore writing a
real session DB, the real TuiApp, a scripted runtime behind the UiCommandChannel). Every
UiCommand the console sends is read back from the driver's log.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.ui.tmux import Tmux, driver, processes_with

GUARD_S = 3.0
"""The prompt guard of the console under test: the key typed as the prompt appears must land
inside it however slowly tmux shows the prompt and sends the key on a loaded machine (the
shipped 0.3 s was missed once under the slow lane's load)."""


def _commands(log: Path) -> list[dict[str, object]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _wait_command(log: Path, kind: str, timeout: float = 10.0) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for command in _commands(log):
            if command["kind"] == kind:
                return command
        time.sleep(0.05)
    raise AssertionError(f"no {kind} command in {_commands(log)}")


@pytest.mark.slow
def test_a_whole_session_in_tmux_then_its_replay(tmp_path: Path) -> None:
    log, db, clip = tmp_path / "log.jsonl", tmp_path / "session.db", tmp_path / "clip.txt"
    tmux = Tmux(tmp_path)
    try:
        tmux.start(
            driver(
                *("--log", str(log), "--db", str(db), "--copy", str(clip)),
                *("--prompt-guard", str(GUARD_S)),
            )
        )
        tmux.wait_for("air · ses_console · scripted/scripted-model")

        # a chat message: the UiCommand, then the streamed answer
        tmux.type("hello there")
        tmux.keys("Enter")
        tmux.wait_for("That is all.")
        assert _commands(log) == [{"kind": "user_message", "text": "hello there"}]
        assert "air> Scripted answer to: hello there" in tmux.screen()

        # copying gives the code block's source text
        tmux.keys("C-y")
        tmux.wait_for("copied 1 line(s)")
        assert clip.read_text() == "make test"

        # Esc during the Main Agent's turn ends that turn only
        tmux.type("tell me more")
        tmux.keys("Enter")
        tmux.wait_for("air> Scripted")
        tmux.keys("Escape")
        tmux.wait_for("interrupted by Esc")
        assert _wait_command(log, "interrupt") == {"kind": "interrupt"}

        # a change request: two tasks appear and run; one asks permission
        tmux.type("please fix calc")
        tmux.keys("Enter")
        tmux.wait_for("#2 docs round 1  running")
        screen = tmux.wait_for("permission needed")
        seen = time.monotonic()
        assert "2 allow for task task_1a: the same request again within that task only" in screen
        tmux.keys("2")  # typed as it appeared (well inside the guard): ignored
        time.sleep(0.5)
        assert "permission needed" in tmux.screen()
        assert all(c["kind"] != "permission_response" for c in _commands(log))
        time.sleep(max(0.0, seen + GUARD_S + 0.2 - time.monotonic()))  # the guard is over
        tmux.keys("2")
        tmux.wait_for("permission needed", gone=True)
        assert _wait_command(log, "permission_response")["decision"] == "allow_task"
        tmux.wait_for("✓ #1 edit calc round 1  completed")
        tmux.wait_for("task #1 edit calc round 1: completed")  # announced

        # cancel exactly one task by command
        tmux.type("/cancel 2")
        tmux.keys("Enter")
        tmux.wait_for("⊘ #2 docs round 1  cancelled")
        assert "✓ #1 edit calc round 1  completed" in tmux.screen()

        # round two: both run; cancel one from the tree, then Ctrl-C cancels the rest
        tmux.type("fix it again")
        tmux.keys("Enter")
        tmux.wait_for("▶ #4 docs round 2  running")
        tmux.wait_for("▶ #3 edit calc round 2  running")
        tmux.keys("Tab")  # the tree, at the selected task (#1)
        for _ in range(3):
            tmux.keys("Down")
        tmux.wait_for("detail · following")
        tmux.wait_for("task_2b · execute · running")  # the detail follows the selection
        tmux.keys("x")
        screen = tmux.wait_for("⊘ #4 docs round 2  cancelled")
        assert "▶ #3 edit calc round 2  running" in screen
        assert {"kind": "cancel_task", "task_id": "task_2b"} in _commands(log)
        tmux.keys("C-c")
        tmux.wait_for("⊘ #3 edit calc round 2  cancelled")
        assert {"kind": "cancel_run"} in _commands(log)

        # resize: redrawn at the new size, nothing duplicated
        tmux.resize(90, 30)
        screen = tmux.wait_for("⊘ #3 edit calc")
        lines = screen.splitlines()
        assert lines[0].startswith(" air · ses_console")
        assert len(lines) <= 30
        assert all(len(line) <= 90 for line in lines)
        assert screen.count("Wave 1") == 1
        tmux.resize(140, 45)
        tmux.wait_for("⊘ #4 docs round 2  cancelled")

        # quit: the process ends and leaves nothing behind
        assert processes_with(str(log)) != []  # the scan sees the live console
        tmux.type("/quit")  # typing moves the focus back to the input
        tmux.keys("Enter")
        assert tmux.wait_exit() == 0
        assert _commands(log)[-1] == {"kind": "quit"}
        assert processes_with(str(log)) == []
    finally:
        tmux.close()

    # the stored log plays back read-only: the same conversation and tasks
    replay_log = tmp_path / "replay.jsonl"
    tmux = Tmux(tmp_path)
    try:
        tmux.start(driver("--log", str(replay_log), "--replay", str(db), "--speed", "1000"))
        screen = tmux.wait_for("⊘ #4 docs round 2  cancelled")
        assert "you> hello there" in screen
        assert "✓ #1 edit calc round 1  completed" in screen
        assert "REPLAY" in screen
        tmux.type("x")
        tmux.keys("q")
        assert tmux.wait_exit() == 0
        assert [c["kind"] for c in _commands(replay_log)] == ["quit"]
        assert processes_with(str(replay_log)) == []
    finally:
        tmux.close()


def test_the_plain_console_is_line_oriented(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    tmux = Tmux(tmp_path, cols=100, rows=40)
    try:
        tmux.start(driver("--log", str(log), "--plain"))
        tmux.type("hello")
        tmux.keys("Enter")
        tmux.wait_for("air> Scripted answer to: hello")
        tmux.type("fix calc")
        tmux.keys("Enter")
        tmux.wait_for("answer with one of: once, task, session, project, deny")
        time.sleep(0.4)  # past the prompt guard
        tmux.type("session")
        tmux.keys("Enter")
        tmux.wait_for("task #1 edit calc round 1: completed")
        assert {"kind": "permission_response", "decision": "allow_session"}.items() <= (
            _wait_command(log, "permission_response").items()
        )
        tmux.type("/cancel task_1b")
        tmux.keys("Enter")
        tmux.wait_for("task #2 docs round 1: cancelled")
        tmux.type("/quit")
        tmux.keys("Enter")
        assert tmux.wait_exit() == 0
        assert "\x1b" not in tmux.screen()
        assert processes_with(str(log)) == []
    finally:
        tmux.close()


def test_closing_the_terminal_leaves_no_process(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    tmux = Tmux(tmp_path)
    try:
        tmux.start(driver("--log", str(log)))
        tmux.wait_for("air · ses_console")
        tmux.type("fix calc")
        tmux.keys("Enter")
        tmux.wait_for("#2 docs round 1  running")
        assert processes_with(str(log)) != []
    finally:
        tmux.close()  # the terminal goes away: SIGHUP
    deadline = time.monotonic() + 10
    while processes_with(str(log)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_with(str(log)) == []
