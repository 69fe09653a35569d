"""``settle_merge``: after a crash in the middle of a merge, is the task's change in the project?

Real git: a worktree's commit counts as landed only when it is its base (nothing to merge) or
descends from its base and the project's HEAD holds it; a worktree whose HEAD was moved back
to an older commit of the project is not landed, however much HEAD holds it. A stopped merge of
air's own is ended, one of the user's never is.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from air.contracts.error import AirException, ErrorKind
from air.contracts.task import WorkspacePlan, WorkspaceStrategy
from air.workspace.backups import BackupRepository
from air.workspace.manager import WorkspaceManager
from air.workspace.tree_lock import TREE
from tests.gitrepo import git, git_stops
from tests.workspace.conftest import task_with_new_file
from tests.workspace.recorder import Events
from tests.workspace.test_tree_lock import LockHolder


async def _committed(mgr: WorkspaceManager) -> tuple[str, str]:
    """A worktree whose task wrote ``new.txt``, committed as a merge commits it: (id, head)."""
    wid, _ = await task_with_new_file(mgr)
    rec = mgr.get(wid)
    return wid, await mgr.git.commit(rec, "task t1")


async def test_a_merge_git_finished_is_landed_and_recorded(repo: Path) -> None:
    events = Events()
    mgr = WorkspaceManager(str(repo), events)
    wid, head = await _committed(mgr)
    git(repo, "merge", "--no-ff", "-q", "-m", "Merge task t1", head)  # git ended; air died
    assert await mgr.settle_merge(wid, wrote=["new.txt"]) is True
    assert events.types()[-1] == "workspace.merge.completed"
    assert mgr.get(wid).status == "merged"


async def test_a_merge_that_never_ran_is_not_landed(repo: Path) -> None:
    events = Events()
    mgr = WorkspaceManager(str(repo), events)
    wid, _ = await _committed(mgr)
    assert await mgr.settle_merge(wid) is False
    assert events.types() == ["workspace.created"]
    assert mgr.get(wid).status == "active"


async def test_a_worktree_moved_back_to_an_older_commit_is_not_landed(repo: Path) -> None:
    first = git(repo, "rev-parse", "HEAD")
    (repo / "b.txt").write_text("b2\n")
    git(repo, "commit", "-qam", "second")  # the base of the task below
    mgr = WorkspaceManager(str(repo), Events())
    ref = await mgr.create_workspace(
        WorkspacePlan(task_id="t1", strategy=WorkspaceStrategy.WORKTREE)
    )
    git(ref.path, "reset", "-q", "--hard", first)  # HEAD holds it; it is not the task's work
    assert await mgr.settle_merge(ref.workspace_id) is False


async def test_a_task_that_changed_nothing_is_landed(repo: Path) -> None:
    mgr = WorkspaceManager(str(repo), Events())
    ref = await mgr.create_workspace(
        WorkspacePlan(task_id="t1", strategy=WorkspaceStrategy.WORKTREE)
    )
    assert await mgr.settle_merge(ref.workspace_id) is True


async def test_air_s_own_stopped_merge_is_ended_and_the_user_s_kept(repo: Path) -> None:
    mgr = WorkspaceManager(str(repo), Events())
    wid, head = await _committed(mgr)
    (repo / "new.txt").write_text("the user's\n")
    git(repo, "add", "new.txt")
    git(repo, "commit", "-qm", "the user's new.txt")
    git_stops(repo, "merge", head)  # conflicted, and air died before it ended its merge
    assert (repo / ".git" / "MERGE_HEAD").read_text().strip() == head
    assert await mgr.settle_merge(wid) is False
    assert not (repo / ".git" / "MERGE_HEAD").exists()
    assert (repo / "new.txt").read_text() == "the user's\n"

    # a merge of the user's own, stopped the same way, is theirs to end
    git(repo, "checkout", "-q", "-b", "theirs", "HEAD~1")
    (repo / "new.txt").write_text("theirs\n")
    git(repo, "add", "new.txt")
    git(repo, "commit", "-qm", "theirs")
    git(repo, "checkout", "-q", "main")
    git_stops(repo, "merge", "theirs")
    assert await mgr.settle_merge(wid) is False
    assert (repo / ".git" / "MERGE_HEAD").exists()


async def test_an_isolated_copy_cut_short_goes_on_where_it_stopped(repo: Path) -> None:
    events = Events()
    mgr = WorkspaceManager(str(repo), events)
    ref = await mgr.create_workspace(
        WorkspacePlan(task_id="t1", strategy=WorkspaceStrategy.ISOLATED_COPY)
    )
    (Path(ref.path) / "a.txt").write_text("one\nTWO\nthree\n")
    (Path(ref.path) / "sub").mkdir()
    (Path(ref.path) / "sub" / "c.txt").write_text("c\n")
    # the crash: a.txt copied back, sub/c.txt's temporary file written, not yet renamed
    (repo / "a.txt").write_text("one\nTWO\nthree\n")
    (repo / "sub").mkdir()
    (repo / "sub" / ".0123abcd.air-merge.tmp").write_text("c")
    (repo / "sub" / ".keep.tmp").write_text("the user's")
    assert await mgr.settle_merge(ref.workspace_id) is False
    assert sorted(p.name for p in (repo / "sub").iterdir()) == [".keep.tmp"]
    merged = await mgr.merge_workspace(ref.workspace_id)  # no conflict: a.txt is the copy's
    assert merged.status == "merged"
    assert (repo / "sub" / "c.txt").read_text() == "c\n"
    assert (repo / "a.txt").read_text() == "one\nTWO\nthree\n"


async def test_a_merge_the_sidecar_calls_merged_is_landed_even_without_its_files(
    repo: Path,
) -> None:
    events = Events()
    mgr = WorkspaceManager(str(repo), events)
    wid, head = await _committed(mgr)
    git(repo, "merge", "--no-ff", "-q", "-m", "Merge task t1", head)
    rec = mgr.get(wid)
    rec.status = "merged"  # what the merge saves right after git merged, before its event
    mgr.records.save(rec)
    git(repo, "worktree", "remove", "--force", rec.path)  # and then its files went
    assert await mgr.settle_merge(wid, wrote=["new.txt"]) is True
    assert events.types()[-1] == "workspace.merge.completed"


async def test_held_out_by_another_air_it_says_so_rather_than_guess(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another air process holding the project's files past the patience: the settling fails
    (the resume is run again), never "not landed", which would run the task a second time."""
    monkeypatch.setattr("air.workspace.manager.TREE_PATIENCE_S", 0.3)
    mgr = WorkspaceManager(str(repo), Events())
    wid, _ = await _committed(mgr)
    holder = LockHolder(repo, TREE)
    try:
        with pytest.raises(AirException) as raised:
            await mgr.settle_merge(wid)
        assert raised.value.error.kind == ErrorKind.WORKSPACE_ERROR
    finally:
        await trio.to_thread.run_sync(holder.release)
    assert await mgr.settle_merge(wid) is False  # once it let go: not merged, to merge again


async def test_what_a_person_resolved_meanwhile_is_kept_in_the_backups(repo: Path) -> None:
    """The crash left air's merge stopped in conflict and the person began resolving it by
    hand; the resume ends air's merge, but a snapshot holds their resolution first."""
    backups = BackupRepository(str(repo))
    mgr = WorkspaceManager(str(repo), Events(), backups=backups)
    wid, head = await _committed(mgr)
    (repo / "new.txt").write_text("the user's\n")
    git(repo, "add", "new.txt")
    git(repo, "commit", "-qm", "the user's new.txt")
    git_stops(repo, "merge", head)
    (repo / "new.txt").write_text("resolved by hand\n")  # not yet added or committed
    assert await mgr.settle_merge(wid) is False
    assert not (repo / ".git" / "MERGE_HEAD").exists()
    assert (repo / "new.txt").read_text() == "the user's\n"  # the merge was ended
    [kept] = [s for s in await backups.snapshots() if s.reason == "before ending a stopped merge"]
    await backups.restore_file("new.txt", kept)
    assert (repo / "new.txt").read_text() == "resolved by hand\n"
