"""What a merge left out because git ignores it, kept where the user finds it.

Owns ``kept_out`` (the ``left_out`` fields of a merge: the files a task's tools wrote that git
ignores, named, counted and copied from its worktree to ``.air/local/left-out/<workspace id>/``
under their own paths before the landed worktree goes, by ``keep``: regular files only, none
reached through a link, none over the merge's size limit) and ``prune`` (copies older than the
merged retention removed). A worktree kept for a few files
would hold a whole checkout for a week after every such task. Blocking file work: callers run
these in a thread.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import time
from collections.abc import Sequence
from typing import Any

from air.tree_walk import make_dirs, remove_tree

__all__ = ["LEFT_OUT", "keep", "kept_out", "prune"]

LEFT_OUT = "left-out"
"""The directory in ``.air/local`` that holds the copies, one directory per workspace."""


def kept_out(worktree: str, names: Sequence[str], into: str, max_bytes: int) -> dict[str, Any]:
    """``names`` kept (``keep`` into ``into``): the ``MergeResult`` / ``workspace.merge.
    completed`` fields ``left_out`` (the first ``LEFT_OUT_NAMES``), ``left_out_count`` and
    ``left_out_dir`` (``into``, or None when nothing could be copied)."""
    from air.contracts.task_results import LEFT_OUT_NAMES  # at a merge (IMPL-BOOT-12)

    kept = keep(worktree, names, into, max_bytes)
    return {
        "left_out": list(names[:LEFT_OUT_NAMES]),
        "left_out_count": len(names),
        "left_out_dir": into if kept else None,
    }


def _inside(root: str, path: str) -> bool:
    return os.path.commonpath([root, path]) == root


def keep(worktree: str, names: Sequence[str], into: str, max_bytes: int) -> list[str]:
    """Copy each of ``names`` (relative to ``worktree``) to the same path under ``into``.

    Returns:
        The names copied: a regular file of at most ``max_bytes`` whose path passes through
        no link (the task chose every component of it), in ``names``' order.
    """
    root = os.path.realpath(worktree)
    kept: list[str] = []
    for name in names:
        source = os.path.join(root, name)
        if os.path.realpath(source) != os.path.normpath(source) or not _inside(root, source):
            continue  # a link somewhere on the way
        try:
            fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
                continue
            target = os.path.join(into, name)
            make_dirs(os.path.dirname(target), mode=0o700)
            with open(target, "xb") as dst:
                try:
                    with open(fd, "rb", closefd=False) as src:
                        shutil.copyfileobj(src, dst)
                except OSError:
                    with contextlib.suppress(OSError):  # a full disk: no half copy is left
                        os.unlink(target)
                    raise
            with contextlib.suppress(OSError):  # a file system without Unix modes
                os.chmod(target, stat.S_IMODE(info.st_mode) & 0o700)
            kept.append(name)
        except OSError:
            continue
        finally:
            os.close(fd)
    return kept


def prune(root: str, keep_s: float, now: float | None = None) -> list[str]:
    """Remove the copies under ``root`` (``.air/local/left-out``) made more than ``keep_s``
    seconds before ``now``; the workspace ids removed."""
    now = time.time() if now is None else now
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    removed = []
    for entry in entries:
        if entry.is_dir(follow_symlinks=False) and now - entry.stat().st_mtime > keep_s:
            remove_tree(entry.path, ignore_errors=True)
            removed.append(entry.name)
    return removed
