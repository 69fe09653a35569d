"""How untrusted exact text (a command, a path, a tool argument) is shown to a person.

Owns ``shown`` and ``hides``: the one rule every front end uses for text whose exact
characters matter: the console's and ``--plain``'s permission prompt, ``air history``, the HTML
report, the headless progress lines and ``air.log`` (IMPL-UI-7). A terminal (or a browser)
must never get to render such text: a carriage return would let ``rm -rf x;\\recho ok`` look
like ``echo ok``, ``ESC[2K`` would erase it, a backspace overwrite it, a bidi override reorder
it, a zero-width character hide a difference. Pure; no I/O, no pydantic.
"""

from __future__ import annotations

import re

__all__ = ["hides", "shown"]

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_ASCII_HIDDEN = re.compile(r"[\x00-\x1f\x7f]")
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"})
"""Controls, format characters (bidi, zero-width, tags, soft hyphen), surrogates, private use,
unassigned code points, line/paragraph separators and every space but U+0020."""
_INVISIBLE_LETTERS = frozenset(
    "\u115f\u1160\u3164\uffa0\u2800\u034f"  # Hangul fillers, braille blank, grapheme joiner
    + "".join(map(chr, range(0xFE00, 0xFE10)))  # variation selectors
    + "".join(map(chr, range(0xE0100, 0xE01F0)))
)
"""Characters drawn as nothing whose category says otherwise (letters, marks, symbols)."""


def _hidden(char: str, keep_lines: bool) -> bool:
    code = ord(char)
    if code < 0x80:
        if keep_lines and char in "\n\t":
            return False
        return code < 0x20 or code == 0x7F
    import unicodedata

    if char == " ":
        return False
    return unicodedata.category(char) in _HIDDEN_CATEGORIES or char in _INVISIBLE_LETTERS


def _escape(char: str) -> str:
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def hides(text: str, *, keep_lines: bool = False) -> bool:
    """True when ``text`` holds a character ``shown`` escapes (the person must be told)."""
    if text.isascii():
        found = _ASCII_HIDDEN.search(text)
        if found is None:
            return False
        if not keep_lines:
            return True
        return any(_hidden(c, keep_lines) for c in text)
    return any(_hidden(c, keep_lines) for c in text)


def shown(text: str, *, keep_lines: bool = False) -> str:
    """``text`` as exact, visible characters: what a person reads is what it holds.

    Text with nothing hidden comes back unchanged. Otherwise every control character (C0, DEL,
    C1, ``\\r``, ESC), format character (bidi overrides and isolates, zero-width characters,
    BOM, soft hyphen, tags), line or paragraph separator, space other than U+0020, surrogate,
    private-use or unassigned code point and the invisible letters above become an escape:
    ``\\r``, ``\\n``, ``\\t``, ``\\x1b``, ``\\u202e``, ``\\U000e0041``; and every backslash the
    text holds is doubled, so an escape cannot be forged by typing one.

    Args:
        text: untrusted text.
        keep_lines: leave ``\\n`` and ``\\t`` as they are (free text laid out in lines, e.g. a
            task summary in the report); by default they are escaped too, so a command of two
            lines is seen to be two commands.
    """
    if not hides(text, keep_lines=keep_lines):
        return text
    return "".join(
        "\\\\" if c == "\\" else _escape(c) if _hidden(c, keep_lines) else c for c in text
    )
