"""The Scheduler with real git worktrees: concurrent writers run isolated and merge back; a
merge conflict becomes a failed attempt that is retried alone on top of the merged result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from air.contracts.task import TaskScope, TaskSpec
from air.contracts.task_results import MergeResult
from air.supervision.seams import SuperviseRequest
from air.testing.fake_runner import FakeStep, FakeTaskRunner
from air.workspace.manager import WorkspaceManager
from tests.gitrepo import git
from tests.nursery.conftest import SessionDB, git_scheduler


def _spec(tid: str, area: list[str]) -> TaskSpec:
    return TaskSpec(
        id=tid, type="execute", title=tid, description=tid, scope=TaskScope(write_area=area)
    )


def _read(path: Path) -> str:
    return path.read_text()


async def test_concurrent_writers_merge_and_conflicts_are_retried_serially(
    repo: Path, session_db: SessionDB
) -> None:
    ledger = session_db.ledger
    workspaces = WorkspaceManager(str(repo), ledger.record)

    def user_edits_shared(request: SuperviseRequest) -> None:
        # while y's first attempt runs, the project's shared.txt changes under it: a real
        # conflict (a task's merge takes only its own write area, so two tasks with disjoint
        # areas never conflict with each other)
        if request.task_spec.id == "y" and request.attempt_index == 1:
            (repo / "shared.txt").write_text("user\n")
            git(repo, "commit", "-q", "-am", "the user's edit")

    runner = FakeTaskRunner(
        {
            "a": [FakeStep(0.01, writes=(("a.txt", "from a\n"),))],
            "x": [FakeStep(0.01, writes=(("x/x.txt", "x\n"),))],
            "y": [FakeStep(0.5, writes=(("shared.txt", "y\n"),))],
        },
        on_start=user_edits_shared,
    )
    sched = git_scheduler(repo, ledger, runner, workspaces, 3)
    await sched.create_tasks(
        [_spec("a", ["a.txt"]), _spec("x", ["x/**"]), _spec("y", ["shared.txt"])]
    )
    result = await sched.run_until_idle()
    errors = [e.payload["error"] for e in ledger.history() if e.type == "task.failed"]
    assert result.status == "completed", (result, errors)
    assert _read(repo / "a.txt") == "from a\n"
    assert _read(repo / "x" / "x.txt") == "x\n"
    assert _read(repo / "shared.txt") == "y\n"  # y re-ran alone on top of the user's edit
    assert git(repo, "status", "--porcelain") == ""
    runs = [(r.task_id, r.attempt_index) for r in runner.log.records]
    assert sorted(runs) == [("a", 1), ("x", 1), ("y", 1), ("y", 2)]
    kinds = [e.type for e in ledger.history()]
    assert kinds.count("workspace.merge.conflicted") == 1
    assert kinds.count("workspace.abandoned") == 1
    failed = [e for e in ledger.history() if e.type == "task.failed"]
    assert [e.payload["error"]["kind"] for e in failed] == ["merge_conflict"]
    # the conflicting attempt's work is kept on its branch; the landed ones' branches are gone
    branches = git(repo, "branch", "--list", "air/ws/*").split()
    assert len([b for b in branches if b.startswith("air/ws/")]) == 1
    assert session_db.replay_matches(str(repo.parent / "replay.db"))


class _HungMerge(WorkspaceManager):
    """A merge that never ends (git hung on a network file system, say)."""

    async def merge_workspace(self, workspace_id: str, **kwargs: object) -> MergeResult:
        await trio.sleep_forever()
        raise AssertionError("unreachable")


async def test_a_merge_past_its_grace_fails_its_task_in_words(
    repo: Path, session_db: SessionDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found as a run that ended "blocked: done 0/1, failed 0" without a word once a merge
    took its whole grace: the task's end was never recorded."""
    monkeypatch.setattr("air.nursery.outcomes.MERGE_GRACE", 0.5)
    ledger = session_db.ledger
    runner = FakeTaskRunner({"a": [FakeStep(0.01, writes=(("a.txt", "from a\n"),))]})
    sched = git_scheduler(repo, ledger, runner, _HungMerge(str(repo), ledger.record), 1)
    await sched.create_tasks([_spec("a", ["a.txt"])])
    with trio.fail_after(30):
        result = await sched.run_until_idle()
    assert result.status == "blocked"  # not every task completed
    [failed] = [e.payload for e in ledger.history() if e.type == "task.failed"]
    assert failed["error"]["kind"] == "workspace_error"
    assert failed["error"]["message"] == "the merge of task a did not end within 0.5 s"
    assert failed["error"]["retryability"] == "never"
    assert not (repo / "a.txt").exists()


class _SlowMerge(WorkspaceManager):
    """A merge that takes two seconds (a large change, a slow disk)."""

    async def merge_workspace(self, workspace_id: str, **kwargs: Any) -> MergeResult:
        await trio.sleep(2.0)
        return await super().merge_workspace(workspace_id, **kwargs)


async def test_waiting_for_another_tasks_merge_is_not_this_ones_grace(
    repo: Path, session_db: SessionDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Merges take turns: the wait for the one before is not counted against a merge's own
    grace. Found with a few long merges ending at once: the last failed "did not end within"
    (for good) before its own merge had begun. Each merge takes 2 s and its git's time (a
    loaded machine's git, with the worktree's removal, took over a second): counted with the
    wait, the second's is over 4 s."""
    monkeypatch.setattr("air.nursery.outcomes.MERGE_GRACE", 3.9)
    ledger = session_db.ledger
    runner = FakeTaskRunner(
        {
            "a": [FakeStep(0.01, writes=(("a.txt", "from a\n"),))],
            "b": [FakeStep(0.01, writes=(("b.txt", "from b\n"),))],
        }
    )
    sched = git_scheduler(repo, ledger, runner, _SlowMerge(str(repo), ledger.record), 2)
    await sched.create_tasks([_spec("a", ["a.txt"]), _spec("b", ["b.txt"])])
    with trio.fail_after(30):
        result = await sched.run_until_idle()
    failed = [e.payload for e in ledger.history() if e.type == "task.failed"]
    assert result.status == "completed", failed
    assert (repo / "a.txt").read_text() == "from a\n"
    assert (repo / "b.txt").read_text() == "from b\n"
