"""The console's output, written by a thread of its own: the terminal never stalls the run.

Found: a terminal that stopped reading (an ssh connection gone dead, a terminal emulator
frozen) filled the pty's buffer (~40 KiB: a few redraws) and the console's next write blocked
the Trio thread, so no tool call was served, no model reply recorded and every task's deadline
ran on until the terminal read again.

Owns ``TerminalWriter``: a frame is queued and a thread writes it to the terminal's descriptor
whole and in order; past ``LIMIT`` bytes queued the console draws nothing more (``behind``),
and once the queue is written out it is told (``on_caught_up``) to draw the whole screen again.
A write the terminal refused (it hung up) is raised by the next ``put``, as urwid's own write
would have raised it.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable

__all__ = ["LIMIT", "TerminalWriter"]

LIMIT = 1 << 20
"""The most bytes queued for the terminal before the console stops drawing frames."""


class TerminalWriter:
    """Bytes for the terminal at ``fd``, written in order by a thread of their own."""

    def __init__(self, fd: int, on_caught_up: Callable[[], None], *, limit: int = LIMIT) -> None:
        self.fd = fd
        self.on_caught_up = on_caught_up
        self.limit = limit
        self._queue: deque[bytes] = deque()
        self._held = 0
        self._owed = False  # a frame was not drawn while behind: draw all once caught up
        self._failed: OSError | None = None
        self._closing = False
        self._turn = threading.Condition()
        self._thread = threading.Thread(target=self._write_out, name="air-terminal", daemon=True)
        self._thread.start()

    def put(self, data: bytes) -> None:
        """Queue ``data``.

        Raises:
            OSError: an earlier write failed (the terminal is gone).
        """
        with self._turn:
            if self._failed is not None:
                raise self._failed
            if data:
                self._queue.append(data)
                self._held += len(data)
                self._turn.notify_all()

    def behind(self) -> bool:
        """Whether more than ``limit`` bytes wait: the caller skips its frame, and is told
        (``on_caught_up``) when the terminal has read them all."""
        with self._turn:
            if self._held > self.limit:
                self._owed = True
                return True
            return False

    def close(self, timeout: float | None = None) -> None:
        """Write out what is queued (at most ``timeout`` seconds), then end the thread."""
        with self._turn:
            self._closing = True
            self._turn.notify_all()
        self._thread.join(timeout)

    def _write_out(self) -> None:
        while True:
            with self._turn:
                while not self._queue and not self._closing:
                    self._turn.wait()
                if not self._queue:
                    return
                data = b"".join(self._queue)
                self._queue.clear()
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self.fd, view) :]
            except OSError as exc:
                with self._turn:
                    self._failed = exc
                    self._queue.clear()
                    self._held = 0
                return
            with self._turn:
                self._held -= len(data)
                caught_up = self._owed and not self._held
                if caught_up:
                    self._owed = False
            if caught_up:
                self.on_caught_up()
