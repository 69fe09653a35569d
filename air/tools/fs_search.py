"""fs.search's matching: a pattern the model chose, over a tree a task may have filled.

Owns ``compile_search`` and ``search_tree`` (IMPL-FS-1, IMPL-FS-2). The pattern is matched by
``regex`` without holding the GIL and within ``SEARCH_SECONDS`` for the whole search (Python's
``re`` held the GIL for a whole match: ``(x|xx)+y`` over 36 characters froze the parent, its
cancellation and Ctrl-C with it), checked again before each file and each match; a cancelled
search stops at its next one. A file is searched whole first, each line only where a match
begins (a line's own match is a match of the whole file, line anchors per line), unless the
pattern can see past its line (``_PER_LINE_ONLY``); lines are matched without their newline,
as grep matches them; binary files (a NUL early) are passed over, bytes that are no UTF-8 read as
U+FFFD, a UTF-16 file by its byte order mark. Files over ``READ_MAX`` are named, never loaded;
credential files and air's, git's and package trees are never searched; no link is followed
(``walk_fd``, at any depth, and ``O_NOFOLLOW`` opens relative to each directory).
"""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Iterator
from typing import NamedTuple

import regex

from air.contracts.error import AirException, ErrorKind
from air.contracts.ids import JsonObject
from air.security.paths import in_write_area_entry, names_credentials
from air.security.redact import SecretRedactor
from air.tools.safefs import READ_MAX
from air.tools.text_form import UTF16_MARKS, file_text
from air.tree_walk import walk_fd

__all__ = ["SEARCH_SECONDS", "Search", "compile_search", "search_tree"]

_PER_LINE_ONLY = ("\\A", "\\Z", "\\z", "\\G", "(?<", "(?=", "(?!", "(?|", "(?(")
"""What in a pattern can match within one line and not in the whole file (anchors at the text's
ends, lookarounds seeing the lines around, branch resets and conditionals to be safe)."""
SEARCH_SECONDS = 30.0
_BINARY_PROBE = 8192
"""A file with a NUL byte in its first this many bytes is binary and not searched (grep's test)."""
"""How long one fs.search may match: a pattern that backtracks catastrophically ends there."""


class Search(NamedTuple):
    """One fs.search's pattern and bounds, for the thread that walks and matches."""

    pattern: regex.Pattern[str]
    whole: regex.Pattern[str] | None
    """The pattern over a whole file, line anchors per line: where it finds nothing, no line
    matches, so a file is searched once rather than line by line (~2.5 µs a line); None for a
    pattern a file's other lines could change (``\\A``, ``\\Z``, lookarounds)."""
    limit: int
    deadline: float
    """``time.monotonic()`` past which it stops with an error."""
    stop: threading.Event
    """Set when the call was cancelled: the thread stops at its next line."""


def search_tree(
    search: Search,
    top: int,
    start: str,
    workspace: str,
    redactor: SecretRedactor,
    *,
    denied: tuple[str, ...] = (),
) -> JsonObject:
    """Search the tree of the directory ``top`` (an fd at ``start``, in ``workspace``; closed
    here): the matching lines, redacted, and the files too large to search. Nothing at or
    below a ``denied`` path (the task's ``denied_paths``, resolved) is searched: fs.read
    refuses it, and a search would show its lines.

    Raises:
        AirException: ``tool_error`` when the search's time is up or it was cancelled.
    """
    limit = search.limit
    matches: list[JsonObject] = []
    too_large: list[str] = []
    try:
        # walk_fd never follows a link to a directory (nor recurses: a tree a task made 1,500
        # deep); files are opened with O_NOFOLLOW relative to their directory's fd.
        for dirpath, dirnames, filenames, dirfd in walk_fd(top):
            # credential files are fs.read's to ask for, never a search's to show (IMPL-SBX-3)
            here = os.path.normpath(os.path.join(start, dirpath))
            dirnames[:] = sorted(
                d
                for d in dirnames
                if d not in (".git", ".air", "node_modules", ".venv")
                and not names_credentials(d)
                and not _denied(os.path.join(here, d), denied)
            )
            for name in sorted(filenames):
                full = os.path.join(here, name)
                if names_credentials(name) or _denied(full, denied):
                    continue
                _in_time(search, full, workspace)
                try:
                    fd = os.open(
                        name,
                        os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                        dir_fd=dirfd,
                    )
                except OSError:
                    continue
                try:
                    info = os.fstat(fd)
                    if not stat.S_ISREG(info.st_mode):
                        continue
                    if info.st_size > READ_MAX:  # never loaded (IMPL-FS-2)
                        too_large.append(os.path.relpath(full, workspace))
                        continue
                    os.set_blocking(fd, True)
                    head = os.pread(fd, _BINARY_PROBE, 0)
                    if head.startswith(UTF16_MARKS):  # its text, as fs.read shows it
                        with os.fdopen(os.dup(fd), "rb") as raw:
                            text = _universal(file_text(raw.read(READ_MAX)))
                    elif b"\0" in head:
                        continue  # binary, as grep judges it
                    else:
                        # bytes that are no UTF-8 (a Latin-1 source) read as U+FFFD, as fs.read
                        # shows them: skipping such a file hid every match in it (IMPL-FS-5)
                        with os.fdopen(os.dup(fd), encoding="utf-8", errors="replace") as fh:
                            text = fh.read(READ_MAX)  # a file growing meanwhile: that much
                    keyed: list[str] | None = None  # the file redacted whole, once
                    for lineno, at, to in _matching_lines(search, text, full, workspace):
                        # redacted as the line reads within the file (a key block's line)
                        if keyed is None:
                            keyed = redactor.redacted_lines(text) or []
                        if keyed:
                            shown = keyed[lineno - 1][:400]
                        else:  # no key block: each line alone (its copy: a line's length)
                            shown = redactor.redact_cut(text[at:to], 400)
                        matches.append(
                            {
                                "path": os.path.relpath(full, workspace),
                                "line": lineno,
                                "text": shown,
                            }
                        )
                        if len(matches) >= limit:
                            return _found(matches, too_large, truncated=True)
                except OSError:
                    continue
                finally:
                    os.close(fd)
    finally:
        os.close(top)
    return _found(matches, too_large, truncated=False)


def _denied(path: str, denied: tuple[str, ...]) -> bool:
    return any(in_write_area_entry(path, d) for d in denied)  # the merge's rule: globs too


def _universal(text: str) -> str:
    """Line breaks as a text-mode read gives them (CRLF and CR as LF)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _found(matches: list[JsonObject], too_large: list[str], *, truncated: bool) -> JsonObject:
    found: JsonObject = {"matches": matches, "truncated": truncated}
    if too_large:  # named, so the model can search them with a command
        found["not_searched_too_large"] = too_large[:20]
    return found


def _matching_lines(
    search: Search, text: str, full: str, workspace: str
) -> Iterator[tuple[int, int, int]]:
    """The lines of ``text`` (without their newline, as grep matches them) the pattern matches:
    (number, where the line begins and ends in ``text``). With a whole-file pattern only the
    line where its next match begins is tried, then the search goes on from the next line:
    sound, as a line's own match is a match of the whole file; lines between matches cost
    nothing of Python's."""
    if search.whole is None:
        at = 0
        for lineno, line in enumerate(_lines(text), 1):
            if _find(search, search.pattern, line, full, lineno, workspace):
                yield lineno, at, at + len(line)
            at += len(line) + 1
        return
    pos, lineno, counted = 0, 1, 0
    while (found := _find(search, search.whole, text, full, 0, workspace, pos)) is not None:
        start = text.rfind("\n", 0, found.start()) + 1
        if start >= len(text):
            return  # an empty match after the last newline: no line of the file
        end = text.find("\n", found.start())
        end = len(text) if end < 0 else end
        lineno += text.count("\n", counted, start)
        counted = start
        if _find(search, search.pattern, text[start:end], full, lineno, workspace):
            yield lineno, start, end
        pos = end + 1


def _lines(text: str) -> list[str]:
    """``text``'s lines as a text file has them, without their newlines."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # after the last newline (or an empty file): no line
    return lines


def _in_time(search: Search, full: str, workspace: str) -> None:
    """Before each file: a cancelled search stops, and so does one whose time is up (a tree of
    millions of files, none with a line to match).

    Raises:
        AirException: ``tool_error``.
    """
    if search.stop.is_set():
        raise _stopped("fs.search was cancelled", "Nothing to do.")
    if time.monotonic() > search.deadline:
        raise _stopped(
            f"fs.search stopped after {SEARCH_SECONDS:g} s (at {os.path.relpath(full, workspace)})"
            ": too many files to search",
            "Search a narrower path.",
        )


def _find(
    search: Search,
    pattern: regex.Pattern[str],
    text: str,
    full: str,
    lineno: int,
    workspace: str,
    pos: int = 0,
) -> regex.Match[str] | None:
    """``pattern``'s first match in ``text`` from ``pos`` (line ``lineno``, 0: the whole file),
    matched without holding the GIL (Python's ``re`` holds it for the whole match: a
    backtracking pattern froze the parent, its cancellation and Ctrl-C with it) and within
    what is left of the search's time.

    Raises:
        AirException: ``tool_error`` once the search's time is up (or it was cancelled).
    """
    left = search.deadline - time.monotonic()
    if search.stop.is_set():
        raise _stopped("fs.search was cancelled", "Nothing to do.")
    try:
        if left > 0:
            return pattern.search(text, pos, concurrent=True, timeout=left)
    except TimeoutError:
        pass  # an OSError: must not be taken for an unreadable file
    where = os.path.relpath(full, workspace) + (f":{lineno}" if lineno else "")
    raise _stopped(
        f"fs.search stopped after {SEARCH_SECONDS:g} s (at {where}): the pattern backtracks "
        "too much for this text",
        "Simplify the pattern (no nested or overlapping repeats such as (a+)+ or (a|aa)+), "
        "or search a narrower path.",
    )


def compile_search(text: str, limit: int) -> Search:
    """The search of ``text`` (at most ``air.tools.fs.PATTERN_MAX`` characters, the schema's:
    compiling it is short), at most ``limit`` matches, its time starting now.

    Raises:
        AirException: ``tool_error`` for an invalid pattern.
    """
    try:
        pattern = regex.compile(text)
    except regex.error as exc:
        raise _stopped(
            f"invalid regular expression: {exc}", "Fix the pattern (Python re syntax)."
        ) from exc
    per_line_only = any(mark in text for mark in _PER_LINE_ONLY)
    whole = None if per_line_only else regex.compile(text, regex.MULTILINE)
    return Search(pattern, whole, limit, time.monotonic() + SEARCH_SECONDS, threading.Event())


def _stopped(message: str, action: str) -> AirException:
    return AirException.of(kind=ErrorKind.TOOL_ERROR, message=message, user_action=action)
