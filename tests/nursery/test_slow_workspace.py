"""A task whose workspace takes longer to make than a record may take (RECORD_GRACE): a
checkout of a large repository, an isolated copy of a large project. The real Scheduler, real
git worktrees and session database; the workspace manager is the real one, its checkout made
slower by a wait (a 100,000-file checkout on a slow disk takes as long).

Found (the slow lane, a copy of a project holding a tree 1,500 deep, under load): the
workspace was made under a shielded ``move_on_after(RECORD_GRACE)``; past it, ``workspace`` was
never assigned and the whole run ended in ``UnboundLocalError``, exit 1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from air.contracts.task import WorkspaceRef
from air.nursery.facts import RECORD_GRACE
from air.supervision.seams import SuperviseRequest
from air.testing.fake_runner import FakeStep, FakeTaskRunner
from air.workspace.manager import WorkspaceManager
from tests.nursery.conftest import SessionDB, git_scheduler, task_writing


class SlowCheckout(WorkspaceManager):
    """The real manager; each workspace takes a little longer than RECORD_GRACE to make."""

    async def create_workspace(self, *args: Any, **kwargs: Any) -> WorkspaceRef:
        await trio.sleep(RECORD_GRACE + 1)
        return await super().create_workspace(*args, **kwargs)


@pytest.mark.slow
async def test_a_workspace_slower_than_a_record_still_runs_its_task(
    repo: Path, session_db: SessionDB
) -> None:
    workspaces = SlowCheckout(str(repo), session_db.ledger.record)

    def works(request: SuperviseRequest) -> None:
        Path(request.workspace.path, "shared.txt").write_text("work\n")

    runner = FakeTaskRunner({"t": [FakeStep(0.01, "completed")]}, on_start=works)
    sched = git_scheduler(repo, session_db.ledger, runner, workspaces)
    await sched.create_tasks([task_writing("shared.txt", retry_budget=0)])
    with trio.fail_after(120):
        await sched.run_until_idle()
    assert sched.graph.tasks["t"].status.value == "completed"
    assert (repo / "shared.txt").read_text() == "work\n"
