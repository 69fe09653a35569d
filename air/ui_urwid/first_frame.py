"""The console's first frame, drawn with the standard library alone (IMPL-FRAME-5).

Owns ``FirstFrame``: before pydantic, Trio, asyncio and urwid are imported (urwid's package
root imports its event loops, and with them asyncio and Trio), it puts the terminal in the
mode the console runs in (the alternate screen; no echo, no line editing, ``IEXTEN`` off and
Enter kept apart from Ctrl-J, as ``terminal.ConsoleScreen`` sets it) and draws what the
console's own first frame shows of a session that is still opening: the HUD ``air · TEXT · F1
help``, the status line ``TEXT`` and the empty input line with the cursor in it; the
conversation and task panes are left blank until urwid draws them over the same screen (no
clear in between). Keys typed meanwhile wait in the terminal's input queue, already
translated as the console reads them, until urwid's loop reads them. ``ConsoleScreen`` takes
the terminal over (``handed_over``: urwid then restores the settings saved here when it
stops); ``close`` restores the terminal when the console never started. Also owns
``unicode_terminal`` (the ASCII console draws no first frame here: urwid draws it).
"""

from __future__ import annotations

import locale
import os
import sys
import termios
from typing import Any

__all__ = ["FirstFrame", "unicode_terminal"]

_HUD = {False: "\x1b[0;30;47m", True: "\x1b[0;7m"}
"""The HUD's attributes: ``views.PALETTE``'s ``hud`` (black on light gray), or under
``NO_COLOR`` ``MONO_PALETTE``'s standout."""
_PLAIN = "\x1b[0m"


def unicode_terminal() -> bool:
    """True when the locale's encoding is UTF-8.

    Python started in the C or POSIX locale coerces it to C.UTF-8 and turns its UTF-8 mode on
    (PEP 538/540) without the terminal changing: that is read as not UTF-8, unless the person
    asked for UTF-8 mode (``PYTHONUTF8=1``)."""
    if sys.flags.utf8_mode and os.environ.get("PYTHONUTF8") != "1":
        return False
    return locale.getpreferredencoding(False).lower().replace("-", "") == "utf8"


def console_mode(mode: list[Any]) -> list[Any]:
    """``mode`` (a ``termios.tcgetattr`` list) as the console runs the terminal: urwid's
    cbreak (no echo, no canonical line, ``IEXTEN`` and ``FLUSHO`` off, one byte at a time)
    and ``ConsoleScreen``'s ICRNL off (Enter is byte 13, Ctrl-J byte 10)."""
    new = list(mode)
    new[0] &= ~termios.ICRNL
    new[3] &= ~(termios.ECHO | termios.ICANON | termios.IEXTEN | termios.FLUSHO)
    new[6] = list(new[6])
    new[6][termios.VMIN], new[6][termios.VTIME] = 1, 0
    return new


class FirstFrame:
    """The first frame on the terminal, before the console's imports.

    Args:
        original: the terminal's settings before air changed them (restored at the end).
        fd: the terminal (stdin; its output is stdout).
    """

    def __init__(self, original: list[Any], fd: int) -> None:
        self.original = original
        self.fd = fd
        self._open = True

    @classmethod
    def draw(cls, text: str, *, no_color: bool | None = None) -> FirstFrame | None:
        """Draw the frame of a session that is ``text`` (e.g. ``opening the session…``).

        None (nothing drawn, nothing changed): not a UTF-8 terminal on both stdin and
        stdout, or one too small for the frame; the console then draws its first frame
        itself."""
        fd = sys.stdin.fileno()
        if not (os.isatty(fd) and sys.stdout.isatty()) or not unicode_terminal():
            return None
        cols, rows = os.get_terminal_size(sys.stdout.fileno())
        if cols < 20 or rows < 6:
            return None
        if no_color is None:
            no_color = bool(os.environ.get("NO_COLOR"))
        original = termios.tcgetattr(fd)
        termios.tcsetattr(fd, termios.TCSANOW, console_mode(original))
        frame = cls(original, fd)
        hud = f" air · {text} · F1 help"[:cols].ljust(cols)
        out = [
            "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J",  # the alternate screen, as urwid starts it
            f"\x1b[1;1H{_HUD[no_color]}{hud}{_PLAIN}",
            f"\x1b[{rows - 3};1H{text[:cols]}",
            f"\x1b[{rows - 2};1H┌{'─' * (cols - 2)}┐",
            f"\x1b[{rows - 1};1H│>{' ' * (cols - 3)}│",
            f"\x1b[{rows};1H└{'─' * (cols - 2)}┘",
            f"\x1b[{rows - 1};4H\x1b[?25h",  # the cursor where the input line has it
        ]
        sys.stdout.write("".join(out))
        sys.stdout.flush()
        sys.audit("air.console.first_frame", text)  # what the frame's import test watches
        return frame

    def handed_over(self) -> None:
        """The console's screen owns the terminal now: it restores ``original`` itself."""
        self._open = False

    def close(self) -> None:
        """The console never took the screen over (an error before it started): leave the
        alternate screen and give the terminal its settings back. Once handed over: nothing."""
        if not self._open:
            return
        self._open = False
        sys.stdout.write("\x1b[?1049l\x1b[?25h")
        sys.stdout.flush()
        termios.tcsetattr(self.fd, termios.TCSANOW, self.original)
