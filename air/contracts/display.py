"""How untrusted exact text (a command, a path, a tool argument) is shown to a person.

Owns ``shown`` and ``hides``: the one rule every front end uses for text whose exact
characters matter: the console's and ``--plain``'s permission prompt, ``air history``, the HTML
report, ``--junit``, the headless progress lines and ``air.log`` (IMPL-UI-7). A terminal (or a
browser) must never get to render such text: a carriage return would let
``rm -rf x;\\recho ok`` look like ``echo ok``, ``ESC[2K`` would erase it, a backspace overwrite
it, a bidi override reorder it, a zero-width character hide a difference. ``json_shown`` is the
same rule for a JSON line printed to a terminal (``--json`` streams). Also ``cost_text``,
how a cost (or an unknown one) is shown, and ``left_out_text``, how a merge's left-out files
are. Pure; no I/O, no pydantic.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["cost_text", "hides", "json_shown", "left_out_text", "shown"]


def cost_text(cost_usd: float | None, digits: int = 2) -> str:
    """A cost as every front end shows it: ``$0.12``, or ``unknown`` when a model's price is
    not known (IMPL-LLM-8: never ``$0.00`` for what was not priced)."""
    return "unknown" if cost_usd is None else f"${cost_usd:.{digits}f}"


def left_out_text(names: Sequence[str], count: int) -> str:
    """What a task left that git ignores, which its merge therefore did not take, as every
    front end says it: ``not merged, git ignores it: .env``, ``not merged, git ignores them
    (23): .env, build/, ... and 3 more``; empty when nothing was left out. Each name is a
    task's choice: ``shown``."""
    if count <= 0:
        return ""
    listed = ", ".join(shown(name) for name in names)
    if count > len(names):
        listed += f" and {count - len(names)} more"
    return f"not merged, git ignores {'it' if count == 1 else f'them ({count})'}: {listed}"


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_INVISIBLE = re.compile("[\u115f\u1160\u3164\uffa0\u2800\u034f\ufe00-\ufe0f\U000e0100-\U000e01ef]")
"""Characters drawn as nothing that ``str.isprintable`` lets through (Hangul fillers, the braille
blank, the grapheme joiner, variation selectors)."""


def _hidden(char: str, keep_lines: bool) -> bool:
    """``str.isprintable`` is False exactly for Unicode's Other (Cc, Cf, Cs, Co, Cn) and
    Separator (Zl, Zp, Zs but the ASCII space) categories."""
    if keep_lines and char in "\n\t":
        return False
    return not char.isprintable() or _INVISIBLE.match(char) is not None


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
    if keep_lines:
        text = text.replace("\n", "").replace("\t", "")
    return not text.isprintable() or _INVISIBLE.search(text) is not None


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


def json_shown(line: str) -> str:
    """A JSON text with every character ``shown`` would escape written as a JSON escape
    (``\\u009b``, ``\\u202e``, a surrogate pair above U+FFFF): the same JSON value, which a
    terminal renders as the characters it holds. JSON's own syntax is ASCII, so such a character
    can only stand inside a string, where the escape means the same. Serialisers (pydantic,
    ``json.dumps(ensure_ascii=False)``) escape C0 controls but write C1 controls, bidi overrides
    and zero-width characters as they are."""
    if not hides(line):
        return line
    return "".join(_json_escape(c) if _hidden(c, False) else c for c in line)


def _json_escape(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
