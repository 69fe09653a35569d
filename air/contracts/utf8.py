"""Text that UTF-8 can hold, from text that came from elsewhere.

Owns ``utf8_safe``: a JSON-like value (strings, lists, dicts, keys too) with every lone
surrogate made U+FFFD. Python hands lone surrogates over from two places air does not choose:
a file name that is no UTF-8 (``os.listdir`` decodes its bytes with ``surrogateescape``: a
repository's Latin-1 ``caf\\xe9.txt`` is ``'caf\\udce9.txt'``) and JSON's ``\\ud800`` escape (a
model's server may send one). Neither can be encoded to UTF-8: an event, an IPC line or a log
line holding one fails, and a tool's listing of such a file ended the whole run. Pure.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["holds_surrogate", "utf8_safe"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def holds_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (ASCII text is answered at C speed)."""
    return not text.isascii() and _SURROGATE.search(text) is not None


def utf8_safe(value: Any) -> Any:
    """``value`` itself when it holds no lone surrogate (ASCII text is checked at C speed),
    else a copy with U+FFFD for each."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if holds_surrogate(value) else value
    if isinstance(value, list):
        items = [utf8_safe(item) for item in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if isinstance(value, dict):
        pairs = [(utf8_safe(k), utf8_safe(v)) for k, v in value.items()]
        same = all(k is a and v is b for (k, v), (a, b) in zip(pairs, value.items(), strict=True))
        return value if same else dict(pairs)
    return value
