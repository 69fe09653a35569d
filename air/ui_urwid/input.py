"""The console's input box: multi-line, readline's editing keys, history and its search.

Owns ``InputBox`` and the ``Size`` alias of urwid's widget sizes. Enter sends; Shift-Enter,
Ctrl-J, Alt-Enter (or a trailing backslash) add a line; a bracketed paste keeps its newlines;
Ctrl-A/E, Ctrl-U/K, Ctrl-W and Ctrl-D edit as readline does; Up/Down on the first/last line
and Ctrl-P/N walk the history; Ctrl-R searches it (``search`` is the query while it runs).
"""

from __future__ import annotations

from collections.abc import Callable

import urwid

__all__ = ["NEWLINE_KEYS", "InputBox", "Size"]

Size = tuple[()] | tuple[int] | tuple[int, int]

NEWLINE_KEYS = frozenset({"shift enter", "ctrl j", "meta enter", "ctrl enter"})
"""Keys that add a line instead of sending (Shift-Enter where the terminal reports it)."""
_CAPTION = "> "


class InputBox(urwid.Edit):
    """Multi-line input; see the module docstring for its keys."""

    def __init__(self, on_submit: Callable[[str], None]) -> None:
        super().__init__(caption=_CAPTION, multiline=True)
        self._on_submit = on_submit
        self.pasting = False
        self.history: list[str] = []
        self._hist_pos: int | None = None
        self.search: str | None = None
        """The history search's query while Ctrl-R searches (None: not searching)."""
        self._search_from = 0
        self._before_search = ("", 0)

    # --- keys ------------------------------------------------------------------------------

    def keypress(self, size: Size, key: str) -> str | None:
        if self.search is not None:
            rest = self._search_key(key)
            if rest is None:
                return None
        if key == "begin paste":
            self.pasting = True
            return None
        if key == "end paste":
            self.pasting = False
            return None
        if key in NEWLINE_KEYS or (key == "enter" and self.pasting):
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
        if key == "ctrl r":
            self._start_search()
            return None
        if self._edit(key):
            return None
        before = self.edit_text[: self.edit_pos]
        after = self.edit_text[self.edit_pos :]
        if key in ("ctrl p", "up") and (key == "ctrl p" or "\n" not in before):
            return self._walk(-1) if self.history else key
        if key in ("ctrl n", "down") and (key == "ctrl n" or "\n" not in after):
            return self._walk(1) if self._hist_pos is not None else key
        handled: str | None = super().keypress(size, key)  # type: ignore[arg-type]
        return handled

    def _edit(self, key: str) -> bool:
        """readline's editing keys on the cursor's line; True when ``key`` was one."""
        text, pos = self.edit_text, self.edit_pos
        start = text.rfind("\n", 0, pos) + 1
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        if key == "ctrl a":
            self.set_edit_pos(start)
        elif key == "ctrl e":
            self.set_edit_pos(end)
        elif key == "ctrl u":
            self._set(text[:start] + text[pos:], start)
        elif key == "ctrl k":
            self._set(text[:pos] + text[end:], pos)
        elif key == "ctrl w":
            cut = len(text[start:pos].rstrip())
            cut = max(text[start : start + cut].rfind(" ") + 1, 0) if cut else 0
            self._set(text[: start + cut] + text[pos:], start + cut)
        elif key == "ctrl d" and pos < len(text):
            self._set(text[:pos] + text[pos + 1 :], pos)
        else:
            return False
        return True

    def _set(self, text: str, pos: int) -> None:
        self.set_edit_text(text)
        self.set_edit_pos(pos)

    def _walk(self, step: int) -> str | None:
        pos = len(self.history) if self._hist_pos is None else self._hist_pos
        pos = max(0, min(len(self.history), pos + step))
        self._hist_pos = None if pos == len(self.history) else pos
        self.set_edit_text("" if self._hist_pos is None else self.history[pos])
        self.set_edit_pos(len(self.edit_text))
        return None

    # --- Ctrl-R: the history search ----------------------------------------------------------

    def _start_search(self) -> None:
        self._before_search = (self.edit_text, self.edit_pos)
        self.search = ""
        self._search_from = len(self.history)
        self._show_search(found=True)

    def _search_key(self, key: str) -> str | None:
        """A key while searching: None when the search took it, else the key to handle after
        the search ended (the match stays in the line)."""
        query = self.search or ""
        if key == "ctrl r":
            self._find(query, self._search_from - 1 if query else len(self.history) - 1)
        elif key == "backspace":
            self._find(query[:-1], len(self.history) - 1)
        elif len(key) == 1 and key.isprintable():
            self._find(query + key, min(self._search_from, len(self.history) - 1))
        elif key in ("esc", "ctrl g", "ctrl c"):
            self._end_search()
            self._set(*self._before_search)
        elif key == "enter":
            self._end_search()  # the match is taken into the line, to edit or send
        else:
            self._end_search()
            return key
        return None

    def _find(self, query: str, start: int) -> None:
        self.search = query
        for i in range(start, -1, -1):
            if query and query.lower() in self.history[i].lower():
                self._search_from = i
                self._set(self.history[i], self.history[i].lower().find(query.lower()))
                self._show_search(found=True)
                return
        self._show_search(found=not query)

    def _show_search(self, *, found: bool) -> None:
        what = "history search" if found else "no match"
        self.set_caption(f"({what}) '{self.search}': ")

    def _end_search(self) -> None:
        self.search = None
        self._hist_pos = None
        self.set_caption(_CAPTION)
