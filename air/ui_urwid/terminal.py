"""What the console needs to know about the terminal it draws on, and how it adapts to it.

Owns ``ConsoleScreen`` / ``make_screen`` (urwid's raw screen with bracketed paste and urwid's
extended keys, the terminal's CR-to-NL input translation off so Enter, byte 13, and Ctrl-J,
byte 10, arrive apart, its flow control off so Ctrl-S freezes nothing, its frames written by a
thread of their own (``TerminalWriter``: a terminal that reads nothing never stalls the run);
on a terminal that is not UTF-8 every box-drawing line, status mark and separator the views
draw is written as its ASCII stand-in, at the same width) and ``newline_keys`` (the
``input_filter`` that names byte 10 ``ctrl j``: urwid reports both bytes as ``enter``).
Re-exports ``unicode_terminal`` (``first_frame``'s: is the locale UTF-8; Python's coercion of
the C locale, PEP 538/540, counts as not).
"""

from __future__ import annotations

import os
import select
import termios
from typing import TYPE_CHECKING, Any

import urwid

from air.ui_urwid.first_frame import unicode_terminal
from air.ui_urwid.terminal_writer import TerminalWriter

if TYPE_CHECKING:
    from air.ui_urwid.first_frame import FirstFrame

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


class ConsoleScreen(urwid.display.raw.Screen):
    """urwid's raw screen, with Enter and Ctrl-J told apart and Ctrl-S a key (ICRNL and IXON
    off while it runs: urwid restores the terminal's own settings when it stops); ``ascii``:
    the console's glyphs are written as their ASCII stand-ins (``ASCII_GLYPHS``), other text
    (what a person or a model wrote) as it is; ``takeover``: the ``FirstFrame`` on the
    terminal, whose screen and settings this one takes over when it starts (it restores the
    terminal's settings from before that frame, IMPL-FRAME-5)."""

    def __init__(self, *, ascii: bool = False, takeover: FirstFrame | None = None) -> None:
        super().__init__(bracketed_paste_mode=True, extended_keys=True)
        self.ascii = ascii
        self.takeover = takeover
        self.enter_apart = False
        """True while the terminal sends Enter as byte 13 and Ctrl-J as byte 10."""
        self._held: list[int] = []
        """Bytes typed at the first frame, read before urwid's start, given to it first."""
        self._writer: TerminalWriter | None = None
        self._pending: list[str] = []
        self._encoding, self._errors = "utf-8", "strict"

    def get_available_raw_input(self) -> list[int]:
        held, self._held = self._held, []
        return held + super().get_available_raw_input()

    def _start(self, alternate_buffer: bool = True) -> None:
        fd = self._input_fileno()
        if self.takeover is not None and fd is not None and os.isatty(fd):
            # what was typed at the first frame: urwid's cbreak (TCSAFLUSH) would drop it
            self._held = list(_pending_input(fd))
        super()._start(alternate_buffer)
        if self._held:
            self._resize_pipe_wr.send(b"K")  # wakes the loop: it reads the held keys first
        if fd is not None and os.isatty(fd):
            mode = termios.tcgetattr(fd)
            # iflag: Enter and Ctrl-J apart; no flow control (Ctrl-S, a save reflex, stopped
            # every byte the console wrote until a Ctrl-Q: it looked hung)
            mode[0] &= ~(termios.ICRNL | termios.IXON)
            termios.tcsetattr(fd, termios.TCSANOW, mode)
            self.enter_apart = True
            if self.takeover is not None:
                # urwid saved the first frame's settings: what it restores is the terminal's own
                self._old_termios_settings = self.takeover.original
        if self.takeover is not None:
            self.takeover.handed_over()
            self.takeover = None
        self._start_writer()

    def _start_writer(self) -> None:
        """From here on a thread writes to the terminal (``TerminalWriter``); urwid's own start
        and stop write synchronously, so the terminal is set up and restored in order."""
        out: Any = self._term_output_file
        try:
            fd = out.fileno()
        except (AttributeError, OSError, ValueError):
            return  # not a terminal's file (a test's StringIO): urwid writes it itself
        out.flush()
        self._encoding = getattr(out, "encoding", None) or "utf-8"
        self._errors = getattr(out, "errors", None) or "strict"
        self._writer = TerminalWriter(fd, self._draw_all)

    def _draw_all(self) -> None:
        """The terminal read all that was queued: the next frame is drawn whole, as after a
        resize (the writer's thread: only a flag and the loop's wake-up, as urwid's SIGWINCH
        handler does)."""
        self._resized = True
        self._wake_input_loop()

    def _stop(self) -> None:
        self.enter_apart = False
        writer, self._writer = self._writer, None
        if writer is not None:
            self._put(writer)
            writer.close()  # written out before urwid restores the terminal
        super()._stop()

    def draw_screen(self, size: tuple[int, int], canvas: urwid.Canvas) -> None:
        if self._writer is not None and self._writer.behind():
            return  # the terminal reads nothing now: drawn whole once it caught up
        super().draw_screen(size, canvas)

    def write(self, data: str) -> None:
        text = data.translate(_TABLE) if self.ascii else data
        if self._writer is None:
            super().write(text)
        else:
            self._pending.append(text)

    def flush(self) -> None:
        if self._writer is None:
            super().flush()
        else:
            self._put(self._writer)

    def _put(self, writer: TerminalWriter) -> None:
        if self._pending:
            data = "".join(self._pending).encode(self._encoding, self._errors)
            self._pending.clear()
            writer.put(data)


def _pending_input(fd: int) -> bytes:
    """The bytes waiting in the terminal's input queue, without blocking."""
    data = b""
    while select.select([fd], [], [], 0)[0]:
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    return data


def make_screen(takeover: FirstFrame | None = None) -> ConsoleScreen:
    """The console's screen (extended keys: Shift+Enter and Ctrl+Enter where the terminal
    reports them through the kitty keyboard protocol or xterm's modifyOtherKeys); ASCII
    drawing when the terminal is not UTF-8; ``takeover``: the first frame it draws over."""
    return ConsoleScreen(ascii=not unicode_terminal(), takeover=takeover)


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
