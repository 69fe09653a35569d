"""A capability's command template read as bash reads it, and filled with a call's inputs.

Owns ``PLACEHOLDER`` (a ``{name}`` in a template), ``read_template`` (where each placeholder
stands: a plain word of its own, or somewhere an input would be read as shell code or as an
option) and ``fill`` (the command a call runs: each input shell-quoted into its placeholder;
``OptionInput`` when an input would be an option).

A quoted input is one shell word only where bash reads the quotes: not inside the template's
own quotes (``"{p}"`` ends the template's quote with the input's), after a backslash or a ``$``
(``$'...'`` reads escapes), in a comment (a newline in the input ends it), in a here-document
(its body expands ``$(...)`` whatever the quotes), or where bash evaluates arithmetic (``((``,
``$[``, ``[[`` operands, an array subscript), which runs a ``$(...)`` in a value. Such a
template is refused when the manifest is read (IMPL-CAP-2). And a word of its own that starts
with ``-`` is an option to the program (``rg --pre=CMD``, ``git grep -O CMD``): an input that
does is refused where it would start a word, unless a ``--`` word earlier in the same command
ends the options. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple

__all__ = ["PLACEHOLDER", "OptionInput", "Slot", "fill", "read_template"]

PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_OPERATORS = frozenset(";&|()<>")
_COMMAND_ENDS = frozenset(";&|()\n")
_ARITHMETIC = ("((", "$[", "[[")


class Slot(NamedTuple):
    """One placeholder: its input's name, its span, and whether an input there is an option."""

    name: str
    start: int
    end: int
    option_word: bool
    """It starts a word of its own and no ``--`` before it ends the command's options."""


def read_template(template: str) -> tuple[list[Slot], list[str]]:
    """``template``'s placeholders in order, and why it cannot be filled safely (empty: it can)."""
    slots: list[Slot] = []
    problems: list[str] = []
    state = "plain"  # or single, ansi (``$'``), double, comment
    word = ""  # the plain text of the word being read (to see a ``--``)
    literal = False  # the word being read has a character no input put there
    ended = False  # a ``--`` word was seen in this command
    heredoc = arithmetic = False
    i = 0
    while i < len(template):
        match = PLACEHOLDER.match(template, i)
        if match is not None:
            name = match.group(1)
            before = template[i - 1] if i else " "
            where = _refused_where(state, before, heredoc, arithmetic)
            if where:
                problems.append(
                    f"command placeholder {{{name}}} is {where}: write it bare (air quotes it)"
                )
            slots.append(Slot(name, i, match.end(), not (literal or ended)))
            word += "{}"
            i = match.end()
            continue
        char = template[i]
        arithmetic = arithmetic or template.startswith(_ARITHMETIC, i)
        if state in ("single", "ansi", "double"):
            if char == ('"' if state == "double" else "'"):
                state = "plain"  # ``''{p}`` is the input's word alone: no literal yet
            else:
                literal = True
                escapes = char == "\\" and state != "single"
                i += 1 if escapes and not _slot_at(template, i + 1) else 0
        elif state == "comment":
            if char == "\n":
                state, word, literal, ended = "plain", "", False, False
        elif char == "\\":
            literal = True
            if not _slot_at(template, i + 1):  # else the placeholder is refused, not skipped
                word += template[i : i + 2]
                i += 1
        elif char in "'\"":
            state = "double" if char == '"' else "ansi" if word.endswith("$") else "single"
        elif char == "#" and not word and not literal:
            state = "comment"
        elif char.isspace() or char in _OPERATORS:
            ended = (ended or word == "--") and char not in _COMMAND_ENDS
            word, literal = "", False
            if template.startswith("<<<", i):
                i += 2
            elif template.startswith("<<", i):
                heredoc = True
                i += 1
        else:
            word, literal = word + char, True
        i += 1
    if state in ("single", "ansi", "double"):
        problems.append("the command has a quote it never closes")
    return slots, problems


def _slot_at(template: str, i: int) -> bool:
    return PLACEHOLDER.match(template, i) is not None


def _refused_where(state: str, before: str, heredoc: bool, arithmetic: bool) -> str:
    """Why a placeholder read in ``state`` after ``before`` is no word of its own ("" if it is)."""
    if state in ("single", "ansi", "double"):
        return "inside quotes"
    if state == "comment":
        return "in a comment"
    if before == "\\":
        return "after a backslash"
    if before == "$":
        return "after a `$`"
    if heredoc:
        return "after a here-document (its body expands `$(...)` in an input)"
    if arithmetic:
        return "after `((`, `$[` or `[[` (bash evaluates arithmetic in an input)"
    if before == "[":
        return "in an array subscript (bash evaluates it as arithmetic)"
    return ""


class OptionInput(ValueError):
    """An input that would be an option of the program, where the template wants a word."""


def fill(template: str, slots: list[Slot], values: Mapping[str, object]) -> str:
    """``template`` with each slot replaced by its input shell-quoted (empty when absent).

    Raises:
        OptionInput: a string input starts with ``-`` where it would be a word of its own.
    """
    import shlex  # at a capability tool's first call, not before the first request (IMPL-BOOT-8)

    parts: list[str] = []
    at = 0
    for slot in slots:
        value = values.get(slot.name)
        text = "" if value is None else str(value)
        if slot.option_word and isinstance(value, str) and text.startswith("-"):
            raise OptionInput(
                f"{{{slot.name}}} starts with '-': the command would read it as an option"
            )
        parts += [template[at : slot.start], shlex.quote(text)]
        at = slot.end
    parts.append(template[at:])
    return "".join(parts)
