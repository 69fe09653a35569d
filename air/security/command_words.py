"""The words and segments of a command line, and what a program's handler may ask of the
analyzer.

Owns ``Segment`` (one simple command, classified, with the paths it reads and writes) and its
constructors, ``Word`` (an argument: its literal value or None for an expansion), the literal
value of a tree-sitter node (quotes, ``$'...'`` escapes), the argv helpers the handlers share
(positional arguments, option values, the subcommand after global options), ``Analyzer`` (the
analyzer as the handlers see it: classify a wrapped argv, a wrapped command or a shell script)
and ``HandlerFn``, a program handler's signature. Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple, Protocol

from air.contracts.permission import CommandCategory
from air.security.command_tables import NULL_TARGETS

if TYPE_CHECKING:
    from tree_sitter import Node

__all__ = [
    "DYNAMIC",
    "MAX_DEPTH",
    "MAX_NODES",
    "Analyzer",
    "HandlerFn",
    "Segment",
    "Word",
    "argv_value",
    "first_subcommand",
    "hidden_targets",
    "literal",
    "new_segment",
    "node_text",
    "option_values",
    "options_before_dashdash",
    "positional_args",
    "scope_marker",
    "skip_options",
]

C = CommandCategory


MAX_DEPTH = 4

MAX_NODES = 10_000
"""Syntax nodes one parse of a command may have to be analyzed: the walk costs 40-100 µs a node
on the Trio thread (8,000 commands in a pipeline took 3 s); a longer script is opaque. A
heredoc's body is one node however long."""


DYNAMIC = "$dynamic"


@dataclass(eq=False)
class Segment:
    """One simple command of a command line, classified, with the paths it reads and writes."""

    text: str
    program: str | None
    category: CommandCategory
    reason: str
    write_targets: list[str] = field(default_factory=list)
    read_targets: list[str] = field(default_factory=list)
    tool_targets: list[str] = field(default_factory=list)
    """The write targets ``add_moved_targets`` added: where a build/test tool works."""
    weak_reads: list[str] = field(default_factory=list)
    """Bare words like ``shadow`` or ``credentials``: read targets only below a ``cd``'s
    directory (``cd /etc && cat shadow``), never as a search pattern or a message word."""
    bases: list[str] = field(default_factory=list)
    """Directories this segment's own relative targets are (also) relative to (``tar -C``)."""
    chdir: str | None = None
    """Where a ``cd``/``pushd`` moves the following segments (``$dynamic`` when unknown)."""
    hidden: bool = False
    """Carries targets only (a ``<`` redirect, an assignment): not a segment of the analysis."""
    scope: str | None = None
    """``push``/``pop`` around a subshell, ``and`` at a ``&&`` (hidden markers for ``cd``)."""


class Word(NamedTuple):
    """An argument: its literal value, or None when it depends on an expansion. A read-only
    record, so a NamedTuple (cheaper to create than a dataclass: IMPL-BOOT-9, IMPL-BOOT-12)."""

    value: str | None
    node: Node | None = None


def new_segment(text: str, program: str | None, cat: CommandCategory, reason: str) -> Segment:
    """A segment of ``program`` classified ``cat`` for ``reason``, with no targets yet."""
    return Segment(text=text, program=program, category=cat, reason=reason)


_OPTION_PREFIX = re.compile(r"""^["']?(-[^$`"'\\]+)["']?[$`"]""")


def argv_value(word: Word) -> str | None:
    """The word as a program sees it: a dynamic word with a literal option prefix
    (``--pre=$X``, ``-o"$OUT"``, ``-j$(nproc)``) is that option with a ``$dynamic`` value, so the
    program's option tables still see the option; any other dynamic word stays None."""
    if word.value is not None or word.node is None:
        return word.value
    m = _OPTION_PREFIX.match(node_text(word.node))
    return m.group(1) + DYNAMIC if m else None


def node_text(node: Node | None) -> str:
    """The source text of ``node`` ("" for none)."""
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", errors="replace")


_ANSI_C = re.compile(r"\\(x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|[0-7]{1,3}|c.|.)")
_ANSI_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b"}
_ANSI_SIMPLE.update({"f": "\f", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"})


def _ansi_c(body: str) -> str | None:
    """Decode a bash ``$'...'`` string (None for escapes it cannot decode faithfully)."""

    def one(m: re.Match[str]) -> str:
        esc = m.group(1)
        if esc[0] in "xuU":
            return chr(int(esc[1:], 16))
        if esc[0] in "01234567":
            return chr(int(esc, 8) & 0xFF)
        if esc[0] == "c":
            return chr(ord(esc[1].upper()) ^ 0x40)
        return _ANSI_SIMPLE.get(esc, "\\" + esc)

    try:
        decoded = _ANSI_C.sub(one, body)
    except (ValueError, OverflowError):
        return None
    # bash ends the word at a NUL: `cat $'/etc/shadow\x00x'` reads /etc/shadow.
    return decoded.split("\x00", 1)[0]


def literal(node: Node) -> str | None:
    """The static value of a word-like node, or None when it needs an expansion."""
    kind = node.type
    if kind in ("word", "number"):
        raw = node_text(node)
        if any(ch in raw for ch in "*?[") and kind == "word":
            return raw
        out = []
        i = 0
        while i < len(raw):
            if raw[i] == "\\" and i + 1 < len(raw):
                out.append(raw[i + 1])
                i += 2
                continue
            out.append(raw[i])
            i += 1
        return "".join(out)
    if kind == "raw_string":
        return node_text(node)[1:-1]
    if kind == "ansi_c_string":
        return _ansi_c(node_text(node)[2:-1])
    if kind == "string":
        parts = []
        for child in node.children:
            if child.type == '"':
                continue
            if child.type == "string_content":
                # Inside double quotes a backslash only escapes $ ` " \ and a newline.
                parts.append(re.sub(r"\\([$`\"\\\n])", r"\1", node_text(child)))
            else:
                return None
        return "".join(parts)
    if kind == "concatenation":
        pieces = []
        for child in node.children:
            value = literal(child)
            if value is None:
                return None
            pieces.append(value)
        return "".join(pieces)
    return None


def positional_args(args: Sequence[str | None]) -> list[str | None]:
    """``args`` without their options (a ``-`` and everything after ``--`` are operands)."""
    out: list[str | None] = []
    after_dashdash = False
    for a in args:
        if a == "--" and not after_dashdash:
            after_dashdash = True
            continue
        if a is not None and a.startswith("-") and not after_dashdash and a != "-":
            continue
        out.append(a)
    return out


def options_before_dashdash(args: Sequence[str | None]) -> list[str | None]:
    """``args`` up to a ``--``."""
    return list(args[: args.index("--")]) if "--" in args else list(args)


def scope_marker(kind: str) -> Segment:
    """A hidden marker segment: ``push``/``pop`` around a subshell, ``and`` at a ``&&``."""
    return Segment(text="", program=None, category=C.READ_ONLY, reason="", hidden=True, scope=kind)


def hidden_targets(text: str, *, read_targets: list[str]) -> Segment:
    """A hidden segment carrying ``read_targets`` only (a ``<`` redirect, an assignment)."""
    return Segment(
        text=text,
        program=None,
        category=C.READ_ONLY,
        reason="",
        read_targets=read_targets,
        hidden=True,
    )


def option_values(args: Sequence[str | None], options: Iterable[str]) -> list[str]:
    """Values of ``options`` in ``args``: ``-C dir``, ``-Cdir``, ``--directory=dir``, and the
    single-dash long options of Go and LLVM tools with ``=`` (``-modfile=x``,
    ``-export-fixes=x``)."""
    wanted = set(options)
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg is None:
            continue
        if arg == "--":
            break
        if arg in wanted:
            if i < len(args):
                value = args[i]
                out.append(value if value is not None else DYNAMIC)
                i += 1
            continue
        name, eq, value = arg.partition("=")
        if eq and name in wanted and (name.startswith("--") or len(name) > 2):
            out.append(value)
        elif not arg.startswith("--") and len(arg) > 2 and arg[:2] in wanted:
            out.append(arg[2:])
    return [v for v in out if v and v not in NULL_TARGETS]


def skip_options(args: list[str | None], with_value: Iterable[str] = ()) -> list[str | None]:
    """``args`` after their leading options (those in ``with_value`` take the next word)."""
    rest = list(args)
    valued = set(with_value)
    while rest and rest[0] is not None and rest[0].startswith("-") and rest[0] != "-":
        opt = rest.pop(0)
        if opt == "--":
            break
        if opt in valued and rest:
            rest.pop(0)
    return rest


def first_subcommand(
    args: Sequence[str | None], valued: Iterable[str] = ()
) -> tuple[str | None, list[str | None]]:
    """The first word after the leading options ("" for none; ``valued`` options take a
    value) and the words after it."""
    rest = skip_options(list(args), valued)
    if not rest:
        return "", []
    return rest[0], rest[1:]


class Analyzer(Protocol):
    """The analyzer as a program's handler sees it (``CommandRiskAnalyzer`` is one)."""

    def classify_argv(self, text: str, argv: Sequence[str | None], depth: int) -> list[Segment]:
        """Classify the command ``argv`` (a wrapped or nested one: ``depth`` counts the nesting)."""
        ...

    def wrapped_command(
        self,
        text: str,
        args: list[str | None],
        depth: int,
        floor: CommandCategory,
        prog: str,
        why: str,
    ) -> list[Segment]:
        """Classify a wrapped command ``args``; the wrapper ``prog`` adds ``floor``."""
        ...

    def shell_script(self, text: str, prog: str, script: str | None, depth: int) -> list[Segment]:
        """Classify the shell script ``prog`` runs (None: a dynamic one, opaque)."""
        ...

    def handles(self, prog: str) -> bool:
        """Whether ``prog`` has a handler of its own."""
        ...


HandlerFn = Callable[[Analyzer, str, str, list[str | None], int], list[Segment]]
"""A program's handler: (analyzer, command text, program, its arguments, depth) -> segments."""
