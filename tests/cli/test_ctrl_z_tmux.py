"""Ctrl-Z of a real ``air run --headless`` at a real shell's prompt (IMPL-STOP-1).

Found: the terminal stopped air alone; its worker and the sandboxed command (sessions of their
own) went on, the build used the machine while the user thought everything waited, and the
time stopped counted against the task's deadline: after ``fg`` the task failed ``timeout``.
Now the worker and the command stop with air, continue with it, and a 10-second stop of a task
with an 8-second deadline ends it completed. The console (urwid restores the terminal, then
passes the signal on) stops and comes back the same way.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from air.supervision.runs import RunRecordStore
from air.testing.strict_servers import StrictServer
from tests.cassette_turns import done_turn, tool_turn
from tests.gitrepo import init_repo
from tests.headless import session_events
from tests.mcp.servers import time_server
from tests.processes import process_state, states_of
from tests.ui.real_air import KEY, ChatModel, _q, git_repo, key_env
from tests.ui.tmux import Tmux

BATCH = """\
tasks:
  - id: build
    title: a long build
    scope: {write_area: []}
    constraints: {soft_timeout_ms: 7000, hard_timeout_ms: 8000, retry_budget: 0}
"""
COMMAND = "sleep 4.3219"  # its argument names it among the machine's processes


def _shell(tmp_path: Path, env: dict[str, str] | None = None) -> Tmux:
    """An interactive bash (job control, its prompt and air's words on the terminal)."""
    term = Tmux(tmp_path, cols=160, rows=30)
    term.start(
        ["sh", "-c", "exec bash --norc --noprofile -i 2>/dev/tty"], {"PS1": "$ ", **(env or {})}
    )
    term.wait_for("$")
    return term


def _wait(check: object, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.05)
    raise AssertionError(f"never: {what}")


def _held_past_the_deadline_then_fg(term: Tmux, rc: Path) -> str:
    """Longer than the task's whole deadline the command stays stopped; then `fg` and the
    run's end (its exit code in ``rc``): the screen then."""
    time.sleep(10)
    assert states_of(COMMAND) == ["T"]  # held
    term.type(f"fg; echo $? > {_q(str(rc))}")
    term.keys("Enter")
    _wait(lambda: rc.exists() and rc.read_text().strip(), "the run ended", timeout=60)
    return term.screen()


def _open_console(term: Tmux, root: Path) -> None:
    """The real console on ``root`` at the shell's prompt, ready."""
    term.type(f"cd {_q(str(root))} && {_q(sys.executable)} -m air")
    term.keys("Enter")
    term.wait_for("· IDLE ·", timeout=30)


def _build_project(tmp_path: Path) -> Path:
    """A git project whose one task (``BATCH``) runs ``COMMAND``, then completes."""
    root = tmp_path / "proj"
    (root / "cas").mkdir(parents=True)
    (root / "cas" / "build.jsonl").write_text(
        tool_turn("b", "shell.run", command=COMMAND) + "\n" + done_turn() + "\n"
    )
    (root / "batch.yaml").write_text(BATCH)
    init_repo(root, message="start")
    return root


@pytest.mark.slow
def test_ctrl_z_stops_the_workers_and_commands_too_and_the_stop_is_off_the_deadline(
    tmp_path: Path,
) -> None:
    root = _build_project(tmp_path)
    events = tmp_path / "events.jsonl"
    rc = tmp_path / "rc"
    term = _shell(tmp_path)
    try:
        air = f"{_q(sys.executable)} -m air run --headless batch.yaml --cassette cas --json"
        term.type(f"cd {_q(str(root))} && {air} > {_q(str(events))}")
        term.keys("Enter")
        _wait(lambda: states_of(COMMAND) == ["S"], "the task's command ran")
        term.keys("C-z")
        term.wait_for("Stopped")
        screen = term.wait_for("air: stopped with its")
        assert states_of(COMMAND) == ["T"]  # the sandboxed command waits too
        [run] = RunRecordStore(str(root / ".air" / "local" / "state" / "runs")).list()
        assert process_state(int(run["pid"])) == "T"  # and the worker
        screen = _held_past_the_deadline_then_fg(term, rc)
    finally:
        term.close()
    assert rc.read_text().strip() == "0", screen
    assert "air: continued after 1" in screen  # ten-odd seconds stopped
    ends = [e for e in session_events(root) if e["type"] in ("task.completed", "task.failed")]
    assert [e["type"] for e in ends] == ["task.completed"], ends
    streamed = [json.loads(line)["type"] for line in events.read_text().splitlines()]
    assert "tool.completed" in streamed


@pytest.mark.slow
def test_the_console_stops_with_its_terminal_restored_and_comes_back(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    git_repo(root)
    with StrictServer(api_key=KEY, model=ChatModel("Hello again.")) as server:
        term = _shell(tmp_path, key_env(home, server.url))
        try:
            _open_console(term, root)
            term.keys("C-z")
            screen = term.wait_for("Stopped")
            assert "air: stopped with its" in screen  # said on the shell's screen, not over
            assert "· IDLE ·" not in screen  # the console's frame: urwid restored the terminal
            term.type("fg")
            term.keys("Enter")
            term.wait_for("· IDLE ·")  # drawn again
            # a terminal with extended keys (the kitty keyboard protocol: kitty, foot, WezTerm,
            # Alacritty) sends Ctrl-Z as a key report, not the byte the line discipline turns
            # into SIGTSTP: the console stops all the same
            term.raw(b"\x1b[122;5u")
            _wait(lambda: term.screen().count("air: stopped with its") == 2, "stopped again")
            _wait(lambda: term.screen().count("Stopped ") == 2, "the shell took it as a stop")
            term.type("fg")
            term.keys("Enter")
            term.wait_for("· IDLE ·")
            term.type("hello")
            term.keys("Enter")
            term.wait_for("air> Hello again.", timeout=30)
            term.keys("C-d")
            # typed once the console has restored the terminal (which discards what was typed
            # ahead) and printed its last line: then the shell reads it
            term.wait_for("Reopen it with", timeout=30)
            term.type("echo ended-$?")
            term.keys("Enter")
            term.wait_for("ended-0", timeout=30)
        finally:
            term.close()


def _clock() -> list[str]:
    """The states of the MCP time server's processes (started by the console)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and b"mcp-server-time" in (entry / "cmdline").read_bytes():
                found.append(process_state(int(entry.name)) or "gone")
        except OSError:
            continue
    return found


@pytest.mark.slow
def test_the_console_sent_to_the_background_waits_stopped_still_holding(tmp_path: Path) -> None:
    """Found: Ctrl-Z, then `bg` (to have the shell back while it "works") continued what the
    stop held (here the MCP server the console started), and the console stopped again at its
    first terminal write (SIGTTOU) holding nothing, the time counted against the deadlines.
    Now it stops again itself, still holding, says it waits for `fg`, and `fg` brings it
    back."""
    home, root = tmp_path / "home", tmp_path / "proj"
    (home / ".air").mkdir(parents=True)
    (home / ".air" / "mcp.yaml").write_text(
        f"servers:\n  clock: {{command: {time_server()}, args: [--local-timezone, UTC]}}\n"
    )
    git_repo(root)
    with StrictServer(api_key=KEY, model=ChatModel("Back in front.")) as server:
        term = _shell(tmp_path, key_env(home, server.url))
        try:
            _open_console(term, root)
            _wait(lambda: _clock() == ["S"], "the MCP server started")
            term.keys("C-z")
            term.wait_for("Stopped")
            assert _clock() == ["T"]
            term.type("bg")
            term.keys("Enter")
            term.wait_for("the console runs in the foreground only")
            time.sleep(2)
            assert _clock() == ["T"]  # still held
            term.keys("Enter")  # the shell reports the job at its next prompt
            _wait(lambda: term.screen().count("Stopped") >= 2, "the shell saw it stop again")
            term.type("fg")
            term.keys("Enter")
            term.wait_for("· IDLE ·")
            assert _clock() == ["S"]
            term.type("hello")
            term.keys("Enter")
            term.wait_for("air> Back in front.", timeout=30)
            term.keys("C-d")
        finally:
            term.close()


@pytest.mark.slow
def test_a_headless_run_sent_to_the_background_under_tostop_waits_holding(
    tmp_path: Path,
) -> None:
    """Found: under `stty tostop` (a background job may not write to the terminal) Ctrl-Z
    then `bg` continued the run, its next line of progress stopped it (SIGTTOU) holding
    nothing: the command went on, and the time stopped counted against the deadline (a 10 s
    wait failed the task `timeout`). Now that stop holds and is off the clock like Ctrl-Z's."""
    root = _build_project(tmp_path)
    rc = tmp_path / "rc"
    term = _shell(tmp_path)
    try:
        term.type("stty tostop")
        term.keys("Enter")
        air = f"{_q(sys.executable)} -m air run --headless batch.yaml --cassette cas"
        term.type(f"cd {_q(str(root))} && {air}")
        term.keys("Enter")
        _wait(lambda: states_of(COMMAND) == ["S"], "the task's command ran")
        term.keys("C-z")
        term.wait_for("Stopped")
        term.type("bg")
        term.keys("Enter")
        time.sleep(2)
        term.type("jobs -l")  # the shell says how the job is
        term.keys("Enter")
        _wait(lambda: "Stopped (tty output)" in term.screen(), "stopped: " + term.screen())
        screen = _held_past_the_deadline_then_fg(term, rc)
    finally:
        term.close()
    assert rc.read_text().strip() == "0", screen
    ends = [
        e["type"] for e in session_events(root) if e["type"] in ("task.completed", "task.failed")
    ]
    assert ends == ["task.completed"], screen
