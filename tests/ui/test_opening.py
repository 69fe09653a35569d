"""A console that opens before its session (IMPL-FRAME-1): the real TuiApp on urwid's
TrioEventLoop draws into a real pseudo-terminal before it has a projection or a command
channel; what the person types meanwhile is kept and sent, in order, once it is attached."""

from __future__ import annotations

import fcntl
import os
import struct
import sys
import termios
from collections.abc import Callable

import pytest
import trio
import urwid

from air.contracts.ui import UiCommand
from air.projection import InProcessProjectionClient, ProjectionStore
from air.testing.console_script import ConsoleEvents, RecordingChannel
from air.ui_urwid.app import TuiApp


async def _until(check: Callable[[], bool]) -> None:
    """Poll ``check`` (the pty's output and the app's outbox change without an event)."""
    with trio.fail_after(10):
        while True:
            if check():
                return
            await trio.sleep(0.01)


class Pty:
    """A pseudo-terminal of 120x40: urwid draws on its slave end, the test reads the master."""

    def __init__(self) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.slave_in = os.fdopen(slave, "rb", buffering=0)
        self.slave_out = os.fdopen(os.dup(slave), "w", encoding="utf-8")
        os.set_blocking(self.master, False)
        self.written = b""

    def screen(self, monkeypatch: pytest.MonkeyPatch) -> urwid.display.raw.Screen:
        # urwid sets the tty's signal keys (Ctrl-C is a key) on sys.stdin: the pty here
        monkeypatch.setattr(sys, "stdin", self.slave_in)
        return urwid.display.raw.Screen(input=self.slave_in, output=self.slave_out)

    def read(self) -> str:
        """Everything the console wrote so far (escape sequences included)."""
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            self.written += chunk
        return self.written.decode("utf-8", "replace")

    async def wait_for(self, text: str) -> str:
        await _until(lambda: text in self.read())
        return self.read()

    def close(self) -> None:
        self.slave_in.close()
        self.slave_out.close()
        os.close(self.master)


async def test_the_first_frame_is_drawn_before_the_session_and_typing_waits_for_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pty = Pty()
    try:
        app = TuiApp.opening("opening the session…", screen=pty.screen(monkeypatch), no_color=True)
        async with trio.open_nursery() as nursery:
            await nursery.start(app.run)  # returns once the first frame is drawn
            screen = pty.read()
            assert "air · opening the session… · F1 help" in screen
            assert "IDLE" not in screen  # not a session's state: there is none yet

            os.write(pty.master, b"hello\r")  # typed while the session opens
            await _until(lambda: bool(app.sent))
            assert app.sent == [UiCommand(kind="user_message", text="hello")]
            channel = RecordingChannel()

            ev = ConsoleEvents("ses_opened")
            store = ProjectionStore()
            store.hydrate_events(ev.session())
            app.attach(InProcessProjectionClient(store), channel)
            await pty.wait_for("ses_opened")
            await _until(lambda: bool(channel.sent))
            assert channel.sent == [UiCommand(kind="user_message", text="hello")]
            assert app.opening_text is None
            app.stop()
        assert app.closed.is_set()
    finally:
        pty.close()


async def test_quitting_before_the_session_opened_ends_the_console_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pty = Pty()
    try:
        app = TuiApp.opening("opening the session…", screen=pty.screen(monkeypatch), no_color=True)
        with trio.fail_after(10):  # no 5 s wait for a channel that never came
            async with trio.open_nursery() as nursery:
                await nursery.start(app.run)
                os.write(pty.master, b"\x04")  # Ctrl-D: nothing runs, so it quits
        assert app.closed.is_set()
        assert app.sent == [UiCommand(kind="quit")]
    finally:
        pty.close()
