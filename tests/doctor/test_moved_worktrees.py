"""A project moved after air made worktrees for its tasks: git's metadata and air's records
name the old place. `air doctor` says so for each kept worktree (not "orphan", not "prunable"),
and `--fix` leaves them alone: no `git worktree prune`, nothing moved to quarantine; the branch
keeps its commit, and `git worktree repair` (what the doctor tells the user) relinks it."""

from __future__ import annotations

import shutil
from pathlib import Path

from air.contracts.task import WorkspacePlan, WorkspaceStrategy
from air.workspace.manager import WorkspaceManager
from tests.doctor.helpers import doctor_json, make_project
from tests.gitrepo import git
from tests.workspace.recorder import Events


async def test_a_moved_projects_worktrees_are_said_and_left_alone(tmp_path: Path) -> None:
    project, home = make_project(tmp_path)
    ref = await WorkspaceManager(str(project), Events()).create_workspace(
        WorkspacePlan(task_id="t1", strategy=WorkspaceStrategy.WORKTREE)
    )
    (Path(ref.path) / "work.txt").write_text("kept work\n")
    git(ref.path, "add", "work.txt")
    git(ref.path, "commit", "-q", "-m", "the task's work")
    branch = git(ref.path, "rev-parse", "--abbrev-ref", "HEAD")
    moved = tmp_path / "elsewhere"
    shutil.move(project, moved)
    here = moved / ".air" / "local" / "workspaces" / ref.workspace_id

    _, report, _ = doctor_json(moved, home)
    found = [i for i in report["issues"] if i["check"] == "worktrees"]
    assert len(found) == 1, found
    assert f"worktree {here} was made before the project moved" in found[0]["message"]
    assert f"git worktree repair {here}" in found[0]["user_action"]
    assert found[0]["fix_hint"] is None

    _, report, _ = doctor_json(moved, home, "--fix")
    assert [f for f in report["fixes"] if f["check"] == "worktrees"] == []
    assert (here / "work.txt").read_text() == "kept work\n"
    assert not (moved / ".air" / "local" / "quarantine").exists()
    # git's entry was not pruned: a repair relinks the worktree, its commit on its branch
    git(moved, "worktree", "repair", str(here))
    assert str(here) in git(moved, "worktree", "list")
    assert git(here, "log", "-1", "--format=%s", branch) == "the task's work"
