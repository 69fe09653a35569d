"""What the console needs to know about the terminal it draws on, and how it adapts to it.

Owns ``unicode_terminal`` (is the locale UTF-8: Python's coercion of the C locale, PEP 538/540,
counts as not), ``ConsoleScreen`` / ``make_screen`` (urwid's raw screen with bracketed paste
and urwid's extended keys, the terminal's CR-to-NL input translation off so Enter, byte 13, and
Ctrl-J, byte 10, arrive apart; on a terminal that is not UTF-8 every box-drawing line, status
mark and separator the views draw is written as its ASCII stand-in, at the same width) and
``newline_keys`` (the ``input_filter`` that names byte 10 ``ctrl j``: urwid reports both
bytes as ``enter``).
"""

from __future__ import annotations

import locale
import os
import sys
import termios

import urwid

__all__ = ["ASCII_GLYPHS", "ConsoleScreen", "make_screen", "newline_keys", "unicode_terminal"]

ASCII_GLYPHS: dict[str, str] = {
    **dict.fromkeys("┌┐└┘├┤┬┴┼╭╮╰╯", "+"),
    **dict.fromkeys("─━═⎺⎻⎼⎽", "-"),
    **dict.fromkeys("│┃║", "|"),
    "·": "-",
    "…": ".",
    "•": "*",
    "◦": "o",
    "▶": ">",
    "✓": "v",
    "✗": "x",
    "⊘": "/",
    "‖": "=",
    "▌": "|",
    "↑": "^",
    "↓": "v",
    "→": ">",
    "←": "<",
}
"""One ASCII character per glyph the console draws (each glyph is one column wide)."""
_TABLE = str.maketrans(ASCII_GLYPHS)


def unicode_terminal() -> bool:
    """True when the locale's encoding is UTF-8.

    Python started in the C or POSIX locale coerces it to C.UTF-8 and turns its UTF-8 mode on
    (PEP 538/540) without the terminal changing: that is read as not UTF-8, unless the person
    asked for UTF-8 mode (``PYTHONUTF8=1``)."""
    if sys.flags.utf8_mode and os.environ.get("PYTHONUTF8") != "1":
        return False
    return locale.getpreferredencoding(False).lower().replace("-", "") == "utf8"


class ConsoleScreen(urwid.display.raw.Screen):
    """urwid's raw screen, with Enter and Ctrl-J told apart (ICRNL off while it runs: urwid
    restores the terminal's own settings when it stops); ``ascii``: the console's glyphs are
    written as their ASCII stand-ins (``ASCII_GLYPHS``), other text (what a person or a model
    wrote) as it is."""

    def __init__(self, *, ascii: bool = False) -> None:
        super().__init__(bracketed_paste_mode=True, extended_keys=True)
        self.ascii = ascii
        self.enter_apart = False
        """True while the terminal sends Enter as byte 13 and Ctrl-J as byte 10."""

    def _start(self, alternate_buffer: bool = True) -> None:
        super()._start(alternate_buffer)
        fd = self._input_fileno()
        if fd is not None and os.isatty(fd):
            mode = termios.tcgetattr(fd)
            mode[0] &= ~termios.ICRNL  # iflag
            termios.tcsetattr(fd, termios.TCSANOW, mode)
            self.enter_apart = True

    def _stop(self) -> None:
        self.enter_apart = False
        super()._stop()

    def write(self, data: str) -> None:
        super().write(data.translate(_TABLE) if self.ascii else data)


def make_screen() -> ConsoleScreen:
    """The console's screen (extended keys: Shift+Enter and Ctrl+Enter where the terminal
    reports them through the kitty keyboard protocol or xterm's modifyOtherKeys); ASCII
    drawing when the terminal is not UTF-8."""
    return ConsoleScreen(ascii=not unicode_terminal())


Key = str | tuple[str, int, int, int]
"""A key or a mouse event, as urwid's input filter gets them."""


def newline_keys(screen: object, keys: list[Key], raw: list[int]) -> list[Key]:
    """``ctrl j`` for each ``enter`` that was byte 10, on a screen that keeps Enter (byte
    13) apart from it (``ConsoleScreen.enter_apart``; elsewhere both are Enter).

    The ``enter`` keys of one batch pair, in order, with its bytes 10 and 13 that do not
    follow an ESC (ESC 13 is ``meta enter``); when they do not pair one to one (a key report
    urwid assembled from several reads) the keys are kept as they are."""
    if not getattr(screen, "enter_apart", False):
        return keys
    newlines = [c for i, c in enumerate(raw) if c in (10, 13) and not (i and raw[i - 1] == 27)]
    enters = [i for i, key in enumerate(keys) if key == "enter"]
    if len(newlines) != len(enters) or 10 not in newlines:
        return keys
    out: list[Key] = list(keys)
    for index, code in zip(enters, newlines, strict=True):
        if code == 10:
            out[index] = "ctrl j"
    return out
