"""The unified-diff reader of ``fs.patch``: ``parse_patch``, a pure function from a patch's text
to (old path, new path, hunks) per file, with paths stripped as ``git apply -p1`` strips them
(they are what the permission check judges).
"""

from __future__ import annotations

import re

__all__ = ["parse_patch"]

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _strip_prefix(name: str) -> str:
    """The path ``git apply`` (default ``-p1``) takes from a ``---``/``+++`` name."""
    name = name.split("\t")[0].strip()
    if name == "/dev/null":
        return name
    if "/" in name:
        return name.split("/", 1)[1]
    return name


def parse_patch(text: str) -> list[tuple[str | None, str | None, list[list[str]]]]:
    """Parse a unified diff into (old path, new path, hunks) per file; hunks are raw lines.

    A hunk's body is as long as its header's line counts say (as git reads it), so a removed
    line ``-- x`` (``--- x`` in the patch) is part of the hunk, not a new file header. Paths
    are stripped like ``git apply -p1``; they are what the permission check judges, and
    ``fs.patch`` refuses any change ``git apply`` makes outside them.
    """
    files: list[tuple[str | None, str | None, list[list[str]]]] = []
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        if lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old = _strip_prefix(lines[i][4:])
            new = _strip_prefix(lines[i + 1][4:])
            hunks: list[list[str]] = []
            i += 2
            while i < len(lines) and not lines[i].startswith(("--- ", "diff ")):
                m = _HUNK.match(lines[i])
                if m is None:
                    i += 1
                    continue
                hunk = [lines[i]]
                i += 1
                old_left = int(m.group(2)) if m.group(2) is not None else 1
                new_left = int(m.group(4)) if m.group(4) is not None else 1
                while i < len(lines) and (old_left > 0 or new_left > 0 or lines[i][:1] == "\\"):
                    tag = lines[i][:1]
                    if tag == " " or lines[i] in ("\n", "\r\n"):
                        old_left -= 1
                        new_left -= 1
                    elif tag == "-":
                        old_left -= 1
                    elif tag == "+":
                        new_left -= 1
                    elif tag != "\\":
                        break
                    hunk.append(lines[i])
                    i += 1
                hunks.append(hunk)
            files.append(
                (None if old == "/dev/null" else old, None if new == "/dev/null" else new, hunks)
            )
        else:
            i += 1
    return files
