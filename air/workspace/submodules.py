"""The project's submodules in a task's worktree.

Owns: ``gitlinks`` (the submodules a commit records: path and commit), ``populate`` (each one
the project has checked out becomes, in a new worktree, a linked worktree of the submodule's
own repository at the commit the base records, detached: a C++ task's build finds its vendored
libraries; one the project has not checked out, or whose repository lacks that commit, stays
an empty directory, as ``git worktree add`` leaves every submodule), ``writes`` (what a task
left inside them, which a merge never takes: a checked-out submodule's changes, untracked files
and moved HEAD as its own hardened ``git status`` reads them, after its git link was verified
as air made it; an empty one's every entry), ``keep`` (before a task's worktree goes, what it
changed in a checked-out submodule is committed there and kept on a branch of the
submodule's repository named as the task's) and ``prune`` (the submodules' worktree records
once a task's worktree is gone). Every git runs through ``air.workspace.gitsafe``.
"""

from __future__ import annotations

import os

import trio

from air.contracts.error import AirException
from air.tree_walk import walk
from air.workspace.changes import porcelain_paths
from air.workspace.gitsafe import GitLocation, linked_location, run_git, submodule_location
from air.workspace.records import WorkspaceRecord
from air.workspace.worktree_records import forget_worktree

__all__ = ["LISTED", "gitlinks", "keep", "populate", "prune", "writes"]

LISTED = 100
"""How many entries ``writes`` names at most."""


async def gitlinks(project: GitLocation, commit: str) -> list[tuple[str, str]]:
    """The submodules ``commit`` records: (path, commit) each."""
    listed = await run_git(project, "ls-tree", "-r", "-z", "--full-tree", commit)
    found = []
    for entry in listed.stdout.split(b"\0"):
        if entry.startswith(b"160000 ") and b"\t" in entry:
            meta, path = entry.split(b"\t", 1)
            found.append((os.fsdecode(path), meta.split()[2].decode("ascii")))
    return found


async def populate(
    project_root: str, rec: WorkspaceRecord, links: list[tuple[str, str]], lock: trio.Lock
) -> None:
    """Check each submodule of ``links`` the project has checked out out in ``rec``'s new
    worktree (see the module docstring; one git could not add stays empty too). ``lock``: one
    ``git worktree`` command at a time, as for the project's own."""
    for path, commit in links:
        sub = submodule_location(project_root, path)
        if sub is None:
            continue
        known = await run_git(sub, "cat-file", "-e", f"{commit}^{{commit}}")
        if known.returncode != 0:
            continue
        target = os.path.join(rec.path, path)
        async with lock:
            await run_git(sub, "worktree", "add", "--detach", "-q", target, commit)


async def writes(
    project_root: str, rec: WorkspaceRecord, links: list[tuple[str, str]]
) -> list[tuple[str, str]]:
    """What the task left inside its worktree's submodules, as (path, submodule).

    Raises:
        AirException: ``workspace_error`` when a checked-out submodule's git link is no longer
            the one air made (never followed).
    """
    found: list[tuple[str, str]] = []
    empty = []
    for path, commit in links:
        tree = os.path.join(rec.path, path)
        if not _has_git_link(tree):
            empty.append(path)
            continue
        sub = submodule_location(project_root, path)
        if sub is None:  # the project's own checkout went meanwhile: nothing to verify against
            found.append((path, path))
            continue
        here = linked_location(tree, sub.common_dir)
        status = await run_git(
            here, "status", "--porcelain", "-z", "--untracked-files=all", "--ignore-submodules=all"
        )
        head = await run_git(here, "rev-parse", "--verify", "-q", "HEAD")
        found += [(f"{path}/{name}", path) for name in sorted(porcelain_paths(status.stdout))]
        if head.stdout.decode().strip() != commit:
            found.append((path, path))
    found += await trio.to_thread.run_sync(_entries_below, rec.path, empty)
    return found[:LISTED]


async def keep(
    project_root: str,
    rec: WorkspaceRecord,
    links: list[tuple[str, str]],
    commit_args: list[str],
    message: str,
) -> list[str]:
    """Commit what the task changed in each checked-out submodule of its worktree and point
    the branch ``rec.branch`` of that submodule's repository at it (``commit_args``: the
    ``-c`` options and identity arguments of the project's commits); returns the submodules
    so kept. A submodule whose git link is no longer air's is left as it is (never followed):
    its files go with the worktree."""
    kept = []
    for path, _commit in links:
        tree = os.path.join(rec.path, path)
        sub = submodule_location(project_root, path) if _has_git_link(tree) else None
        if sub is None or rec.branch is None:
            continue
        try:
            here = linked_location(tree, sub.common_dir)
        except AirException:
            continue
        status = await run_git(here, "status", "--porcelain", "-z", "--untracked-files=all")
        if not porcelain_paths(status.stdout):
            continue
        await run_git(here, "add", "-A")
        done = await run_git(here, *commit_args, "-m", message)
        if done.returncode == 0:
            await run_git(here, "branch", "-f", rec.branch, "HEAD")
            kept.append(path)
    return kept


async def prune(project_root: str, rec: WorkspaceRecord, links: list[tuple[str, str]]) -> None:
    """Drop the submodules' records of the worktrees ``populate`` made in ``rec``'s worktree,
    now gone (only those: ``air.workspace.worktree_records``)."""
    for path, _commit in links:
        sub = submodule_location(project_root, path)
        if sub is not None:
            target = os.path.join(rec.path, path)
            await trio.to_thread.run_sync(forget_worktree, sub.common_dir, target)


def _has_git_link(tree: str) -> bool:
    """Whether ``tree`` (a submodule's path in a worktree) is a directory holding a ``.git``
    file, neither of them a link (a link in a submodule's place is never followed)."""
    dot_git = os.path.join(tree, ".git")
    if os.path.islink(tree) or os.path.islink(dot_git):
        return False
    return os.path.isfile(dot_git)


def _entries_below(root: str, paths: list[str]) -> list[tuple[str, str]]:
    """Every file, link or other entry below each of ``paths`` (relative to ``root``), as
    (path, submodule); a link or a file in a submodule's own place is one entry."""
    found: list[tuple[str, str]] = []
    for link in paths:
        top = os.path.join(root, link)
        if os.path.islink(top) or (os.path.lexists(top) and not os.path.isdir(top)):
            found.append((link, link))
            continue
        for dirpath, dirnames, filenames in walk(top):
            names = filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
            for name in sorted(names):
                found.append((os.path.relpath(os.path.join(dirpath, name), root), link))
            if len(found) >= LISTED:
                return found[:LISTED]
    return found
