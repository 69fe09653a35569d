"""The checks before a task's merge: what it changed may land, and the project can take it now.

Owns ``check_changes`` (IMPL-MERGE-1: every changed path, as git or the copy's manifest lists
it, within the caller's ``MergeGuard``, no link out of the project, no file over
``MERGE_FILE_MAX_MB``: one offending path and nothing is merged) and ``check_merge_target``
(IMPL-GIT-4: nothing is merged into a merge, rebase or cherry-pick of the user's under way, onto
a detached HEAD, onto another branch than ``--branch`` named, or onto a branch that does not
hold the commit the task started from). Reads the workspace's files and the project's git only.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from air.contracts.error import AirException, ErrorKind
from air.workspace.changes import (
    MergeGuard,
    PathChange,
    WriteAreaViolation,
    link_escapes,
    violation_error,
)
from air.workspace.records import WorkspaceRecord
from air.workspace.worktrees import ProjectGit

__all__ = ["MERGE_FILE_MAX_MB", "check_changes", "check_merge_target"]

MERGE_FILE_MAX_MB = 100
"""The largest file a merge lands in the project (git hosts refuse larger ones, and once merged
a file stays in the history): a core dump, a dataset or a binary a task's commands left
where nothing ignores it is a ``write_area_violation``, its workspace kept."""


def _file_size(workspace: str, change: PathChange) -> int:
    """The size of the regular file ``change`` leaves in ``workspace`` (0 for anything else)."""
    if change.new_mode not in ("100644", "100755"):
        return 0
    try:
        return os.lstat(os.path.join(workspace, change.path)).st_size
    except OSError:
        return 0


def check_changes(
    rec: WorkspaceRecord,
    changes: list[PathChange],
    guard: MergeGuard | None,
    found_first: Sequence[WriteAreaViolation] = (),
) -> None:
    """Raise ``write_area_violation`` when one path the workspace changed may not be merged
    (or ``found_first`` names one): over ``MERGE_FILE_MAX_MB``, a link out of the project, or
    one ``guard`` (the task's write area) refuses."""
    found: dict[str, WriteAreaViolation] = {v.path: v for v in found_first}
    for change in changes:
        size = _file_size(rec.path, change)
        if size > MERGE_FILE_MAX_MB << 20:
            big = f"a {size >> 20} MiB file (a merge takes files up to {MERGE_FILE_MAX_MB} MiB)"
            found.setdefault(change.path, WriteAreaViolation(change.path, big))
        if change.link_target is not None:
            why = link_escapes(change.path, change.link_target)
            if why is not None:
                found[change.path] = WriteAreaViolation(change.path, why)
    for violation in guard(changes) if guard is not None else []:
        found.setdefault(violation.path, violation)
    if found:
        raise violation_error(
            [found[p] for p in sorted(found)],
            task_id=rec.task_id,
            workspace_path=rec.path,
            branch=rec.branch,
            base_commit=rec.base_commit,
        )


async def check_merge_target(git: ProjectGit, rec: WorkspaceRecord, branch: str | None) -> None:
    """A task merges into a project whose git is not in the middle of something of the
    user's (a merge, a rebase, ...: merging then would end theirs or mix with it), and its
    merge commit lands on a branch: the one ``--branch`` named, else the one checked out,
    and one that holds the commit the task started from. On a detached HEAD it would be
    reachable from nothing once the user checks out again (the task branch is deleted
    after a merge); on another branch than ``--branch`` named, it would land where the run
    promised it would not; on a branch without its base (the user switched to another
    line of work meanwhile) it would bring the base's whole history into that branch.
    Either way nothing is merged and the task's branch keeps its work.

    Raises:
        AirException: ``workspace_error`` naming what to finish or check out, and the
            kept branch.
    """
    doing = git.under_way()
    if doing is not None:
        raise AirException.of(
            kind=ErrorKind.WORKSPACE_ERROR,
            message=(
                f"the project's git is in the middle of {doing}: task {rec.task_id} was not "
                f"merged; its work is kept on branch {rec.branch}"
            ),
            user_action=(
                f"Finish or abort {doing} (git status says how), then merge it: "
                f"git merge {rec.branch}"
            ),
        )
    on = await git.head_branch()
    wanted = None if branch is None else f"refs/heads/{branch}"
    if on is not None and wanted in (None, on):
        if rec.base_commit is None or await git.holds(rec.base_commit):
            return
        base, branch = rec.base_commit[:12], on.removeprefix("refs/heads/")
        raise AirException.of(
            kind=ErrorKind.WORKSPACE_ERROR,
            message=(
                f"the project is on branch {branch}, which does not hold the commit task "
                f"{rec.task_id} started from ({base}): merged there it would bring that "
                f"commit's history along; it was not merged; its work is kept on branch "
                f"{rec.branch}"
            ),
            user_action=(
                f"Check out the branch the task started from (git branch --contains {base}),"
                f" then merge it: git merge {rec.branch}"
            ),
        )
    where = "a detached HEAD" if on is None else f"branch {on.removeprefix('refs/heads/')}"
    promised = "a branch" if wanted is None else f"branch {branch} (--branch)"
    back = "a branch" if branch is None else branch
    raise AirException.of(
        kind=ErrorKind.WORKSPACE_ERROR,
        message=(
            f"the project is on {where}, not on {promised}: task {rec.task_id} was not "
            f"merged; its work is kept on branch {rec.branch}"
        ),
        user_action=f"Check out {back} (git switch), then merge it: git merge {rec.branch}",
    )
