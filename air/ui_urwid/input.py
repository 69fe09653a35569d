"""The console's input box: multi-line, history, bracketed paste.

Owns ``InputBox`` and the ``Size`` alias of urwid's widget sizes.
"""

from __future__ import annotations

from collections.abc import Callable

import urwid

__all__ = ["InputBox", "Size"]

Size = tuple[()] | tuple[int] | tuple[int, int]


class InputBox(urwid.Edit):
    """Multi-line input: Enter submits, Alt-Enter or a trailing backslash adds a line, a
    bracketed paste keeps its newlines, ↑/↓ on the first/last line walk the history."""

    def __init__(self, on_submit: Callable[[str], None]) -> None:
        super().__init__(caption="> ", multiline=True)
        self._on_submit = on_submit
        self.pasting = False
        self.history: list[str] = []
        self._hist_pos: int | None = None

    def keypress(self, size: Size, key: str) -> str | None:
        if key == "begin paste":
            self.pasting = True
            return None
        if key == "end paste":
            self.pasting = False
            return None
        if key == "meta enter" or (key == "enter" and self.pasting):
            self.insert_text("\n")
            return None
        if key == "enter":
            text = self.edit_text
            if text.endswith("\\"):
                self.set_edit_text(text[:-1] + "\n")
                self.set_edit_pos(len(self.edit_text))
                return None
            if text.strip():
                self.history.append(text)
            self._hist_pos = None
            self.set_edit_text("")
            self._on_submit(text)
            return None
        before = self.edit_text[: self.edit_pos]
        after = self.edit_text[self.edit_pos :]
        if key in ("ctrl p", "up") and (key == "ctrl p" or "\n" not in before):
            return self._walk(-1) if self.history else key
        if key in ("ctrl n", "down") and (key == "ctrl n" or "\n" not in after):
            return self._walk(1) if self._hist_pos is not None else key
        handled: str | None = super().keypress(size, key)  # type: ignore[arg-type]
        return handled

    def _walk(self, step: int) -> str | None:
        pos = len(self.history) if self._hist_pos is None else self._hist_pos
        pos = max(0, min(len(self.history), pos + step))
        self._hist_pos = None if pos == len(self.history) else pos
        self.set_edit_text("" if self._hist_pos is None else self.history[pos])
        self.set_edit_pos(len(self.edit_text))
        return None
        return None
