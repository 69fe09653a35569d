"""A tmux session around one real process: send keys, read the screen, wait for text."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def need_tmux() -> str:
    tmux = shutil.which("tmux")
    if tmux is None:
        pytest.fail("tmux is required for the console tests (it is installed by scripts/setup.sh)")
    return tmux


class Tmux:
    """One private tmux server (``-L``) running one command in a window of the given size."""

    def __init__(self, tmp: Path, *, cols: int = 140, rows: int = 45) -> None:
        self.tmux = need_tmux()
        self.socket = f"air-ui-{uuid.uuid4().hex[:12]}"
        self.tmp = tmp
        self.cols, self.rows = cols, rows
        self.exit_file = tmp / f"{self.socket}.exit"

    def _run(self, *args: str) -> str:
        out = subprocess.run(
            [self.tmux, "-L", self.socket, *args], capture_output=True, text=True, timeout=10
        )
        return out.stdout

    def start(self, argv: list[str], env: dict[str, str] | None = None) -> float:
        """Start ``argv`` in the window; returns the monotonic time just before it started."""
        environ = {k: v for k, v in os.environ.items() if not k.startswith("TMUX")}
        environ.update(env or {})
        environ.setdefault("TERM", "xterm-256color")
        command = " ".join(_quote(a) for a in argv)
        shell = f"cd {_quote(str(ROOT))} && {command} 2>{_quote(str(self.tmp / 'stderr'))}; "
        shell += f"echo $? > {_quote(str(self.exit_file))}; sleep 600"
        started = time.monotonic()
        subprocess.run(
            [
                self.tmux, "-L", self.socket, "-f", "/dev/null", "new-session", "-d",
                "-s", "t", "-x", str(self.cols), "-y", str(self.rows), "sh", "-c", shell,
            ],
            check=True, env=environ, timeout=10,
        )  # fmt: skip
        return started

    def keys(self, *keys: str, literal: bool = False) -> None:
        self._run("send-keys", "-t", "t", *(["-l"] if literal else []), *keys)

    def type(self, text: str) -> None:
        self.keys(text, literal=True)

    def raw(self, data: bytes) -> None:
        """Send ``data`` as the terminal would (an escape sequence, a control byte)."""
        self._run("send-keys", "-t", "t", "-H", *(f"{b:02x}" for b in data))

    def screen(self) -> str:
        return self._run("capture-pane", "-p", "-t", "t")

    def styled(self) -> str:
        """The screen with its SGR attributes (colours, reverse video) as escape sequences."""
        return self._run("capture-pane", "-p", "-e", "-t", "t")

    def wait_for(self, text: str, timeout: float = 15.0, *, gone: bool = False) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if (text in screen) != gone:
                return screen
            time.sleep(0.05)
        stderr = (self.tmp / "stderr").read_text() if (self.tmp / "stderr").exists() else ""
        raise AssertionError(
            f"{'still' if gone else 'never'} saw {text!r} on screen:\n{screen}\nstderr:\n{stderr}"
        )

    def wait_exit(self, timeout: float = 15.0) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.exit_file.exists() and self.exit_file.read_text().strip():
                return int(self.exit_file.read_text())
            time.sleep(0.05)
        raise AssertionError(f"the process did not exit:\n{self.screen()}")

    def resize(self, cols: int, rows: int) -> None:
        self._run("resize-window", "-t", "t", "-x", str(cols), "-y", str(rows))

    def close(self) -> None:
        self._run("kill-server")


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def driver(*args: str) -> list[str]:
    return [sys.executable, "-m", "air.testing.console_driver", *args]


def processes_with(marker: str) -> list[str]:
    """Command lines of live processes that mention ``marker`` (a per-test unique path)."""
    out = subprocess.run(
        ["ps", "-ww", "-eo", "pid,stat,args"], capture_output=True, text=True
    ).stdout
    return [
        line
        for line in out.splitlines()
        if marker in line and "sleep 600" not in line and " Z" not in line[:12]
    ]
