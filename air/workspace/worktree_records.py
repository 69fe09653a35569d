"""git's own record of each of air's worktrees (``<git dir>/worktrees/<name>``).

Owns ``forget_worktree``: once air removed one of its worktrees, git's record of it goes, found
by the worktree it names (its ``gitdir`` file), never by ``git worktree prune``: that forgets
every worktree whose directory is away at the moment, the user's own too (one on a drive not
mounted now, one moved for a while), and with its record goes that worktree's index and HEAD,
its staged work. A record is forgotten only while no directory is where it points. Blocking
file work: callers run it in a thread.
"""

from __future__ import annotations

import os
import stat

from air.small_file import read_small
from air.tree_walk import remove_tree

__all__ = ["forget_worktree"]

_GITDIR_MAX = 4096


def _points_at(record: str) -> str | None:
    """The worktree path a record names (its ``gitdir`` file holds ``<worktree>/.git``, or
    git >= 2.48's path relative to the record); None when it names none (no such file, not a
    small regular one)."""
    try:
        text = read_small(os.path.join(record, "gitdir"), _GITDIR_MAX, follow=False)
    except OSError:
        return None
    path = text.decode("utf-8", "surrogateescape").strip()
    return os.path.dirname(os.path.normpath(os.path.join(record, path))) if path else None


def forget_worktree(common_dir: str, worktree: str, known: str | None = None) -> list[str]:
    """Remove git's records of ``worktree`` (absolute, its directory gone) from the repository
    whose common git directory is ``common_dir``: ``known`` (the record air saw when it made the
    worktree) and any other naming the same place. Returns the records removed."""
    if os.path.lexists(worktree):
        return []  # a directory is there: its record is git's business
    base = os.path.join(common_dir, "worktrees")
    try:
        names = os.listdir(base)
    except OSError:
        return []
    wanted = {os.path.normpath(worktree)}
    parent = os.path.dirname(worktree)
    if os.path.isdir(parent):
        wanted.add(os.path.join(os.path.realpath(parent), os.path.basename(worktree)))
    removed = []
    for name in sorted(names):
        record = os.path.join(base, name)
        try:
            if not stat.S_ISDIR(os.lstat(record).st_mode):
                continue
        except OSError:
            continue
        if _points_at(record) in wanted or (known is not None and _same(record, known)):
            remove_tree(record)
            removed.append(record)
    return removed


def _same(record: str, known: str) -> bool:
    """Whether ``record`` is the record air saw (``known``) and it still names no other place:
    a record git reused for a worktree of the user's is never taken for air's."""
    return os.path.realpath(record) == os.path.realpath(known) and _points_at(record) is None
