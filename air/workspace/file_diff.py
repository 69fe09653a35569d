"""The unified diff of two versions of one file: fs.write, fs.edit and fs.patch's diff artifact,
and the diff a review request shows (IMPL-DIFF-1).

Owns ``unified_diff``. What a task wrote can be any text, and difflib is quadratic in the lines
it cannot match: 20,000 lines with every other one changed took 23 s, 100,000 about ten
minutes — on the Trio thread for a write, holding up every other task, the console and each
cancellation. So a file of at most ``INLINE_LINES`` lines (both sides together) is diffed by
difflib, at most milliseconds; a longer one by git's own diff (``git diff --no-index``, C,
hardened as every air git command is: ``air.workspace.gitsafe``) in a subprocess the caller's
cancellation kills: 0.1 s for those 100,000 lines. Both write the same header (``--- a/NAME``,
``+++ b/NAME``, ``/dev/null`` for a side that does not exist) and mark a last line without a
newline as git does, so either applies with ``git apply``.
"""

from __future__ import annotations

import difflib
import os
import shutil
import tempfile

import trio

from air.contracts.error import AirException, ErrorKind
from air.workspace.gitsafe import run_git

__all__ = ["INLINE_LINES", "unified_diff"]

INLINE_LINES = 2000
"""Above this many lines (old and new together) git diffs the file, not difflib."""


_NO_NEWLINE = "\\ No newline at end of file\n"
"""After a last line without one, as git (and patch) write and read it."""


def _header(old: str | None, new: str | None, name: str) -> tuple[str, str]:
    return (
        f"a/{name}" if old is not None else "/dev/null",
        f"b/{name}" if new is not None else "/dev/null",
    )


async def unified_diff(old: str | None, new: str | None, name: str) -> str:
    """The unified diff (3 lines of context) from ``old`` to ``new`` (None: the file does not
    exist on that side), named ``name`` (relative to the workspace); empty when equal.

    Raises:
        AirException: ``workspace_error`` when git cannot diff a long file.
    """
    before = (old or "").splitlines(keepends=True)
    after = (new or "").splitlines(keepends=True)
    fromfile, tofile = _header(old, new, name)
    if len(before) + len(after) <= INLINE_LINES:
        lines = difflib.unified_diff(before, after, fromfile=fromfile, tofile=tofile)
        return "".join(line if line.endswith("\n") else f"{line}\n{_NO_NEWLINE}" for line in lines)
    return await _git_diff(old or "", new or "", fromfile, tofile)


async def _git_diff(old: str, new: str, fromfile: str, tofile: str) -> str:
    work = await trio.to_thread.run_sync(_write_sides, old, new)
    try:
        done = await run_git(
            None,
            "diff",
            "--no-index",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--text",  # a NUL byte does not make it "Binary files differ"
            "--unified=3",
            "--",
            "old",
            "new",
            cwd=work,
        )
    finally:
        await trio.to_thread.run_sync(shutil.rmtree, work, True)
    if done.returncode not in (0, 1):  # 1: they differ
        raise AirException.of(
            kind=ErrorKind.WORKSPACE_ERROR,
            message=f"git could not diff {tofile}",
            detail=done.stderr.decode("utf-8", "replace")[-2000:],
            user_action="Check that git is installed (`air doctor`).",
        )
    text = done.stdout.decode("utf-8", "replace")
    start = text.find("\n--- ")  # past git's own header: diff --git, index, modes
    if start < 0:
        return ""
    body = text[start + 1 :].split("\n", 2)[2]  # past its ---/+++ lines
    return f"--- {fromfile}\n+++ {tofile}\n{body}"


def _write_sides(old: str, new: str) -> str:
    """A private directory holding ``old`` and ``new`` as files of those names."""
    work = tempfile.mkdtemp(prefix="air-diff-")
    for name, text in (("old", old), ("new", new)):
        fd = os.open(os.path.join(work, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as handle:
            handle.write(text)
    return work
