"""The console's first frame before its imports (IMPL-FRAME-5; issue #24: first frame <= 300 ms).

The real ``air run PROJECT --cassette DIR`` (a copy of examples/calc) in tmux, started through
a wrapper that installs an audit hook (no CLI flag): at the frame's ``air.console.first_frame``
event it writes ``sys.modules`` to a file, then holds the start until the test says go, so the
keys the test types meanwhile are typed before Trio, urwid and the session exist. Nothing in air
is patched. The frame is then checked on a pseudo-terminal alone: what it writes and how
``close`` gives the terminal back.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import termios
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from air.ui_urwid.first_frame import FirstFrame
from tests.ui.tmux import ROOT, Tmux, _quote

NOT_BEFORE_THE_FIRST_FRAME = (
    "pydantic",
    "pydantic_core",
    "trio",
    "asyncio",
    "urwid",
    "yaml",
    "air.contracts.error",
    "air.contracts.ids",
    "air.contracts.ui",
    "air.session.project",
    "air.ui_urwid.app",
)

PROBE = """
import json, os, sys, time

out, go = sys.argv[1], sys.argv[2]

def hook(event, args):
    if event == "air.console.first_frame":
        with open(out + ".tmp", "w") as handle:
            json.dump({"text": args[0], "modules": sorted(sys.modules)}, handle)
        os.rename(out + ".tmp", out)
        deadline = time.monotonic() + 20
        while not os.path.exists(go) and time.monotonic() < deadline:
            time.sleep(0.01)

sys.addaudithook(hook)
from air.cli import main

code = main(sys.argv[3:])
sys.stdout.flush()
sys.exit(code)
"""


def _start(tmp: Path, tmux: Tmux) -> tuple[Path, Path, Path]:
    """``air run`` on a fresh copy of examples/calc, held at its first frame; returns the
    modules file, the go file and the file the shell writes ``stty -a`` to after air ended."""
    project = tmp / "calc"
    shutil.copytree(ROOT / "examples" / "calc", project)
    (tmp / "probe.py").write_text(textwrap.dedent(PROBE))
    modules, go, stty = tmp / "modules.json", tmp / "go", tmp / "stty"
    argv = [sys.executable, str(tmp / "probe.py"), str(modules), str(go)]
    argv += ["run", str(project), "--cassette", str(project / "cassettes")]
    command = " ".join(_quote(a) for a in argv)
    tmux.start(["sh", "-c", f"{command}; stty -a > {_quote(str(stty))}"])
    deadline = time.monotonic() + 30
    while not modules.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert modules.exists(), tmux.screen()
    return modules, go, stty


def test_the_first_frame_is_drawn_before_pydantic_trio_and_urwid_and_keys_typed_reach_the_input(
    tmp_path: Path,
) -> None:
    tmux = Tmux(tmp_path, cols=100, rows=24)
    try:
        modules, go, stty = _start(tmp_path, tmux)
        found = json.loads(modules.read_text())
        assert found["text"] == "opening the session…"
        loaded = found["modules"]
        assert "air.ui_urwid.first_frame" in loaded  # the snapshot is the frame's own
        early = [
            m
            for m in loaded
            if m != "pydantic.plugin._loader"  # air's stand-in (air.ipc.startup), not pydantic
            and any(m == top or m.startswith(top + ".") for top in NOT_BEFORE_THE_FIRST_FRAME)
        ]
        assert early == []
        screen = tmux.wait_for("opening the session…")
        lines = screen.splitlines()
        assert lines[0].startswith(" air · opening the session… · F1 help")
        assert lines[20] == "opening the session…"
        assert lines[22].startswith("│>")
        assert lines[21].startswith("┌")
        # typed while air is held at its first frame: no echo, nothing lost; Enter is Enter
        # (it submits the local /cost view), not the Ctrl-J that would keep it as a first line
        tmux.type("/cost")
        tmux.keys("Enter")
        tmux.type("keys typed during start-up")
        time.sleep(0.3)
        assert "keys typed" not in tmux.screen()  # not echoed by the terminal
        go.touch()
        screen = tmux.wait_for("· IDLE ·", timeout=60)
        screen = tmux.wait_for("> keys typed during start-up", timeout=15)
        assert "/cost" not in screen  # sent by its Enter, not kept as a first line
        tmux.keys("C-u")
        tmux.keys("C-d")
        deadline = time.monotonic() + 30
        while not (stty.exists() and stty.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        # the terminal has its own settings back, not the first frame's
        flags = stty.read_text().split()
        assert {"echo", "icanon", "icrnl", "iexten"} <= set(flags), stty.read_text()
    finally:
        tmux.close()


@pytest.fixture
def pty() -> Iterator[tuple[int, int]]:
    """A pseudo-terminal of 100x30; returns (master, slave)."""
    import fcntl
    import struct

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    os.set_blocking(master, False)
    yield master, slave
    os.close(master)
    os.close(slave)


def _on(slave: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pty as stdin and stdout (set in the test: pytest's capture resets them after a
    fixture)."""
    monkeypatch.setattr(sys, "stdin", os.fdopen(slave, "r", closefd=False))
    monkeypatch.setattr(sys, "stdout", os.fdopen(os.dup(slave), "w", encoding="utf-8"))
    monkeypatch.delenv("NO_COLOR", raising=False)


def _written(master: int) -> str:
    data = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except (BlockingIOError, OSError):
            break
        if not chunk:
            break
        data += chunk
    return data.decode("utf-8", "replace")


def test_the_frame_sets_the_console_s_terminal_mode_and_close_gives_the_terminal_back(
    pty: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    master, slave = pty
    _on(slave, monkeypatch)
    before = termios.tcgetattr(slave)
    frame = FirstFrame.draw("opening the session…")
    assert frame is not None
    written = _written(master)
    assert written.startswith("\x1b[?1049h")  # the alternate screen, as urwid uses
    assert "\x1b[0;30;47m air · opening the session… · F1 help" in written
    assert "\x1b[27;1Hopening the session…" in written  # the status line, 4th from the end
    mode = termios.tcgetattr(slave)
    assert not mode[3] & (termios.ECHO | termios.ICANON | termios.IEXTEN)
    assert not mode[0] & termios.ICRNL  # Enter typed now arrives as Enter, not Ctrl-J
    frame.close()
    assert _written(master).endswith("\x1b[?1049l\x1b[?25h")
    assert termios.tcgetattr(slave) == before
    frame.close()  # once only
    assert _written(master) == ""


def test_a_frame_handed_over_is_not_closed_again(
    pty: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    master, slave = pty
    _on(slave, monkeypatch)
    frame = FirstFrame.draw("reopening ses_x…", no_color=True)
    assert frame is not None
    assert "\x1b[0;7m air · reopening ses_x… · F1 help" in _written(master)
    frame.handed_over()  # the console's screen restores the terminal when it stops
    frame.close()
    assert _written(master) == ""
    mode = termios.tcgetattr(slave)
    assert not mode[3] & termios.ECHO  # left as the console's screen runs it
    termios.tcsetattr(slave, termios.TCSANOW, frame.original)


def test_no_frame_without_a_terminal_on_both_ends(tmp_path: Path) -> None:
    # a pipe on stdin: the plain console's case; nothing drawn, nothing changed
    done = subprocess.run(
        [sys.executable, "-c", "from air.ui_urwid.first_frame import FirstFrame;"
         "print(FirstFrame.draw('opening the session…'))"],
        input="", capture_output=True, text=True, timeout=30, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "None\n"
