"""Workspaces that will never be merged are abandoned, and the retention then takes their files
(SDD §20.5: active until merge or cancel; abandoned 3 days), across sessions too. Real git
worktrees, real session databases, the real Scheduler and recovery.

Found: a retry gets a new workspace, but the failed attempt's stayed ``active`` forever (only a
merge conflict abandoned one), so every failed, blocked or cancelled attempt kept a whole
checkout of the project and its branch; and the retention run by a later session failed on a
workspace of an earlier one (its ``workspace.cleaned`` named a workspace that session's log
does not know), after the files were already gone."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from air.contracts.task import WorkspacePlan
from air.nursery.recovery import recover_session
from air.nursery.scheduler import Scheduler
from air.supervision.seams import SuperviseRequest
from air.testing.fake_runner import FakeEnding, FakeStep, FakeTaskRunner
from air.workspace.manager import WorkspaceManager
from tests.gitrepo import git
from tests.nursery.conftest import SessionDB, git_scheduler, open_session_db, task_writing


def _read(path: Path) -> str:
    return path.read_text()


def _write(path: Path, text: str) -> None:
    path.write_text(text)


def _exists(path: Path) -> bool:
    return path.exists()


class Clock:
    """The workspaces' wall clock, moved by the test (the retention counts days)."""

    def __init__(self) -> None:
        self.value = "2026-01-01T00:00:00.000000Z"

    def __call__(self) -> str:
        return self.value


async def _scheduler(
    repo: Path, sdb: SessionDB, workspaces: WorkspaceManager, runner: FakeTaskRunner
) -> Scheduler:
    """A Scheduler holding task ``t`` (writes ``shared.txt``; one attempt: the one looked at)."""
    sched = git_scheduler(repo, sdb.ledger, runner, workspaces)
    await sched.create_tasks([task_writing("shared.txt", retry_budget=0)])
    return sched


async def _one_attempt(
    repo: Path, sdb: SessionDB, clock: Clock, ending: FakeEnding
) -> tuple[WorkspaceManager, str]:
    """Run task ``t`` once in its own worktree, writing ``shared.txt``, ending ``ending``."""
    workspaces = WorkspaceManager(str(repo), sdb.ledger.record, now=clock)

    def works(request: SuperviseRequest) -> None:  # the worker's edit, before it ends
        Path(request.workspace.path, "shared.txt").write_text("work\n")

    runner = FakeTaskRunner({"t": [FakeStep(0.01, ending)]}, on_start=works)
    sched = await _scheduler(repo, sdb, workspaces, runner)
    await sched.run_until_idle()
    created = [e for e in sdb.ledger.history() if e.type == "workspace.created"]
    return workspaces, created[0].payload["workspace_id"]


@pytest.mark.parametrize("ending", ["failed", "blocked", "verification_failed"])
async def test_an_attempt_that_does_not_land_sets_its_workspace_aside(
    repo: Path, session_db: SessionDB, ending: FakeEnding
) -> None:
    clock = Clock()
    workspaces, wid = await _one_attempt(repo, session_db, clock, ending)
    abandoned = [e for e in session_db.ledger.history() if e.type == "workspace.abandoned"]
    assert [e.payload["workspace_id"] for e in abandoned] == [wid]
    assert abandoned[0].payload["reason"] == "attempt 1 did not complete"
    rec = workspaces.get(wid)
    assert rec.status == "abandoned"
    # its files stay for the retention (no git work in the outcome's short grace)
    assert _read(Path(rec.path, "shared.txt")) == "work\n"
    assert _read(repo / "shared.txt") == "base\n"
    # three days on, a session's start commits the work to the branch (kept), takes the files
    clock.value = "2026-01-04T00:00:01.000000Z"
    report = await recover_session(session_db.ledger, workspaces=workspaces)
    assert report.cleaned_workspaces == [wid]
    assert not _exists(Path(rec.path))
    assert git(repo, "show", f"{rec.branch}:shared.txt") == "work"
    assert session_db.replay_matches(str(repo.parent / "replay.db"))


async def test_a_cancelled_attempt_sets_its_workspace_aside(
    repo: Path, session_db: SessionDB
) -> None:
    workspaces = WorkspaceManager(str(repo), session_db.ledger.record, now=Clock())
    started = trio.Event()
    runner = FakeTaskRunner({"t": [FakeStep(60, "hang")]}, on_start=lambda _: started.set())
    sched = await _scheduler(repo, session_db, workspaces, runner)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(sched.run_until_idle)
        await started.wait()
        await sched.cancel_task("t", "the user changed their mind")
    kinds = [e.type for e in session_db.ledger.history()]
    assert "task.cancelled" in kinds
    abandoned = [e for e in session_db.ledger.history() if e.type == "workspace.abandoned"]
    assert [e.payload["reason"] for e in abandoned] == ["attempt 1 was cancelled"]


async def test_an_interrupted_attempt_is_set_aside_when_its_session_recovers(
    repo: Path, tmp_path: Path
) -> None:
    sdb = open_session_db(str(tmp_path / "s"), "ses_a")
    workspaces = WorkspaceManager(str(repo), sdb.ledger.record, now=Clock())
    ref = await workspaces.create_workspace(WorkspacePlan(task_id="t", strategy="worktree"))
    _write(Path(ref.path, "shared.txt"), "half done\n")  # the runtime died here
    await recover_session(sdb.ledger, workspaces=workspaces)
    abandoned = [e for e in sdb.ledger.history() if e.type == "workspace.abandoned"]
    assert [e.payload["reason"] for e in abandoned] == ["its attempt was interrupted"]
    assert _read(Path(ref.path, "shared.txt")) == "half done\n"  # kept for the retention
    assert workspaces.get(ref.workspace_id).status == "abandoned"
    # the recovery is idempotent: a second one records nothing more
    before = len(sdb.ledger.history())
    await recover_session(sdb.ledger, workspaces=workspaces)
    assert len(sdb.ledger.history()) == before
    sdb.db.close()


async def test_a_later_session_cleans_an_earlier_ones_workspace_and_it_learns_of_it(
    repo: Path, tmp_path: Path
) -> None:
    clock = Clock()
    first = open_session_db(str(tmp_path / "a"), "ses_a")
    mine, wid = await _one_attempt(repo, first, clock, "failed")
    assert mine.get(wid).status == "abandoned"
    clock.value = "2026-01-05T00:00:00.000000Z"
    second = open_session_db(str(tmp_path / "b"), "ses_b")
    theirs = WorkspaceManager(str(repo), second.ledger.record, now=clock)
    report = await recover_session(second.ledger, workspaces=theirs)
    assert report.cleaned_workspaces == [wid]
    assert not _exists(Path(mine.get(wid).path))
    assert WorkspaceManager(str(repo), second.ledger.record).get(wid).status == "cleaned"
    assert "workspace.cleaned" not in [e.type for e in second.ledger.history()]
    # the first session, opened again, records the cleaning in its own log
    again = WorkspaceManager(str(repo), first.ledger.record, now=clock)
    await recover_session(first.ledger, workspaces=again)
    cleaned = [e for e in first.ledger.history() if e.type == "workspace.cleaned"]
    assert [e.payload["workspace_id"] for e in cleaned] == [wid]
    assert first.replay_matches(str(tmp_path / "replay_a.db"))
    assert second.replay_matches(str(tmp_path / "replay_b.db"))
    first.db.close()
    second.db.close()


async def test_a_start_cleans_a_few_due_workspaces_the_oldest_first(
    repo: Path, session_db: SessionDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    # after days away every attempt that failed meanwhile is due at once, and each costs a
    # commit and a worktree removal: a start takes its share, the next start the rest
    monkeypatch.setattr("air.nursery.recovery.GC_PER_START", 2)
    clock = Clock()
    workspaces = WorkspaceManager(str(repo), session_db.ledger.record, now=clock)
    made = []
    for task in ("t1", "t2", "t3"):
        ref = await workspaces.create_workspace(WorkspacePlan(task_id=task, strategy="worktree"))
        await workspaces.abandon_workspace(ref.workspace_id, "failed", commit=False)
        made.append(ref.workspace_id)
    clock.value = "2026-01-05T00:00:00.000000Z"
    made.sort()  # ids sort by the time they were made
    first = await recover_session(session_db.ledger, workspaces=workspaces)
    assert first.cleaned_workspaces == made[:2]
    second = await recover_session(session_db.ledger, workspaces=workspaces)
    assert second.cleaned_workspaces == made[2:]


async def test_a_workspace_without_its_record_is_left_as_it_is_and_recovery_goes_on(
    repo: Path, tmp_path: Path
) -> None:
    sdb = open_session_db(str(tmp_path / "s"), "ses_a")
    workspaces = WorkspaceManager(str(repo), sdb.ledger.record, now=Clock())
    ref = await workspaces.create_workspace(WorkspacePlan(task_id="t", strategy="worktree"))
    (repo / ".air" / "local" / "workspaces" / f"{ref.workspace_id}.json").unlink()
    report = await recover_session(
        sdb.ledger, workspaces=WorkspaceManager(str(repo), sdb.ledger.record, now=Clock())
    )
    assert report.kept_workspaces == [ref.workspace_id]
    assert "workspace.abandoned" not in [e.type for e in sdb.ledger.history()]
    assert _exists(Path(ref.path))
    sdb.db.close()
