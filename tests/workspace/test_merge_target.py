"""A task's merge lands on the branch it was promised or nowhere: with ``--branch NAME`` that
branch, else a branch at all. Found running two air processes in one project: the second
run's ``--branch`` checked out its branch under the first, whose merges then landed there; and
on a detached HEAD a merge commit was reachable from nothing once the user checked out again
(the task branch is deleted after a merge). Now nothing is merged, the task's branch keeps its
work and the error says what to check out."""

from __future__ import annotations

from pathlib import Path

import pytest

from air.contracts.error import AirException, ErrorKind
from air.workspace.manager import WorkspaceManager
from tests.gitrepo import git
from tests.workspace.conftest import task_with_new_file
from tests.workspace.recorder import Events


def _write(path: Path, text: str) -> None:
    path.write_text(text)


async def test_a_merge_lands_on_the_branch_the_run_named(repo: Path) -> None:
    events = Events()
    mgr = WorkspaceManager(str(repo), events)
    await mgr.use_branch("air-run")
    workspace_id, kept = await task_with_new_file(mgr)
    git(repo, "switch", "-q", "-c", "other")  # another air's --branch, or the user
    other_head = git(repo, "rev-parse", "HEAD")
    with pytest.raises(AirException) as raised:
        await mgr.merge_workspace(workspace_id)
    error = raised.value.error
    assert error.kind == ErrorKind.WORKSPACE_ERROR
    assert "on branch other, not on branch air-run (--branch)" in error.message
    assert kept in error.message
    assert error.user_action == f"Check out air-run (git switch), then merge it: git merge {kept}"
    # nothing merged anywhere; the task's branch has its work
    assert git(repo, "rev-parse", "HEAD") == other_head
    assert git(repo, "rev-parse", "air-run") == other_head
    assert not (repo / "new.txt").exists()
    assert git(repo, "show", f"{kept}:new.txt") == "new"
    assert "workspace.merge.started" not in events.types()
    # back on the branch, the same workspace merges
    git(repo, "switch", "-q", "air-run")
    assert (await mgr.merge_workspace(workspace_id)).status == "merged"
    assert git(repo, "show", "air-run:new.txt") == "new"


async def test_no_merge_on_a_detached_head(repo: Path) -> None:
    mgr = WorkspaceManager(str(repo), Events())
    workspace_id, kept = await task_with_new_file(mgr)
    git(repo, "switch", "-q", "--detach", "HEAD")
    detached = git(repo, "rev-parse", "HEAD")
    with pytest.raises(AirException) as raised:
        await mgr.merge_workspace(workspace_id)
    assert "the project is on a detached HEAD, not on a branch" in raised.value.error.message
    assert raised.value.error.user_action == (
        f"Check out a branch (git switch), then merge it: git merge {kept}"
    )
    assert git(repo, "rev-parse", "HEAD") == detached
    assert git(repo, "show", f"{kept}:new.txt") == "new"
    # without --branch, the branch checked out is where a merge lands
    git(repo, "switch", "-q", "-c", "elsewhere")
    assert (await mgr.merge_workspace(workspace_id)).status == "merged"
    assert git(repo, "show", "elsewhere:new.txt") == "new"


async def test_no_merge_onto_a_branch_without_the_tasks_base(repo: Path) -> None:
    """The user switched to another line of work while the task ran: merged there, the task's
    branch would bring its base (and all of main's history since the two parted) into it."""
    git(repo, "switch", "-q", "-c", "feature")
    _write(repo / "feature.txt", "feature\n")
    git(repo, "add", "feature.txt")
    git(repo, "commit", "-q", "-m", "feature work")
    git(repo, "switch", "-q", "main")
    _write(repo / "main.txt", "main\n")
    git(repo, "add", "main.txt")
    git(repo, "commit", "-q", "-m", "main moves on")
    mgr = WorkspaceManager(str(repo), Events())
    workspace_id, kept = await task_with_new_file(mgr)  # based on main's head
    base = git(repo, "rev-parse", "main")
    git(repo, "switch", "-q", "feature")
    feature_head = git(repo, "rev-parse", "HEAD")
    with pytest.raises(AirException) as raised:
        await mgr.merge_workspace(workspace_id)
    error = raised.value.error
    assert error.kind == ErrorKind.WORKSPACE_ERROR
    assert (
        f"the project is on branch feature, which does not hold the commit task t1 started "
        f"from ({base[:12]})"
    ) in error.message
    assert error.user_action == (
        f"Check out the branch the task started from (git branch --contains {base[:12]}), then "
        f"merge it: git merge {kept}"
    )
    assert git(repo, "rev-parse", "HEAD") == feature_head
    assert not (repo / "main.txt").exists()  # main's history stayed out of feature
    git(repo, "switch", "-q", "main")
    assert (await mgr.merge_workspace(workspace_id)).status == "merged"
