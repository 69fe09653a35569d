"""What a sed script or an awk program does: the files it writes and reads, and whether it runs
commands.

Owns ``read_sed`` and ``read_awk``, two small readers of the languages (not interpreters) that
the command analyzer uses to classify ``sed``/``awk`` by what their program does rather than by
the program's name: sed's ``w``/``W`` commands and ``s///w`` flag write a file, ``r``/``R`` read
one, ``e`` and ``s///e`` run the shell; awk's ``print >``/``>>`` write a file, ``|`` and ``|&``
pipes, ``system()``, ``@include``/``@load`` and gawk's ``/inet`` files run code or use the
network. A sed script the reader cannot follow is reported as running commands (fail closed).
Pure: no I/O.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["ScriptEffects", "read_awk", "read_sed"]


class ScriptEffects(NamedTuple):
    """What a script does: ``runs`` says why it runs commands ("" when it does not);
    ``writes`` lists the files it writes (None for a name computed at run time)."""

    runs: str
    writes: list[str | None]
    reads: list[str]


# -- sed -----------------------------------------------------------------------------------------

_SED_PLAIN = frozenset("=dDgGhHnNpPxzF{}")
_SED_COUNT = frozenset("qQlL")
_SED_TEXT = frozenset("aic")
_SED_LABEL = frozenset(":btTv")


def _eol(text: str, i: int) -> int:
    end = text.find("\n", i)
    return len(text) if end < 0 else end


def _delimited(text: str, i: int, delim: str) -> int:
    """Index just past the ``delim`` that ends the part starting at ``i`` (-1: unterminated)."""
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == delim:
            return i + 1
        i += 1
    return -1


def _sed_one_address(text: str, i: int) -> int:
    n = len(text)
    if i >= n:
        return i
    ch = text[i]
    if ch.isdigit():
        while i < n and text[i].isdigit():
            i += 1
        if i < n and text[i] == "~":
            i += 1
            while i < n and text[i].isdigit():
                i += 1
        return i
    if ch == "$":
        return i + 1
    if ch in "/\\":
        delim = "/"
        if ch == "\\":
            if i + 1 >= n:
                return -1
            delim, i = text[i + 1], i + 1
        i = _delimited(text, i + 1, delim)
        while 0 <= i < n and text[i] in "IM":
            i += 1
        return i
    return i


def _sed_address(text: str, i: int) -> int:
    """Index of the command after an optional address range and ``!`` (-1: malformed)."""
    n = len(text)
    i = _sed_one_address(text, i)
    if i < 0:
        return -1
    while i < n and text[i] in " \t":
        i += 1
    if i < n and text[i] == ",":
        i += 1
        while i < n and text[i] in " \t":
            i += 1
        if i < n and text[i] in "+~":
            i += 1
            while i < n and text[i].isdigit():
                i += 1
        else:
            i = _sed_one_address(text, i)
            if i < 0:
                return -1
    while i < n and text[i] in " \t!":
        i += 1
    return i


def read_sed(script: str) -> ScriptEffects:
    """Read a sed script (GNU syntax; several ``-e`` fragments joined by newlines).

    Returns:
        ``runs`` set for ``e``, ``s///e`` or a script it cannot follow; ``writes`` from ``w``,
        ``W`` and ``s///w``; ``reads`` from ``r`` and ``R``.
    """
    writes: list[str | None] = []
    reads: list[str] = []
    i, n = 0, len(script)
    while i < n:
        ch = script[i]
        if ch in " \t\n;":
            i += 1
            continue
        if ch == "#":
            i = _eol(script, i)
            continue
        i = _sed_address(script, i)
        if i < 0 or i >= n:
            return ScriptEffects("the sed script cannot be read", writes, reads)
        cmd = script[i]
        i += 1
        if cmd in _SED_PLAIN:
            continue
        if cmd in _SED_COUNT:
            while i < n and (script[i] in " \t" or script[i].isdigit()):
                i += 1
            continue
        if cmd in _SED_TEXT:
            end = _eol(script, i)
            while end < n and end > i and script[end - 1] == "\\":
                end = _eol(script, end + 1)
            i = end
            continue
        if cmd in _SED_LABEL:
            while i < n and script[i] not in ";\n":
                i += 1
            continue
        if cmd in "rRwW":
            end = _eol(script, i)
            name = script[i:end].strip()
            if cmd in "wW":
                writes.append(name)
            else:
                reads.append(name)
            i = end
            continue
        if cmd == "e":
            return ScriptEffects("sed script runs shell commands (e)", writes, reads)
        if cmd in "sy":
            if i >= n or script[i] in "\n\\":
                return ScriptEffects("the sed script cannot be read", writes, reads)
            delim = script[i]
            i = _delimited(script, i + 1, delim)
            i = _delimited(script, i, delim) if i >= 0 else -1
            if i < 0:
                return ScriptEffects("the sed script cannot be read", writes, reads)
            while cmd == "s" and i < n and script[i] in "gpiImMew0123456789":
                flag = script[i]
                i += 1
                if flag == "e":
                    return ScriptEffects("sed script runs shell commands (e)", writes, reads)
                if flag == "w":
                    end = _eol(script, i)
                    writes.append(script[i:end].strip())
                    i = end
            continue
        return ScriptEffects(f"the sed script has an unknown command {cmd!r}", writes, reads)
    return ScriptEffects("", writes, reads)


# -- awk -----------------------------------------------------------------------------------------

_AWK_TOKEN = re.compile(
    r"""(?P<skip>[ \t\r]+|\\\n|\#[^\n]*)
      |(?P<nl>\n)
      |(?P<str>"(?:[^"\\]|\\.)*")
      |(?P<name>[A-Za-z_][A-Za-z0-9_]*)
      |(?P<num>[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|\.[0-9]+)
      |(?P<op>\|&|\|\||&&|>>|>=|<=|==|!=|\+\+|--|\+=|-=|\*=|/=|%=|\^=|\*\*|!~|.)""",
    re.VERBOSE | re.DOTALL,
)
_AWK_REGEX_AFTER = frozenset(
    "( , { } ; ! ~ !~ && || == != < <= > >= + - * / % ^ ? : = += -= *= /= %= ^= nl".split()
)
_AWK_KEYWORDS_BEFORE_REGEX = frozenset("print printf return case in".split())
_AWK_END = frozenset({";", "nl", "}"})
_INET = ("/inet/", "/inet4/", "/inet6/")


def _awk_string(token: str) -> str:
    body = token[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), body)


def _awk_tokens(program: str) -> list[tuple[str, str]]:
    """(kind, text) tokens; kinds: str, regex, name, num, nl, op (the operator itself)."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(program)
    while i < n:
        if program[i] == "/":
            prev = out[-1] if out else ("nl", "nl")
            if (
                (prev[0] == "op" and prev[1] in _AWK_REGEX_AFTER)
                or prev[0] == "nl"
                or (prev[0] == "name" and prev[1] in _AWK_KEYWORDS_BEFORE_REGEX)
            ):
                j, in_class = i + 1, False
                while j < n and (in_class or program[j] != "/"):
                    if program[j] == "\\":
                        j += 1
                    elif program[j] == "[":
                        in_class = True
                    elif program[j] == "]":
                        in_class = False
                    j += 1
                out.append(("regex", program[i : j + 1]))
                i = j + 1
                continue
        m = _AWK_TOKEN.match(program, i)
        if m is None:  # an unterminated string: the rest is one opaque word
            out.append(("str", program[i:] + '"'))
            break
        kind = m.lastgroup or "op"
        text = m.group(kind)
        i = m.end()
        if kind == "skip":
            continue
        out.append((kind, "nl" if kind == "nl" else text))
    return out


def read_awk(program: str) -> ScriptEffects:
    """Read an awk program: what it runs, writes (``print >``/``>>``) and reads (``getline <``).

    Returns:
        ``runs`` set for ``system()``, a ``|``/``|&`` pipe (into or out of a command),
        ``@include``/``@load`` and gawk's ``/inet`` network files.
    """
    tokens = _awk_tokens(program)
    writes: list[str | None] = []
    reads: list[str] = []
    depth = 0
    print_depth: int | None = None
    for k, (kind, text) in enumerate(tokens):
        nxt = tokens[k + 1] if k + 1 < len(tokens) else ("nl", "nl")
        if kind == "str" and _awk_string(text).startswith(_INET):
            return ScriptEffects("the awk program opens a network connection (/inet)", [], [])
        if kind == "name":
            if text == "system" and nxt == ("op", "("):
                return ScriptEffects("the awk program calls system()", [], [])
            if text in ("print", "printf") and print_depth is None:
                print_depth = depth
            if text == "getline":  # `getline < "f"`, `getline var < "f"`
                rest = tokens[k + 1 : k + 4]
                if rest and rest[0][0] == "name":
                    rest = rest[1:]
                if len(rest) >= 2 and rest[0] == ("op", "<") and rest[1][0] == "str":
                    reads.append(_awk_string(rest[1][1]))
            continue
        if kind != "op" and kind != "nl":
            continue
        if text == "@" and nxt != ("name", "namespace"):
            # @include/@load load code; @name(...) calls any function by name (system too)
            return ScriptEffects(f"the awk program loads or calls code (@{nxt[1]})", [], [])
        if text in ("|", "|&"):
            return ScriptEffects("the awk program pipes into or out of a command", [], [])
        if text in ("(", "["):
            depth += 1
        elif text in (")", "]"):
            depth -= 1
        elif text in _AWK_END or text == "{":
            if print_depth is not None and depth <= print_depth:
                print_depth = None
        elif text in (">", ">>") and print_depth is not None and depth == print_depth:
            target = tokens[k + 1] if k + 1 < len(tokens) else ("nl", "nl")
            after = tokens[k + 2] if k + 2 < len(tokens) else ("nl", "nl")
            literal = target[0] == "str" and (after[0] == "nl" or after[1] in _AWK_END)
            writes.append(_awk_string(target[1]) if literal else None)
    return ScriptEffects("", writes, reads)
