"""The path globs of permission rules and of the architecture declaration, matched in time
linear in the path.

Owns ``glob_match``: ``**/`` is any run of whole directories (or none), ``**`` anything, ``*``
anything inside one name, ``?`` one character of a name; the rest is literal. A glob is the
user's, the path the model's or a task's (any length: a word of a command is up to 128 KiB,
a tool's path argument more; a file a task made, 4 KiB). Read as a regular expression, a glob
with two wildcards is quadratic in the path and one with more is worse (``**/*secret*`` over
``secret`` 20,000 times took seconds on the parent's event loop, for each rule and each path
of a call), so a path longer than ``_REGEX_PATH_MAX`` or a glob with more than two wildcards
is matched by ``_Automaton``, which reads each character once for all the places the glob can
be at (the same matches: a property test holds it to the expression). Pure.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["glob_match"]

_REGEX_PATH_MAX = 256
"""Up to this many characters, a glob of at most two wildcards is matched as a regex."""


def glob_match(pattern: str, path: str) -> bool:
    """Whether ``path`` matches the glob ``pattern`` whole."""
    automaton = _automaton(pattern)
    if len(path) <= _REGEX_PATH_MAX and automaton.wildcards <= 2:
        return _regex(pattern).fullmatch(path) is not None
    return automaton.matches(path)


def _tokens(pattern: str) -> list[tuple[str, str]]:
    """``pattern`` as (kind, literal) tokens: ``dslash`` (``**/``), ``dstar``, ``star``, ``q``
    or ``lit``."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append(("dslash", ""))
            i += 3
        elif pattern.startswith("**", i):
            out.append(("dstar", ""))
            i += 2
        else:
            char = pattern[i]
            out.append(("star", "") if char == "*" else ("q", "") if char == "?" else ("lit", char))
            i += 1
    return out


@lru_cache(maxsize=512)
def _regex(pattern: str) -> re.Pattern[str]:
    parts = {"dslash": "(?:.*/)?", "dstar": ".*", "star": "[^/]*", "q": "[^/]"}
    return re.compile("".join(parts.get(k) or re.escape(c) for k, c in _tokens(pattern)))


@lru_cache(maxsize=512)
def _automaton(pattern: str) -> _Automaton:
    return _Automaton(_tokens(pattern))


class _Automaton:
    """The glob as a set of places (bit ``p``: before step ``p``; the last bit: matched), all
    advanced together over each character of the path.

    Steps: a literal or ``?`` moves on over its character; ``*`` (not over ``/``) and ``**``
    loop and may be skipped; ``**/`` is an opening that reads nothing, from which the run
    either enters ``**`` then a literal ``/`` or skips all three (once inside, only a ``/``
    leads out)."""

    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        steps: list[tuple[str, str]] = []
        self.skip1 = self.skip3 = 0
        for kind, char in tokens:
            if kind == "dslash":
                self.skip1 |= 0b11 << len(steps)  # the opening, and the ``**`` after it
                self.skip3 |= 1 << len(steps)
                steps += [("open", ""), ("dstar", ""), ("lit", "/")]
            else:
                if kind in ("star", "dstar"):
                    self.skip1 |= 1 << len(steps)
                steps.append((kind, char))
        self.steps = steps
        self.wildcards = sum(kind in ("dslash", "dstar", "star") for kind, _ in tokens)
        self.done = 1 << len(steps)
        # every character the glob does not name moves the places as any other does
        self._moves = {c: self._move(c) for c in {"/", "", *(c for k, c in steps if k == "lit")}}
        self._other = self._moves[""]

    def _closed(self, places: int) -> int:
        while True:
            more = places | ((places & self.skip1) << 1) | ((places & self.skip3) << 3)
            if more == places:
                return places
            places = more

    def _move(self, char: str) -> tuple[int, int]:
        """(the places that move on over ``char``, the places that loop over it); ``""``
        stands for a character the glob does not name."""
        on = stay = 0
        for p, (kind, literal) in enumerate(self.steps):
            if (kind == "lit" and char == literal) or (kind == "q" and char != "/"):
                on |= 1 << p
            elif kind == "dstar" or (kind == "star" and char != "/"):
                stay |= 1 << p
        return on, stay

    def matches(self, path: str) -> bool:
        places = self._closed(1)
        moves, other = self._moves, self._other
        for char in path:
            on, stay = moves.get(char, other)
            places = self._closed(((places & on) << 1) | (places & stay))
            if not places:
                return False
        return bool(places & self.done)
