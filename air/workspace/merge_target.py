"""Whether the project can take a task's merge now (IMPL-GIT-4).

Owns ``check_merge_target``: nothing is merged into a merge, rebase or cherry-pick of the user's
under way, onto a detached HEAD, onto another branch than ``--branch`` named, or onto a branch
that does not hold the commit the task started from. Reads the project's git only.
"""

from __future__ import annotations

from air.contracts.error import AirException, ErrorKind
from air.workspace.records import WorkspaceRecord
from air.workspace.worktrees import ProjectGit

__all__ = ["check_merge_target"]


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
