"""What a task's workspace changed, as git sees it, for the check before its merge (IMPL-MERGE-1).

Owns: ``PathChange`` (one changed path: git's status letter, both modes, a symlink's target),
``parse_raw_diff`` (``git diff --raw -z --no-renames`` output → changes; a rename is a deletion
and an addition, so both sides are checked), ``link_escapes`` (does a symlink's target leave
the project, or point into ``.air`` / ``.git``), ``WriteAreaViolation`` / ``MergeGuard`` (the
policy the caller passes in) and ``violation_error`` (the ``write_area_violation`` AirException
that lists the paths, capped, and says where the kept workspace is). Pure: no git, no I/O.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable, Sequence
from typing import NamedTuple

from air.contracts.error import AirException, ErrorKind, Retryability

__all__ = [
    "GITLINK",
    "MAX_LISTED",
    "SYMLINK",
    "MergeGuard",
    "PathChange",
    "WriteAreaViolation",
    "link_escapes",
    "parse_raw_diff",
    "porcelain_paths",
    "violation_error",
]

SYMLINK = "120000"
GITLINK = "160000"
MAX_LISTED = 20
"""Offending paths named in a violation's message; the rest are counted."""


class PathChange(NamedTuple):
    """One path a workspace changed relative to its base."""

    path: str
    """Relative to the project root, ``/``-separated, as git names it."""
    status: str
    """git's letter: ``A`` added, ``D`` deleted, ``M`` modified (content or mode), ``T`` type
    changed (file ↔ symlink ↔ gitlink)."""
    old_mode: str
    """Octal mode at the base (``000000`` when added)."""
    new_mode: str
    """Octal mode in the result (``000000`` when deleted)."""
    link_target: str | None = None
    """The target text when the result is a symlink."""


class WriteAreaViolation(NamedTuple):
    """A changed path that may not be merged, and why."""

    path: str
    reason: str


MergeGuard = Callable[[Sequence[PathChange]], list[WriteAreaViolation]]
"""The caller's policy over every changed path (the task's write area, protected paths)."""


def parse_raw_diff(raw: bytes) -> list[PathChange]:
    """Changes from ``git diff --raw -z --no-renames`` (``:old new sha sha X\\0path\\0`` each).

    Raises:
        ValueError: output that is not in that shape.
    """
    fields = raw.split(b"\0")
    changes: list[PathChange] = []
    i = 0
    while i < len(fields) and fields[i]:
        meta = fields[i].decode("ascii")
        if not meta.startswith(":") or i + 1 >= len(fields):
            raise ValueError(f"unexpected git diff --raw record {meta!r}")
        old_mode, new_mode, _old_sha, _new_sha, status = meta[1:].split(" ")
        changes.append(
            PathChange(
                path=os.fsdecode(fields[i + 1]),
                status=status[:1],
                old_mode=old_mode,
                new_mode=new_mode,
            )
        )
        i += 2
    return changes


def link_escapes(path: str, target: str) -> str | None:
    """Why the symlink at ``path`` (project-relative) pointing at ``target`` may not be merged:
    an absolute target, one that leaves the project, or one into ``.air`` or a ``.git`` entry;
    None when it stays among the project's own files."""
    if target.startswith("/"):
        return f"a symlink to the absolute path {target}"
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    if resolved == ".." or resolved.startswith("../"):
        return f"a symlink out of the project ({target})"
    first = resolved.split("/", 1)[0]
    if first == ".air" or first.startswith(".git"):
        return f"a symlink into {first} ({target})"
    return None


def violation_error(
    violations: Sequence[WriteAreaViolation],
    *,
    task_id: str | None,
    workspace_path: str,
    branch: str | None,
    base_commit: str | None,
) -> AirException:
    """The ``write_area_violation`` that fails the task: the offending paths (the first
    ``MAX_LISTED``, then a count) and, in ``user_action``, where the kept workspace is and how
    to inspect or merge it by hand."""
    listed = [f"{v.path} ({v.reason})" for v in violations[:MAX_LISTED]]
    more = len(violations) - len(listed)
    if more > 0:
        listed.append(f"and {more} more")
    if branch is not None and base_commit is not None:
        how = (
            f"Inspect it with `git diff {base_commit[:12]} {branch}` (the work is committed on "
            f"branch {branch}); to take some of it, `git checkout {branch} -- PATH` in the "
            "project, or run the task again with a write area that names those paths."
        )
    else:
        how = (
            "Compare it with the project by hand (`diff -r`) and copy what you want, or run the "
            "task again with a write area that names those paths."
        )
    return AirException.of(
        kind=ErrorKind.WRITE_AREA_VIOLATION,
        message=(
            f"task {task_id} changed {len(violations)} path(s) it may not write; nothing was "
            f"merged: {'; '.join(listed)}"
        ),
        retryability=Retryability.NEVER,
        user_action=f"The workspace is kept at {workspace_path}. {how}",
        metadata={
            "paths": [v.path for v in violations[:200]],
            "violations": len(violations),
            "kept_path": workspace_path,
            "kept_branch": branch,
        },
    )


def porcelain_paths(raw: bytes) -> set[str]:
    """Every path in ``git status --porcelain -z`` output (both sides of a rename)."""
    names: set[str] = set()
    entries = os.fsdecode(raw).split("\0")
    i = 0
    while i < len(entries):
        entry = entries[i]
        i += 1
        if len(entry) < 4:
            continue
        names.add(entry[3:])
        if "R" in entry[:2] or "C" in entry[:2]:
            if i < len(entries) and entries[i]:
                names.add(entries[i])
            i += 1
    return names
