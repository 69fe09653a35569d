"""The Scheduler over the real WorkerManager and real worker processes: cancelling a wave of
16 workers (half ignore SIGTERM, each left a setsid grandchild) reaps every one of them and
every grandchild, and every task ends interrupted with its outcome recorded."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import trio

from air.contracts.task import TaskConstraints, TaskScope, TaskSpec
from air.contracts.task_results import SchedulerRunResult
from air.ipc.procs import find_marked
from air.llm.manager import ProviderManager
from air.nursery.ledger import SessionLedger, fold_history
from air.nursery.scheduler import Scheduler, SchedulerOptions
from air.session.manager import SessionManager
from air.session.project import ProjectStore
from air.supervision.runs import RunRecordStore
from air.supervision.worker_manager import SupervisionConfig, WorkerManager

WORKER = ["-m", "air.testing.workers.hang_with_grandchild"]


async def _never_called(*args: object) -> object:
    raise AssertionError("no tool calls expected")


async def test_cancelling_a_wave_of_16_reaps_workers_and_grandchildren(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    project = ProjectStore().initialize(str(root))
    session = SessionManager().open_session(project)
    try:
        (tmp_path / "empty.jsonl").write_text("")
        state_dir = str(tmp_path / "runs")
        env = dict(os.environ)
        runners = []
        for ignore in ("0", "1"):
            env_i = {**env, "IGNORE_TERM": ignore}
            runners.append(
                WorkerManager(
                    tools=_never_called,  # type: ignore[arg-type]
                    provider=ProviderManager.for_cassette(str(tmp_path / "empty.jsonl")),
                    events=session.ingestor,
                    artifacts=session.artifacts,
                    config=SupervisionConfig(
                        command=[sys.executable, *WORKER], env=env_i, kill_grace_s=0.5
                    ),
                    state_dir=state_dir,
                )
            )

        class Split:
            """Even tasks go to workers that obey SIGTERM, odd ones to workers that ignore it."""

            async def supervise(self, request):  # type: ignore[no-untyped-def]
                index = int(request.task_spec.id.split("-")[1])
                return await runners[index % 2].supervise(request)

        ledger = SessionLedger.for_session(session)
        sched = Scheduler(
            ledger, Split(), project_root=str(root), options=SchedulerOptions(max_workers=16)
        )
        await sched.create_tasks(
            [
                TaskSpec(
                    id=f"t-{i}",
                    type="review",
                    title=f"t{i}",
                    description="hang",
                    scope=TaskScope(write_area=[]),
                    constraints=TaskConstraints(hard_timeout_ms=600_000, soft_timeout_ms=600_000),
                )
                for i in range(16)
            ]
        )
        records = RunRecordStore(state_dir)

        def live_markers() -> list[str]:
            return [r["marker"] for r in records.list() if r.get("marker")]

        async with trio.open_nursery() as nursery:
            result_box: list[SchedulerRunResult] = []

            async def run() -> None:
                result_box.append(await sched.run_until_idle())

            nursery.start_soon(run)
            with trio.fail_after(60):
                while True:
                    started = [e for e in ledger.history() if e.type == "agent.started"]
                    markers = live_markers()
                    if (
                        len(started) == 16
                        and len(markers) == 16
                        and all(
                            len(find_marked(m)) >= 2
                            for m in markers  # worker + grandchild
                        )
                    ):
                        break
                    await trio.sleep(0.05)
            sched.cancel("test: cancel the wave")
        [result] = result_box
        assert result.status == "cancelled"
        survivors = {m: find_marked(m) for m in live_markers()}
        assert survivors == {m: [] for m in survivors}
        assert len(survivors) == 16
        folded = fold_history(ledger.history())
        assert {t.status.value for t in folded.tasks.values()} == {"interrupted"}
        assert {a.status for a in folded.agents.values()} == {"cancelled"}
    finally:
        session.close()
