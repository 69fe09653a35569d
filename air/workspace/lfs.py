"""Files git LFS tracks, changed by a task without git-lfs.

Owns ``stored_whole``: of the paths a task's commit added or changed, those the project's
attributes give ``filter=lfs`` whose new content is not an LFS pointer. Air's git runs no
filter (IMPL-GIT-1), git-lfs included: a task's worktree holds pointer files, and a file the
task wrote in place of one is committed whole; merged, the project's history would hold the
whole file where every clone expects a pointer (a 2 GB asset in every fetch, a push the host
refuses) and the user's ``git status`` would show it changed. Such a path is never merged.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence

__all__ = ["POINTER_PREFIX", "stored_whole"]

POINTER_PREFIX = b"version https://git-lfs.github.com/spec/v1\n"
"""How every LFS pointer file begins (the Git LFS specification)."""
_POINTER_MAX = 1024
"""A pointer file is smaller than this (the specification)."""

Git = Callable[..., Awaitable[bytes]]
"""``await git(*args, stdin=b"")``: the hardened git of the task's worktree, its output."""


async def stored_whole(git: Git, head: str, paths: Sequence[str]) -> list[str]:
    """The paths of ``paths`` (changed by ``head``, still in it) git LFS tracks whose content
    at ``head`` is not an LFS pointer, in ``paths``' order."""
    if not paths:
        return []
    listing = await git(
        "check-attr",
        "-z",
        "--stdin",
        "filter",
        stdin=b"".join(os.fsencode(p) + b"\0" for p in paths),
    )
    fields = listing.split(b"\0")
    tracked = [
        os.fsdecode(fields[i]) for i in range(0, len(fields) - 2, 3) if fields[i + 2] == b"lfs"
    ]
    if not tracked:
        return []
    found = []
    for path in tracked:
        size = (await git("cat-file", "-s", f"{head}:{path}")).strip()
        if not size.isdigit() or int(size) >= _POINTER_MAX:
            found.append(path)
        elif not (await git("cat-file", "blob", f"{head}:{path}")).startswith(POINTER_PREFIX):
            found.append(path)
    return found
