"""Writes a caller never waits on: queued, then written in order by a thread of their own.

Owns ``WriteBehind``, the queue and thread under the headless run's outlets
(``air.cli.outlet``: a pager nobody scrolls) and the console's terminal
(``air.ui_urwid.terminal_writer``: a terminal that reads nothing): a reader that stops never
blocks the Trio thread. It is given what writes one chunk whole (``emit``); a subclass says
what a failed write means (``_failed``); what a chunk counts (``held``) is read and kept under
``_turn``.
Standard library only.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["WriteBehind"]

Chunk = TypeVar("Chunk", str, bytes)


class WriteBehind(Generic[Chunk]):
    """Chunks written in order by a thread named ``name``, each by ``emit`` (whole; raising
    OSError or ValueError when the reader is gone); ``empty`` joins them (``""`` or ``b""``).
    ``_turn`` is reentrant: a signal handler's line may arrive inside a write."""

    def __init__(self, name: str, empty: Chunk, emit: Callable[[Chunk], object]) -> None:
        self._empty: Chunk = empty
        self._emit: Callable[[Chunk], object] = emit
        self._queue: deque[Chunk] = deque()
        self.held = 0
        """Characters or bytes queued or being written."""
        self._closing = False
        self._turn = threading.Condition(threading.RLock())
        self._thread = threading.Thread(target=self._write_out, name=name, daemon=True)
        self._thread.start()

    def _put(self, chunk: Chunk) -> None:
        """Queue ``chunk`` (the caller holds ``_turn``)."""
        self._queue.append(chunk)
        self.held += len(chunk)
        self._turn.notify_all()

    def _failed(self, exc: OSError | ValueError) -> None:
        """A write failed: nothing more is written (called holding ``_turn``)."""

    def _written(self) -> None:
        """A chunk was written out (the writer's thread, holding nothing)."""

    def close(self, timeout: float | None = None) -> None:
        """Write out what is queued (waiting as long as the reader takes; ``timeout``: at most
        that long), then end the thread."""
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
                chunk = self._empty.join(self._queue)
                self._queue.clear()
            try:
                self._emit(chunk)
            except (OSError, ValueError) as exc:
                with self._turn:
                    self._queue.clear()
                    self.held = 0
                    self._failed(exc)
                    self._turn.notify_all()
                return
            with self._turn:
                self.held -= len(chunk)
                self._turn.notify_all()
            self._written()
