"""A task that finds the user's own merge under way in the project, through the real Scheduler,
real worktrees and a real session database: the user's merge is left as it is, the task fails
once with what to do (no attempt is run again: the project's state, not the task, is in the
way) and its work stays on its branch (tests/workspace/test_merge_user_git_state.py has the
cases)."""

from __future__ import annotations

from pathlib import Path

from air.supervision.seams import SuperviseRequest
from air.testing.fake_runner import FakeStep, FakeTaskRunner
from air.workspace.manager import WorkspaceManager
from tests.gitrepo import diverge, git, git_stops
from tests.nursery.conftest import SessionDB, git_scheduler, task_writing


def _users_merge_with_a_conflict(repo: Path) -> None:
    diverge(repo, "shared.txt", "ours\n", "theirs\n")
    git_stops(repo, "merge", "theirs")
    (repo / "shared.txt").write_text("the user's resolution, half done\n")


async def test_a_task_meeting_the_users_merge_fails_once_and_keeps_its_work(
    repo: Path, session_db: SessionDB
) -> None:
    workspaces = WorkspaceManager(str(repo), session_db.ledger.record)

    def works(request: SuperviseRequest) -> None:  # the worker's edit; the user meanwhile
        Path(request.workspace.path, "task.txt").write_text("work\n")
        _users_merge_with_a_conflict(repo)

    runner = FakeTaskRunner({"t": [FakeStep(0.01, "completed")]}, on_start=works)
    sched = git_scheduler(repo, session_db.ledger, runner, workspaces)
    await sched.create_tasks([task_writing("task.txt", retry_budget=2)])
    await sched.run_until_idle()
    history = session_db.ledger.history()
    assert [e.type for e in history].count("workspace.created") == 1  # one attempt
    failed = [e for e in history if e.type == "task.failed"]
    assert len(failed) == 1
    error = failed[0].payload["error"]
    assert error["kind"] == "workspace_error"
    assert error["retryability"] == "never"
    assert (
        "the project's git is in the middle of a merge: task t was not merged" in (error["message"])
    )
    branch = error["message"].rsplit("kept on branch ", 1)[1]
    assert error["user_action"].endswith(f"then merge it: git merge {branch}")
    # the user's merge is theirs still; the task's work is on its branch
    assert (repo / "shared.txt").read_text() == "the user's resolution, half done\n"
    assert (repo / ".git" / "MERGE_HEAD").read_text().strip() == git(repo, "rev-parse", "theirs")
    assert not (repo / "task.txt").exists()
    assert git(repo, "show", f"{branch}:task.txt") == "work"
    assert session_db.replay_matches(str(repo.parent / "replay.db"))
