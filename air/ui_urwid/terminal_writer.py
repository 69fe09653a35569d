"""The console's output, written by a thread of its own: the terminal never stalls the run.

Found: a terminal that stopped reading (an ssh connection gone dead, a terminal emulator
frozen) filled the pty's buffer (~40 KiB: a few redraws) and the console's next write blocked
the Trio thread, so no tool call was served, no model reply recorded and every task's deadline
ran on until the terminal read again.

Owns ``TerminalWriter``: a frame is queued and a thread (``air.write_behind``) writes it to the
terminal's descriptor whole and in order; past ``LIMIT`` bytes queued the console draws nothing
more (``behind``), and once the queue is written out it is told (``on_caught_up``) to draw the
whole screen again. A write the terminal refused (it hung up) is raised by the next ``put``, as
urwid's own write would have raised it.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from air.write_behind import WriteBehind

__all__ = ["LIMIT", "TerminalWriter"]

LIMIT = 1 << 20
"""The most bytes queued for the terminal before the console stops drawing frames."""


class TerminalWriter(WriteBehind[bytes]):
    """Bytes for the terminal at ``fd``, written in order by a thread of their own."""

    def __init__(self, fd: int, on_caught_up: Callable[[], None], *, limit: int = LIMIT) -> None:
        self.fd = fd
        self.on_caught_up = on_caught_up
        self.limit = limit
        self._owed = False  # a frame was not drawn while behind: draw all once caught up
        self._error: OSError | ValueError | None = None
        super().__init__("air-terminal", b"", self._write_chunk)

    def put(self, data: bytes) -> None:
        """Queue ``data``.

        Raises:
            OSError: an earlier write failed (the terminal is gone).
        """
        with self._turn:
            if self._error is not None:
                raise self._error
            if data:
                self._put(data)

    def behind(self) -> bool:
        """Whether more than ``limit`` bytes wait: the caller skips its frame, and is told
        (``on_caught_up``) when the terminal has read them all."""
        with self._turn:
            if self.held > self.limit:
                self._owed = True
                return True
            return False

    def _write_chunk(self, chunk: bytes) -> None:
        view = memoryview(chunk)
        while view:
            view = view[os.write(self.fd, view) :]

    def _failed(self, exc: OSError | ValueError) -> None:
        self._error = exc

    def _written(self) -> None:
        with self._turn:
            caught_up = self._owed and not self.held
            if caught_up:
                self._owed = False
        if caught_up:
            self.on_caught_up()
