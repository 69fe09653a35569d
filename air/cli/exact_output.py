"""Every line a command other than the console writes to the terminal is exact text (IMPL-UI-7).

Owns ``exact_output``: while a command runs, ``sys.stdout`` and ``sys.stderr`` write every
character ``air.contracts.display.shown`` would escape (an escape sequence, a carriage return,
a bidi override, a zero-width character) as its escape, keeping newlines and tabs. What a
command prints often holds text that a project, a task or a model chose (a project's name, an
unpacked directory's path, a file a task created, a message quoting a config file): the lines
that know it call ``shown`` themselves; this makes the rule hold for every other line too.
Text with nothing hidden passes unchanged, so a line escaped once is never escaped twice.

The console is not wrapped: urwid and the first frame write the terminal's own sequences, and
its text is cleaned before urwid sees it (IMPL-UI-3). Writes to the file descriptors
themselves (a detached run's announcement) and child processes' output are not covered.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO, cast

__all__ = ["exact_output"]


_ASCII_HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f]")
"""The ASCII characters ``shown(keep_lines=True)`` escapes: ASCII text without them is written as
it is (every line of a long ``air history`` without a call into ``shown``)."""


class _Exact:
    """A text stream that writes exact text to ``stream`` and is ``stream`` otherwise."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._shown: Callable[..., str] | None = None

    def write(self, text: str) -> int:
        if text.isascii() and _ASCII_HIDDEN.search(text) is None:
            self._stream.write(text)
            return len(text)
        if self._shown is None:
            # imported when first needed: ``air run`` starts its spare worker before it loads
            # any of air's contracts (IMPL-BOOT-1)
            from air.contracts.display import shown

            self._shown = shown
        self._stream.write(self._shown(text, keep_lines=True))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def exact_output() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` write exact text until the block ends."""
    saved = sys.stdout, sys.stderr
    sys.stdout = cast(TextIO, _Exact(sys.stdout))
    sys.stderr = cast(TextIO, _Exact(sys.stderr))
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
