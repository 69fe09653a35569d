"""Syntax colour for the code blocks of an answer (issue 24 item 6).

Owns ``code_markup``: a code block's text as urwid markup, each token of the language its info
string names (```` ```json:result ```` is JSON) given one of a few ``syn_*`` attributes by
Pygments' lexer for it; a language Pygments does not know is drawn in the plain ``code``
attribute. The text is never changed: the markup's strings joined are the code as given (the
lexer keeps every newline and space). Pygments is imported at the first code block drawn, never
before the console's first frame (IMPL-FRAME-1, IMPL-UI-9).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

__all__ = ["SYNTAX_ATTRS", "code_markup", "lexer_name"]

SYNTAX_ATTRS = ("syn_keyword", "syn_string", "syn_comment", "syn_number", "syn_name")
"""The attributes a token can get (every other token is ``code``)."""

_MAX_CHARS = 20_000
"""A longer block is drawn without colour: lexing costs grow with the text, drawing must not."""


def lexer_name(info: str) -> str:
    """The language a fence's info string names: its first word, up to a ``:`` or ``{``
    (```` ```json:result ````, ```` ```python {linenos} ````)."""
    word = info.strip().split(maxsplit=1)[0] if info.strip() else ""
    for stop in ":{,":
        word = word.split(stop, 1)[0]
    return word.lower()


@lru_cache(maxsize=32)
def _lexer(name: str) -> Any:
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        return get_lexer_by_name(name, stripnl=False, ensurenl=False, stripall=False)
    except ClassNotFound:
        return None


def _attr(token: Any) -> str:
    from pygments import token as t

    if token in t.Comment:
        return "syn_comment"
    if token in t.String:
        return "syn_string"
    if token in t.Keyword or token in t.Name.Builtin or token in t.Operator.Word:
        return "syn_keyword"
    if token in t.Number or token in t.Literal.Number:
        return "syn_number"
    if token in t.Name.Function or token in t.Name.Class or token in t.Name.Tag:
        return "syn_name"
    return "code"


def code_markup(code: str, info: str) -> list[tuple[str, str]]:
    """``code`` as urwid markup coloured for the language of ``info`` (its fence's info
    string); one ``code`` run when the language is unknown, empty or the block very long.
    The last blocks coloured are kept: a streaming answer re-colours only the block that
    grew."""
    return list(_coloured(code, info))


@lru_cache(maxsize=128)
def _coloured(code: str, info: str) -> tuple[tuple[str, str], ...]:
    name = lexer_name(info)
    lexer = _lexer(name) if name and len(code) <= _MAX_CHARS else None
    if lexer is None:
        return (("code", code),)
    out: list[tuple[str, str]] = []
    for token, value in lexer.get_tokens(code):
        if not value:
            continue
        attr = _attr(token)
        if out and out[-1][0] == attr:
            out[-1] = (attr, out[-1][1] + value)
        else:
            out.append((attr, value))
    return tuple(out)
