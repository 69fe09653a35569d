"""Rows whose text runs with the clock, brought up to date only when they are on screen.

Owns ``TickingText`` (a text whose markup is a function of the time: a running task's elapsed
time; ``tick`` sets it again when the second changed) and ``TickingList`` (a ListBox that, as
it renders, ticks the rows it is about to show, and only those). A second that passes costs the
rows on screen, never the tree of every task of a long session (issue 28: render flat in the
session's length; IMPL-READ-5).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import urwid

__all__ = ["TickingList", "TickingText"]


class TickingText(urwid.Text):
    """A text drawn from ``markup_at(now)``; ``second`` is the second it shows.

    Args:
        markup_at: the markup at a time (seconds since the epoch).
        now: the time it is built at.
        ticking: False for a text that no longer changes with time (``tick`` does nothing).
        wrap: as ``urwid.Text``'s.
    """

    def __init__(
        self,
        markup_at: Callable[[float], urwid.text.Markup],
        now: float,
        *,
        ticking: bool = True,
        wrap: Any = "space",
    ) -> None:
        super().__init__(markup_at(now), wrap=wrap)
        self.markup_at = markup_at
        self.ticking = ticking
        self.second = int(now)

    def tick(self, now: float) -> bool:
        """Draw the text at ``now`` when its second changed; True when it did."""
        if not self.ticking or int(now) == self.second:
            return False
        self.second = int(now)
        self.set_text(self.markup_at(now))
        return True


class TickingList(urwid.ListBox[Any]):
    """A ListBox whose visible ``TickingText`` rows (or rows wrapping one, as an ``AttrMap``)
    are brought to ``clock()`` as it renders. Its owner invalidates it
    (``urwid.CanvasCache.invalidate``) when a second passed, so a cached canvas is not kept."""

    def __init__(self, walker: urwid.SimpleFocusListWalker[Any], clock: Callable[[], float]):
        super().__init__(walker)
        self.clock = clock

    def render(self, size: tuple[int, int], focus: bool = False) -> urwid.Canvas:  # type: ignore[override]
        middle, top, bottom = self.calculate_visible(size, focus)
        if middle is not None and top is not None and bottom is not None:
            now = self.clock()
            shown = [middle.focus_widget, *(f.widget for f in top.fill)]
            shown += [f.widget for f in bottom.fill]
            for widget in shown:
                inner = getattr(widget, "original_widget", widget)
                if isinstance(inner, TickingText):
                    inner.tick(now)
        return super().render(size, focus)
