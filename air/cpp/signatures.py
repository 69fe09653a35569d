"""Semantic signatures of C++ diagnostics: what makes two occurrences "the same error".

Owns ``make_signature`` (versioned hash of tool, severity, option family and the normalised
message), ``normalize_for_signature`` (quoted names, paths, numbers and spacing replaced by
placeholders) and ``option_family``. Stable across paths, lines, varying identifiers and
machines; differs between errors (SDD §15). Every parser (text, JSON, SARIF, serialized,
cppcheck) signs through here, so the forms of one build agree.
"""

from __future__ import annotations

import hashlib
import re

from air.contracts.tool import DiagnosticSeverity

__all__ = ["SIGNATURE_VERSION", "make_signature", "normalize_for_signature", "option_family"]

SIGNATURE_VERSION = "cppdiag1"

_CLOSING = {"‘": "’", "“": "”", "`": "'", "'": "'", '"': '"'}
"""Each opening quote and the quote that closes it (a backtick's body holds no backtick)."""
_OPENING = re.compile("[‘“`'\"]")
_PATHLIKE = re.compile(
    # `(?:[\w.+-]*/)+[\w.+-]+|\b[\w.+-]+\.(?:EXT)\b` (a path, or a file name), each tried only
    # where it can first match, which gives the same replacements in linear time: a path at the
    # start of a run of path characters, a name at the first word character of a run without
    # `/` (its leading `.+-` kept). Tried at every position, a 30,000-character word took 2.4 s.
    r"(?<![\w.+/-])(?:[\w.+-]*/)+[\w.+-]+"
    r"|(?<![\w.+-])(?P<lead>[.+-]*)\w[\w.+-]*\.(?:c|cc|cpp|cxx|h|hh|hpp|hxx|o|a|so|txt|cmake)\b"
)
_LIBRARY = re.compile(r"(?<!\S)-l\S+")
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b")
_NUMBER = re.compile(r"\b\d+\b")
_SPACE = re.compile(r"\s+")


def _path(match: re.Match[str]) -> str:
    return (match.group("lead") or "") + "<path>"


def _unquoted(message: str) -> str:
    """``message`` with each quoted part ``<q>``: what ``re.sub(r"‘[^’]*’|“[^”]*”|`[^'`]*'|
    '[^']*'|\"[^\"]*\"", "<q>", message)`` gives, in time linear in the message. (That pattern
    read on to the end of the message from each opening quote without a closing one: 64 Ki
    ``“`` that a source file's ``#error`` printed took 2.2 s a build-log line.) Where a closing
    quote next is, found once from a place, holds for every later place up to it."""
    seen: dict[str, int] = {}  # a quote -> where it next is from the last look (-1: nowhere)

    def next_at(quote: str, start: int) -> int:
        at = seen.get(quote, -2)
        if at == -1 or at >= start:
            return at
        seen[quote] = at = message.find(quote, start)
        return at

    parts: list[str] = []
    done = 0
    for opening in _OPENING.finditer(message):
        i, quote = opening.start(), opening.group()
        end = next_at(_CLOSING[quote], i + 1) if i >= done else -1
        if end != -1 and quote == "`" and -1 < next_at("`", i + 1) < end:
            end = -1
        if end != -1:
            parts += [message[done:i], "<q>"]
            done = end + 1
    parts.append(message[done:])
    return "".join(parts)


def normalize_for_signature(message: str) -> str:
    """The message with what varies between occurrences of one error replaced by placeholders:
    quoted identifiers and types, paths and file names, numbers, spacing."""
    text = _unquoted(message)
    text = _LIBRARY.sub("-l<lib>", text)
    text = _PATHLIKE.sub(_path, text)
    text = _HEX.sub("<n>", text)
    text = _NUMBER.sub("<n>", text)
    return _SPACE.sub(" ", text).strip().lower()


def option_family(code: str | None) -> str:
    """The warning option of ``code`` without its ``-Werror`` marker (``-Werror=x`` → ``-Wx``)."""
    if not code:
        return ""
    parts = [p.strip() for p in code.split(",")]
    names = []
    for part in parts:
        if part == "-Werror":
            continue
        if part.startswith("-Werror="):
            part = "-W" + part[len("-Werror=") :]
        names.append(part)
    return ",".join(names)


_CMAKE_COMMANDS = frozenset(
    """add_compile_definitions add_compile_options add_custom_command add_custom_target
    add_definitions add_dependencies add_executable add_library add_link_options add_subdirectory
    add_test aux_source_directory cmake_minimum_required cmake_policy configure_file enable_testing
    execute_process export file find_file find_library find_package find_path find_program
    foreach function get_filename_component get_property get_target_property if include
    include_directories install list macro math message option project set set_property
    set_target_properties string target_compile_definitions target_compile_features
    target_compile_options target_include_directories target_link_directories
    target_link_libraries target_link_options target_sources try_compile try_run while""".split()
)


def _code_family(tool: str, code: str | None) -> str:
    if tool == "cmake":
        # a user function or an unknown command is an identifier that varies; CMake's own
        # commands say which kind of error it is
        return code if code in _CMAKE_COMMANDS else ("<cmd>" if code else "")
    return option_family(code)


_USER_TEXT = re.compile(r"^(static assertion failed|#error|#warning)\b.*", re.IGNORECASE)


def make_signature(severity: DiagnosticSeverity, tool: str, code: str | None, message: str) -> str:
    """The semantic signature of one diagnostic from its parts (see ``normalize_for_signature``)."""
    if tool == "cmake" and code == "message":
        message = "<user message>"  # message(FATAL_ERROR ...): the text is the project's own
    else:
        message = _USER_TEXT.sub(lambda m: f"{m.group(1)} <user message>", message)
    basis = "|".join(
        (
            SIGNATURE_VERSION,
            tool,
            severity.value,
            _code_family(tool, code),
            normalize_for_signature(message),
        )
    )
    return f"{SIGNATURE_VERSION}:{hashlib.sha256(basis.encode()).hexdigest()[:20]}"
