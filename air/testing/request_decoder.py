"""The strict servers' request decoding: ``json.loads`` of a request body, done once per message.

Owns ``ConversationDecoder``. A long task sends its whole conversation with every turn, so a
server that decodes each body whole spends time growing with the conversation (IMPL-API-7). A
JSON object's ``messages`` array whose text up to the end of some earlier message is the
same as in the previous body holds the same values up to there: those decoded messages are
taken as they were (the same objects, which the servers only read), and only the text after
them is decoded. The result always equals ``json.loads`` of the body; anything but an object
(or one that breaks off, or has extra data) is decoded by ``json.loads`` itself, so a bad
body raises exactly its error.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["ConversationDecoder"]

_SCAN: Callable[[str, int], tuple[Any, int]] = vars(json.JSONDecoder())["scan_once"]
"""The standard library's value scanner (its C one when built): ``(value, end)`` of the JSON
value starting exactly at an index, ``StopIteration`` when none does."""
_BLANKS = re.compile(r"[ \t\n\r]*")
"""What JSON allows between tokens (``json.decoder``'s own pattern)."""
_KEY = "messages"


def _skip(text: str, at: int) -> int:
    """``at`` past the blanks there."""
    found = _BLANKS.match(text, at)
    return found.end() if found is not None else at


class _Unusual(Exception):
    """The body leaves the plain path (not an object, broken off, extra data)."""


class ConversationDecoder:
    """Decode request bodies, reusing the previous body's decoded messages (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._text = ""
        self._start = -1
        """Where the previous body's ``messages`` array opened in ``_text`` (after its ``[``)."""
        self._ends: list[int] = []
        """Where each message of the previous body's ``messages`` ended in ``_text``."""
        self._values: list[Any] = []
        """The previous body's decoded messages."""

    def decode(self, raw: bytes) -> Any:
        """``json.loads(raw)``, with the messages the previous body shared taken as they were.

        Raises:
            ValueError: what ``json.loads`` raises for ``raw`` (``JSONDecodeError``,
                ``UnicodeDecodeError``).
        """
        try:
            text = raw.decode(json.detect_encoding(raw), "surrogatepass")
            return self._object(text)
        except (_Unusual, StopIteration, ValueError):
            return json.loads(raw)

    def _object(self, text: str) -> dict[str, Any]:
        at = _skip(text, 0)
        if text[at : at + 1] != "{":
            raise _Unusual
        at = _skip(text, at + 1)
        found: dict[str, Any] = {}
        if text[at : at + 1] == "}":
            return self._end(text, at + 1, found)
        while True:
            if text[at : at + 1] != '"':
                raise _Unusual
            key, at = _SCAN(text, at)
            at = _skip(text, at)
            if text[at : at + 1] != ":":
                raise _Unusual
            at = _skip(text, at + 1)
            if key == _KEY and text[at : at + 1] == "[":
                found[key], at = self._messages(text, at + 1)
            else:
                found[key], at = _SCAN(text, at)
            at = _skip(text, at)
            mark = text[at : at + 1]
            if mark == "}":
                return self._end(text, at + 1, found)
            if mark != ",":
                raise _Unusual
            at = _skip(text, at + 1)

    @staticmethod
    def _end(text: str, at: int, found: dict[str, Any]) -> dict[str, Any]:
        if _skip(text, at) != len(text):
            raise _Unusual  # extra data: json.loads names it
        return found

    def _messages(self, text: str, at: int) -> tuple[list[Any], int]:
        """The array whose first item starts at (or after blanks from) ``at``; its end."""
        start = at
        values, ends = self._shared(text, start)
        at = _skip(text, ends[-1] if ends else at)
        if not ends and text[at : at + 1] == "]":
            self._keep(text, start, [], [])
            return [], at + 1
        if ends:
            if text[at : at + 1] == "]":
                self._keep(text, start, ends, values)
                return list(values), at + 1
            if text[at : at + 1] != ",":
                raise _Unusual
            at = _skip(text, at + 1)
        while True:
            value, at = _SCAN(text, at)
            values.append(value)
            ends.append(at)
            at = _skip(text, at)
            mark = text[at : at + 1]
            if mark == "]":
                self._keep(text, start, ends, values)
                return list(values), at + 1
            if mark != ",":
                raise _Unusual
            at = _skip(text, at + 1)

    def _shared(self, text: str, start: int) -> tuple[list[Any], list[int]]:
        """The previous body's leading messages whose text ``text`` starts with, when its
        array opened at ``start`` too (copies)."""
        with self._lock:
            old, opened, ends, values = self._text, self._start, self._ends, self._values
        if opened != start:
            return [], []
        if ends and text.startswith(old[: ends[-1]]):
            return values[:], ends[:]  # a grown conversation: one comparison
        low, high = 0, len(ends)  # old[: ends[low - 1]] is shared; old[: ends[high]] is not
        while low < high:
            mid = (low + high + 1) // 2
            if text.startswith(old[: ends[mid - 1]]):
                low = mid
            else:
                high = mid - 1
        return values[:low], ends[:low]

    def _keep(self, text: str, start: int, ends: list[int], values: list[Any]) -> None:
        with self._lock:
            self._text, self._start, self._ends, self._values = text, start, ends, list(values)
