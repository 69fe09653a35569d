"""The whole-task deadline over real worker processes (IMPL-DEADLINE-1; issue 25 item 5): the
Scheduler and the real WorkerManager run a task with 10 s for everything whose workers go
silent after their handshake. The stall watchdog ends the first attempt, which is retried; the
task's deadline ends the last one, and its ``task.failed`` names the phase. Nothing is started
after the deadline, whatever retry budget is left."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import trio

from air.contracts.task import TaskConstraints, TaskScope, TaskSpec
from air.llm.manager import ProviderManager
from air.nursery.ledger import SessionLedger
from air.nursery.scheduler import Scheduler, SchedulerOptions
from air.session.manager import SessionManager
from air.session.project import ProjectStore
from air.supervision.slots import SlotPool
from air.supervision.worker_manager import SupervisionConfig, WorkerManager


async def _never_called(*args: object) -> object:
    raise AssertionError("no tool calls expected")


@pytest.mark.slow
async def test_a_stalled_task_is_retried_and_ends_at_its_deadline(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    project = ProjectStore().initialize(str(root))
    session = SessionManager().open_session(project)
    try:
        (tmp_path / "empty.jsonl").write_text("")
        runner = WorkerManager(
            tools=_never_called,  # type: ignore[arg-type]
            provider=ProviderManager.for_cassette(str(tmp_path / "empty.jsonl")),
            events=session.ingestor,
            artifacts=session.artifacts,
            config=SupervisionConfig(
                command=[sys.executable, "-m", "air.testing.workers.stall"],
                env=dict(os.environ),
                stall_after_s=3,
                stall_kill_after_s=3,
                kill_grace_s=0.5,
            ),
            state_dir=str(tmp_path / "runs"),
            slots=SlotPool(str(tmp_path / "slots"), 2),
        )
        ledger = SessionLedger.for_session(session)
        sched = Scheduler(
            ledger, runner, project_root=str(root), options=SchedulerOptions(max_workers=1)
        )
        await sched.create_tasks(
            [
                TaskSpec(
                    id="stuck",
                    type="review",
                    title="stuck",
                    description="goes silent",
                    scope=TaskScope(write_area=[]),
                    constraints=TaskConstraints(
                        soft_timeout_ms=10_000, hard_timeout_ms=10_000, retry_budget=20
                    ),
                )
            ]
        )
        with trio.fail_after(60):
            result = await sched.run_until_idle()
        assert result.status == "blocked"
        ends = [
            e.payload
            for e in ledger.history()
            if e.type in ("task.started", "task.failed") and e.payload.get("task_id") == "stuck"
        ]
        kinds = ["started" if "error" not in p else p["error"]["kind"] for p in ends]
        # the first attempt stalls (silent 3 s, probed, silent 3 s more: killed) and is retried;
        # the retry would be killed at about 13 s, the deadline ends it at 10 s
        assert kinds == ["started", "worker_stalled", "started", "timeout"]
        phase = ends[-1]["error"]["metadata"]["timeout_phase"]
        assert phase in ("starting", "running")
    finally:
        session.close()
