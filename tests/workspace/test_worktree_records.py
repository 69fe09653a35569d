"""air forgets git's record of its own worktrees only, never the user's (``forget_worktree``).

A user's worktree on a drive that is not mounted (its directory away for now) keeps its record
while air makes, merges and cleans workspaces, and while ``air doctor --fix`` repairs air's
state: plugged in again, its staged work is still staged. Before, every workspace cleanup ran
``git worktree prune``, which forgets every worktree whose directory is away, and with its
record went that worktree's index and HEAD ("not a git repository" in it).
"""

from __future__ import annotations

import os
from pathlib import Path

from air.contracts.task import WorkspacePlan, WorkspaceStrategy
from air.workspace.manager import WorkspaceManager
from air.workspace.worktree_records import forget_worktree
from tests.doctor.helpers import air, doctor_json, make_project
from tests.gitrepo import git
from tests.workspace.recorder import Events


def _unplugged(repo: Path, tmp: Path) -> tuple[Path, Path]:
    """A worktree of the user's with a staged change, its directory then moved away (a drive
    not mounted): (where it lives, where it is for now)."""
    usb = tmp / "usb" / "wt"
    usb.parent.mkdir()
    git(repo, "worktree", "add", "-q", "-b", "mywork", str(usb))
    (usb / "staged.txt").write_text("staged, not committed\n")
    git(usb, "add", "staged.txt")
    away = tmp / "away"
    os.rename(usb, away)
    return usb, away


def _still_there(usb: Path, away: Path) -> None:
    os.rename(away, usb)  # plugged in again
    assert git(usb, "status", "--porcelain") == "A  staged.txt"


async def test_a_cleanup_leaves_the_user_s_away_worktree_alone(repo: Path, tmp_path: Path) -> None:
    usb, away = _unplugged(repo, tmp_path)
    mgr = WorkspaceManager(str(repo), Events())
    ref = await mgr.create_workspace(
        WorkspacePlan(task_id="t1", strategy=WorkspaceStrategy.WORKTREE)
    )
    (Path(ref.path) / "new.txt").write_text("new\n")
    assert (await mgr.merge_workspace(ref.workspace_id)).status == "merged"
    await mgr.cleanup_workspace(ref.workspace_id)
    listed = git(repo, "worktree", "list", "--porcelain")
    assert ref.path not in listed  # air's own record went with its worktree
    assert str(usb) in listed
    _still_there(usb, away)


async def test_only_the_records_of_the_gone_worktree_are_forgotten(
    repo: Path, tmp_path: Path
) -> None:
    usb, away = _unplugged(repo, tmp_path)
    mine = tmp_path / "mine"
    git(repo, "worktree", "add", "-q", "--detach", str(mine))
    common = git(repo, "rev-parse", "--git-common-dir")
    common = str((repo / common).resolve())
    assert forget_worktree(common, str(mine)) == []  # its directory is there: git's business
    os.rename(mine, tmp_path / "gone")
    removed = forget_worktree(common, str(mine))
    assert [Path(r).name for r in removed] == ["mine"]
    assert str(mine) not in git(repo, "worktree", "list")
    _still_there(usb, away)


def test_the_doctor_forgets_air_s_gone_worktree_not_the_user_s(tmp_path: Path) -> None:
    project, home = make_project(tmp_path)
    usb, away = _unplugged(project, tmp_path)
    gone = project / ".air" / "local" / "workspaces" / "ws_gone"
    gone.parent.mkdir(parents=True, exist_ok=True)
    git(project, "worktree", "add", "-q", "-b", "air/ws/ws_gone", str(gone))
    os.rename(gone, tmp_path / "gone-too")  # air's own worktree directory, lost

    _, report, _ = doctor_json(project, home)
    said = [i["message"] for i in report["issues"] if i["check"] == "worktrees"]
    assert said == [f"git still lists the worktree {gone}, whose directory is gone"]
    _, report, _ = doctor_json(project, home, "--fix")
    assert [f["check"] for f in report["fixes"]] == ["worktrees"]
    listed = git(project, "worktree", "list")
    assert str(gone) not in listed
    assert str(usb) in listed
    assert git(project, "rev-parse", "--verify", "air/ws/ws_gone")  # its branch stays
    _still_there(usb, away)


def test_a_record_whose_gitdir_is_a_named_pipe_is_passed_over(tmp_path: Path) -> None:
    """Read as air reads any file it did not make (``air.small_file``): a FIFO in a record's
    place is no worktree's path, and reading it does not wait for a writer."""
    common = tmp_path / "git"
    record = common / "worktrees" / "odd"
    record.mkdir(parents=True)
    os.mkfifo(record / "gitdir")
    assert forget_worktree(str(common), str(tmp_path / "gone")) == []
    assert record.is_dir()


def test_the_doctor_checks_air_s_worktrees_of_a_project_that_is_a_linked_worktree(
    tmp_path: Path,
) -> None:
    """A project checked out with ``git worktree add`` (its ``.git`` a file): the doctor took it
    for no repository and never saw air's gone worktree there."""
    main, home = make_project(tmp_path)
    project = tmp_path / "feature"
    git(main, "worktree", "add", "-q", "-b", "feature", str(project))
    assert air(project, home, "init", ".").returncode == 0
    gone = project / ".air" / "local" / "workspaces" / "ws_gone"
    gone.parent.mkdir(parents=True, exist_ok=True)
    git(project, "worktree", "add", "-q", "-b", "air/ws/ws_gone", str(gone))
    os.rename(gone, tmp_path / "gone-too")

    _, report, _ = doctor_json(project, home)
    said = [i["message"] for i in report["issues"] if i["check"] == "worktrees"]
    assert said == [f"git still lists the worktree {gone}, whose directory is gone"]
    _, report, _ = doctor_json(project, home, "--fix")
    assert [f["check"] for f in report["fixes"]] == ["worktrees"]
    assert str(gone) not in git(main, "worktree", "list")
    assert str(project) in git(main, "worktree", "list")
