"""A terminal that reads nothing never stalls the console's run (``TerminalWriter``).

Found (the real console on a pty this test owns, its output left unread as a dead ssh
connection or a frozen terminal emulator leaves it): a few redraws filled the pty's buffer
(~40 KiB), the console's next write blocked its Trio thread, and a model reply that arrived
meanwhile was recorded only once the terminal read again (every task's deadline ran on too).
Now a thread writes the frames; past 1 MiB queued the console draws nothing more, and draws
the whole screen once the terminal has read what was queued.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Any

import pytest

from air.testing.strict_servers import StrictServer
from air.testing.wire_replies import Reply, blocks_sse
from air.ui_urwid.terminal_writer import LIMIT
from tests.headless import session_events
from tests.ui.real_air import KEY, git_repo, key_env, text_reply

ANSWER = "Hello after a while."
STALL_S = 3.0


class _SlowModel:
    """The Main Agent's classification at once, then an answer that stalls ``STALL_S``."""

    def __init__(self) -> None:
        chunks = blocks_sse("anthropic", [("text", ["Hello ", "after a while."])], "end_turn")
        self.replies = [
            text_reply('{"intent": "chat"}'),
            Reply(chunks=chunks, stall_after=4, stall_s=STALL_S),
        ]

    def __call__(self, wire: str, body: dict[str, Any]) -> Reply:
        return self.replies.pop(0) if self.replies else text_reply("Nothing more.")


def _size(fd: int, rows: int, cols: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def _read_until(master: int, wanted: bytes, timeout: float) -> bytes:
    seen = b""
    deadline = time.monotonic() + timeout
    while wanted not in seen and time.monotonic() < deadline:
        if select.select([master], [], [], 0.2)[0]:
            try:
                seen += os.read(master, 1 << 16)
            except OSError:
                break
    return seen


def _answers(root: Path) -> list[str]:
    return [e["type"] for e in session_events(root) if e["type"] == "assistant.message.created"]


@pytest.mark.slow
def test_an_unread_terminal_stalls_nothing_and_is_drawn_whole_after(tmp_path: Path) -> None:
    home, root = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    git_repo(root)
    with StrictServer(api_key=KEY, model=_SlowModel()) as server:
        master, slave = pty.openpty()
        _size(slave, 60, 200)
        proc = subprocess.Popen(
            [sys.executable, "-m", "air"],
            cwd=root,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env={**os.environ, **key_env(home, server.url), "TERM": "xterm-256color"},
            start_new_session=True,
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
        )
        os.close(slave)
        try:
            assert b"IDLE" in _read_until(master, b"IDLE", 30)
            os.write(master, b"hello\r")
            # from here nobody reads: each resize is a whole frame (~12 KiB), 120 of them are
            # past the pty's buffer and past the 1 MiB the console queues before it stops
            for i in range(120):
                _size(master, 60 + i % 2, 200)
                time.sleep(0.02)
            deadline = time.monotonic() + STALL_S + 10
            while not _answers(root) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert _answers(root), "the answer was not recorded while the terminal read nothing"
            wchan = Path(f"/proc/{proc.pid}/wchan").read_text()
            assert wchan != "wait_woken", "the console waits on the terminal"  # a tty write
            # read again: what was queued, then the whole screen with the answer on it
            seen = _read_until(master, ANSWER.encode(), 30)
            assert ANSWER.encode() in seen
            # no frame drawn past the 1 MiB queued (120 frames would be ~1.7 MiB)
            assert len(seen) < LIMIT + (192 << 10), len(seen)
        finally:
            os.close(master)  # the terminal hangs up: SIGHUP ends the console
            proc.terminate()
            proc.wait(30)
