"""Output a headless run never waits on (IMPL-OUT-2).

A pager nobody scrolls (``air run --json | less``), a terminal stopped by Ctrl-S or a slow
reader filled the pipe, and the run's next ``print`` blocked its Trio thread: no tool call
served, no worker read, while every task's deadline ran on; the tasks failed ``timeout``.

Owns ``Outlet`` (a text stream whose lines a thread of its own writes to the real one,
``air.write_behind``: a write only queues; past ``LIMIT`` bytes behind, the human progress
drops lines and says how many once the reader catches up, the ``--json`` stream stops as for a
closed stdout), ``outlets`` (the headless run's stdout and stderr as outlets for the length
of a block, drained at its end; ``drain_outlets`` before an ``os._exit``) and ``piped_stdout``
(the console's stdout the same way when it is a pipe: the plain console).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

from air.write_behind import WriteBehind

__all__ = ["LIMIT", "Outlet", "OutletStopped", "drain_outlets", "outlets", "piped_stdout"]

LIMIT = 32 << 20
"""The most characters an outlet holds for its reader."""


class OutletStopped(OSError):
    """The ``--json`` stream's reader went away or (``lagged``) fell ``LIMIT`` behind."""

    def __init__(self, lagged: bool) -> None:
        super().__init__("its reader fell behind" if lagged else "its reader went away")
        self.lagged = lagged


class Outlet(WriteBehind[str]):
    """``target``'s lines, written by a thread of their own. ``strict`` (the ``--json``
    stream): past the limit, or once the target failed, a write raises ``OutletStopped``;
    otherwise (the human progress) such lines are dropped and counted."""

    def __init__(self, target: IO[str], *, strict: bool, limit: int = LIMIT) -> None:
        self.target = target
        self.strict = strict
        self.limit = limit
        self._dropped = 0
        self._stopped: bool | None = None  # None: writing; else whether it fell behind
        super().__init__("air-outlet", "", self._write_chunk)

    def write(self, text: str) -> int:
        with self._turn:
            if self._stopped is not None or self._closing:
                if self.strict:
                    raise OutletStopped(bool(self._stopped))
                return len(text)
            if self.held + len(text) > self.limit:
                if self.strict:
                    self._stopped = True
                    raise OutletStopped(True)
                self._dropped += 1
                return len(text)
            if self._dropped and self.held <= self.limit // 2:
                note = f"air: {self._dropped} lines not shown: this output's reader fell behind "
                self._put(note + "(`air history` has every event)\n")
                self._dropped = 0
            self._put(text)
        return len(text)

    def flush(self) -> None:
        """Nothing to wait for: the outlet's thread writes and flushes what is queued."""

    def settle(self, timeout: float) -> None:
        """Wait until what is queued is written, at most ``timeout`` seconds (before the whole
        process stops: Ctrl-Z)."""
        with self._turn:
            self._turn.wait_for(lambda: not self.held or self._stopped is not None, timeout)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.target, name)  # isatty, fileno, encoding: the real stream's

    def _write_chunk(self, chunk: str) -> None:
        self.target.write(chunk)
        self.target.flush()

    def _failed(self, exc: OSError | ValueError) -> None:
        self._stopped = False


@contextmanager
def outlets(options: Any) -> Iterator[list[Outlet]]:
    """``options.stderr`` (and ``options.stdout`` with ``--json``) as outlets for the block;
    at its end they are drained and the real streams put back."""
    made = [Outlet(options.stderr, strict=False)]
    if options.json_stream:
        made.append(Outlet(options.stdout, strict=True))
    real = options.stderr, options.stdout, sys.stderr, sys.stdout
    # the same streams, whoever writes to them (a warning of Python's own goes to sys.stderr)
    if options.stderr is sys.stderr:
        sys.stderr = made[0]
    options.stderr = made[0]
    if options.json_stream:
        if options.stdout is sys.stdout:
            sys.stdout = made[1]
        options.stdout = made[1]
    _open.extend(made)
    try:
        yield made
    finally:
        for outlet in reversed(made):
            outlet.close()
            _open.remove(outlet)
        options.stderr, options.stdout, sys.stderr, sys.stdout = real


@contextmanager
def piped_stdout() -> Iterator[None]:
    """``sys.stdout`` as an outlet for the block when it is no terminal: the plain console's
    lines into a pipe (``air --plain | less`` nobody scrolls) never wait on its reader; they
    are written out at its pace when the block ends."""
    if sys.stdout.isatty():
        yield
        return
    real = sys.stdout
    outlet = Outlet(real, strict=False)
    sys.stdout = outlet
    _open.append(outlet)
    try:
        yield
    finally:
        outlet.close()
        _open.remove(outlet)
        sys.stdout = real


_open: list[Outlet] = []
"""The outlets of the run under way (``outlets``, ``piped_stdout``)."""


def drain_outlets(timeout: float) -> None:
    """Write out the open outlets, at most ``timeout`` seconds each (before an ``os._exit``:
    a second Ctrl-C)."""
    for outlet in list(_open):
        outlet.close(timeout)
