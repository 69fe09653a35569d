"""Pure text helpers of the console: sanitising untrusted text, folding, diffs.

Owns ``clean`` (every text a worker, a command or a model produced passes it before it
reaches the terminal: escape sequences, C0/C1 controls and bidi overrides are removed, so
output cannot move the cursor, retitle the window, write the clipboard or reorder what the
person reads; a command, a path or a tool input never passes it: it is shown as exact text,
``air.contracts.display.shown``, IMPL-UI-7), ``fold`` (a streaming block shown as its last
lines), ``fold_middle`` (a long finished block shown as its head and its end, the middle
folded: an answer's last lines, its conclusion, are never cut off) and ``diff_markup``
(coloured diff lines), and ``seen`` (what ``clean`` draws, tabs kept: the text a copy takes).
Markdown (and its code blocks) is ``markdown``'s.
"""

from __future__ import annotations

import re

__all__ = [
    "FOLD_CHARS",
    "FOLD_HEAD",
    "FOLD_LINES",
    "FOLD_TAIL",
    "clean",
    "diff_markup",
    "fold",
    "fold_middle",
    "seen",
]

_ESCAPE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC (title, clipboard, hyperlinks)
    r"|\x1b[P^_X][^\x1b]*(?:\x1b\\)?"  # DCS / PM / APC / SOS
    r"|\x1b[@-_]?"  # any other ESC
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
)
_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
FOLD_LINES = 24
"""A text block longer than this is folded."""
FOLD_HEAD = 12
"""Lines of a folded block still shown."""
FOLD_TAIL = 8
"""Lines of a folded finished block shown after the fold (its end)."""
FOLD_CHARS = 2000
"""Characters of a block still shown (a block of very long lines folds by characters)."""


def _as_drawn(text: str) -> str:
    """``text`` without escape sequences, and with only what follows a carriage return on its
    line (progress bars), as a terminal would show it."""
    text = _ESCAPE.sub("", text)
    if "\r" in text:
        text = "\n".join(
            line.rsplit("\r", 1)[-1] if line.rstrip("\r") else ""
            for line in text.replace("\r\n", "\n").split("\n")
        )
    return text


def clean(text: str) -> str:
    """``text`` safe to draw: no escapes or control characters; tabs become spaces.

    A carriage return keeps only what follows it on its line (progress bars), as a terminal
    would show it.
    """
    return _CONTROLS.sub("", _as_drawn(text).expandtabs(4))


def seen(text: str) -> str:
    """What ``clean`` draws of ``text``, its tabs kept: the text Ctrl-Y copies of a block. The
    clipboard never holds what the person was not shown: a hidden line before a carriage
    return, or an escape that ends a shell's bracketed paste, would run when pasted."""
    return _CONTROLS.sub("", _as_drawn(text))


def fold(
    text: str, *, limit: int = FOLD_LINES, head: int = FOLD_HEAD, tail: bool = False
) -> tuple[str, int]:
    """Return the shown text and how many lines were hidden (0 when not folded).

    ``tail`` keeps the end instead of the start (a message still streaming). The shown part
    is also cut to ``FOLD_CHARS`` characters, so drawing a block costs the same however long
    the text grows.
    """
    lines = text.split("\n")
    hidden = 0
    if len(lines) > limit:
        hidden = len(lines) - head
        lines = lines[-head:] if tail else lines[:head]
    shown = "\n".join(lines)
    if len(shown) > FOLD_CHARS:
        kept = shown[-FOLD_CHARS:] if tail else shown[:FOLD_CHARS]
        hidden += shown.count("\n") - kept.count("\n") + 1
        shown = kept
    return shown, hidden


def fold_middle(
    text: str, *, limit: int = FOLD_LINES, head: int = FOLD_HEAD, tail: int = FOLD_TAIL
) -> tuple[str, int, str]:
    """A finished block as (its head, how many lines are folded, its end); nothing folded:
    ``(text, 0, "")``. Each shown part is cut to ``FOLD_CHARS`` characters (the head keeps its
    start, the end its end), so drawing costs the same however long the text is."""
    lines = text.split("\n")
    if len(lines) <= limit and len(text) <= 2 * FOLD_CHARS:
        return text, 0, ""
    if len(lines) <= limit:  # a few very long lines: fold by characters
        first, last = text[:FOLD_CHARS], text[-FOLD_CHARS:]
        return first, text.count("\n") - first.count("\n") - last.count("\n"), last
    first = "\n".join(lines[:head])[:FOLD_CHARS]
    last = "\n".join(lines[-tail:])[-FOLD_CHARS:]
    return first, len(lines) - head - tail, last


def diff_markup(text: str) -> list[tuple[str, str]]:
    """The diff as urwid markup: added, removed, hunk and file-header lines get attributes."""
    out: list[tuple[str, str]] = []
    for line in text.split("\n"):
        if line.startswith(("+++", "---", "diff ", "index ")):
            attr = "diff_file"
        elif line.startswith("+"):
            attr = "diff_add"
        elif line.startswith("-"):
            attr = "diff_del"
        elif line.startswith("@@"):
            attr = "diff_hunk"
        else:
            attr = "body"
        out.append((attr, line + "\n"))
    if out:
        attr, last = out[-1]
        out[-1] = (attr, last[:-1])
    return out
