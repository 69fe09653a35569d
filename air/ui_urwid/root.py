"""The console's top widget: where every key and mouse event arrives first.

Owns ``Root``: PageUp/PageDown (from the input or the conversation) and the mouse wheel
(anywhere) scroll the conversation, with no Tab to it first; every other key goes to the
console's global keys (``TuiApp.handle_key``) and, when they leave it, to the focused widget.
"""

from __future__ import annotations

from typing import Protocol

import urwid

from air.ui_urwid.input import Size
from air.ui_urwid.layout import ConsoleLayout

__all__ = ["KeyHandler", "Root"]

_WHEEL_LINES = 3
"""Lines the conversation scrolls per notch of the wheel."""


class KeyHandler(Protocol):
    """What ``Root`` routes to (the ``TuiApp``)."""

    layout: ConsoleLayout

    def handle_key(self, key: str) -> bool: ...

    def after_key(self) -> None: ...

    def focus_name(self) -> str: ...


class Root(urwid.WidgetPlaceholder[urwid.Widget]):
    """The top widget: the frame, or an overlay (a prompt, help, history) over it."""

    def __init__(self, app: KeyHandler, widget: urwid.Widget) -> None:
        super().__init__(widget)
        self._app = app

    def selectable(self) -> bool:
        return True  # global keys (a prompt's answer, Esc, F1) arrive even over plain text

    def keypress(self, size: Size, key: str) -> str | None:
        app = self._app
        paging = key in ("page up", "page down")
        if paging and len(size) == 2 and self._scrolls() and self._from_input_or_conversation():
            app.layout.scroll_conversation(size, key)
            return None
        if app.handle_key(key):
            return None
        rest = super().keypress(size, key)
        if len(size) == 2 and app.focus_name() == "conversation":
            app.layout.scroll_conversation(size, "", times=0)  # follows again at the end
        app.after_key()
        return rest

    def mouse_event(
        self, size: Size, event: str, button: int, col: int, row: int, focus: bool
    ) -> bool | None:
        """The wheel scrolls the conversation wherever the pointer is; other mouse events
        go to the widgets."""
        if event == "mouse press" and button in (4, 5) and len(size) == 2 and self._scrolls():
            key = "up" if button == 4 else "down"
            self._app.layout.scroll_conversation(size, key, times=_WHEEL_LINES)
            return True
        handled: bool | None = super().mouse_event(size, event, button, col, row, focus)
        return handled

    def _scrolls(self) -> bool:
        """The conversation is on the screen to scroll (no prompt or overlay over it)."""
        return self.original_widget is self._app.layout.frame

    def _from_input_or_conversation(self) -> bool:
        return self._app.focus_name() in ("input", "conversation")
