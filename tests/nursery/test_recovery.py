"""Recovery (SDD §16.3) over a real session DB: orphan agents reaped or recorded lost, running
tasks interrupted, completed tasks untouched; idempotent, also across a crash mid-recovery;
and the Scheduler resumes what recovery left pending without rerunning completed work, nor a
task whose worker had returned its result (collected from the log: IMPL-RESUME-1)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from air.contracts.event import RuntimeEvent
from air.contracts.task import TaskSpec
from air.events.fold_state import SessionState
from air.nursery.ledger import Ledger, StoredAgent, fold_history, ledger_view
from air.nursery.recovery import recover_session
from air.nursery.scheduler import Scheduler, SchedulerOptions
from air.store.integrity import dump_tables
from air.supervision.monitor import pid_start_time, process_alive
from air.testing.fake_runner import FakeStep, FakeTaskRunner
from tests.nursery.conftest import SessionDB, open_session_db


def _spec(tid: str) -> dict[str, Any]:
    return TaskSpec(id=tid, type="execute", title=tid, description=tid).model_dump(mode="json")


async def _crashed_run(ledger: Ledger, live_pid: int | None) -> None:
    """What the log looks like after the runtime was SIGKILLed mid-wave."""
    for tid in "abcd":
        await ledger.record("task.created", {"task_spec": _spec(tid)})
    for tid, agent in (("a", "agt_a"), ("b", "agt_b"), ("c", "agt_c")):
        await ledger.record(
            "task.started",
            {"task_id": tid, "agent_id": agent, "agent_type": "executor", "attempt_index": 1},
        )
    pid_b = live_pid
    await ledger.record(
        "agent.started",
        {
            "agent_id": "agt_b",
            "task_id": "b",
            "agent_type": "executor",
            "status": "running",
            "pid": pid_b,
            "pid_start_time": str(pid_start_time(pid_b)) if pid_b else None,
        },
    )
    await ledger.record(
        "agent.started",
        {
            "agent_id": "agt_c",
            "task_id": "c",
            "agent_type": "executor",
            "status": "running",
            "pid": 2**22 + 12345,  # no such process
            "pid_start_time": "1",
        },
    )
    await ledger.record("task.completed", {"task_id": "a", "agent_id": "agt_a", "attempt_index": 1})


async def _reap(agent: StoredAgent) -> bool:
    assert agent.pid is not None
    os.killpg(agent.pid, signal.SIGKILL)
    for _ in range(1000):  # bounded: 10 s
        if not process_alive(agent.pid):
            return True
        await trio.sleep(0.01)
    return False


def _statuses(sdb: SessionDB) -> dict[str, list[tuple[Any, ...]]]:
    return {
        "tasks": [tuple(r) for r in sdb.db.query("SELECT id, status FROM tasks ORDER BY id")],
        "agents": [tuple(r) for r in sdb.db.query("SELECT id, status FROM agents ORDER BY id")],
        "attempts": [
            tuple(r)
            for r in sdb.db.query(
                "SELECT task_id, attempt_index, status FROM task_attempts ORDER BY 1, 2"
            )
        ],
    }


@pytest.fixture
def orphan() -> Any:
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True
    )
    yield child
    if child.poll() is None:
        child.kill()
    child.wait()


async def test_recovery_reaps_orphans_interrupts_running_and_is_idempotent(
    session_db: SessionDB, orphan: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    ledger = session_db.ledger
    await _crashed_run(ledger, orphan.pid)
    report = await recover_session(ledger, reap=_reap)
    assert report.reaped_agents == ["agt_b"]
    assert sorted(report.lost_agents) == ["agt_b", "agt_c"]
    assert sorted(report.interrupted_tasks) == ["b", "c"]
    assert report.pending_tasks == ["b", "c", "d"]
    assert orphan.wait(timeout=10) == -signal.SIGKILL
    state = _statuses(session_db)
    assert state["tasks"] == [
        ("a", "completed"),
        ("b", "interrupted"),
        ("c", "interrupted"),
        ("d", "pending"),
    ]
    assert state["agents"] == [("agt_b", "lost"), ("agt_c", "lost")]
    before = dump_tables(session_db.db)
    again = await recover_session(ledger, reap=_reap)
    assert not again.changed
    assert dump_tables(session_db.db) == before
    assert session_db.replay_matches(str(tmp_path / "replay.db"))


class CrashingLedger:
    """Forwards to a real ledger and dies (like a SIGKILL) after ``allowed`` records."""

    def __init__(self, inner: Ledger, allowed: int) -> None:
        self.inner = inner
        self.allowed = allowed
        self.session_id = inner.session_id
        self.project_id = inner.project_id

    async def record(self, type: str, payload: dict[str, Any]) -> RuntimeEvent:
        if self.allowed == 0:
            raise KeyboardInterrupt("simulated crash during recovery")
        self.allowed -= 1
        return await self.inner.record(type, payload)

    def history(self) -> list[RuntimeEvent]:
        return self.inner.history()

    def history_of(self, *types: str, task_id: str | None = None) -> list[RuntimeEvent]:
        return self.inner.history_of(*types, task_id=task_id)

    def state(self) -> SessionState:
        return self.inner.state()

    def knows(self, event_type: str) -> bool:
        return self.inner.knows(event_type)


@pytest.mark.parametrize("crash_after", [0, 1, 2, 3])
async def test_crash_during_recovery_then_recover_gives_the_same_state(
    tmp_path: Path, crash_after: int
) -> None:
    clean = open_session_db(str(tmp_path / "clean"))
    crashed = open_session_db(str(tmp_path / "crashed"))
    try:
        await _crashed_run(clean.ledger, None)
        await _crashed_run(crashed.ledger, None)
        await recover_session(clean.ledger)
        with pytest.raises(KeyboardInterrupt):
            await recover_session(CrashingLedger(crashed.ledger, crash_after))
        await recover_session(crashed.ledger)
        assert _statuses(crashed) == _statuses(clean)
        # and once more: nothing changes
        assert not (await recover_session(crashed.ledger)).changed
    finally:
        clean.db.close()
        crashed.db.close()


async def test_scheduler_resumes_after_recovery_without_rerunning_completed(
    session_db: SessionDB, autojump_clock: trio.testing.MockClock
) -> None:
    ledger = session_db.ledger
    await _crashed_run(ledger, None)
    runner = FakeTaskRunner(default=FakeStep(duration=2))
    sched = Scheduler(ledger, runner, project_root="/nonexistent", options=SchedulerOptions(4))
    result = await sched.run_until_idle()
    assert result.status == "completed"
    assert sorted(r.task_id for r in runner.log.records) == ["b", "c", "d"]
    # b and c are on their second attempt: attempt numbers continue from the log
    attempts = {r.task_id: r.attempt_index for r in runner.log.records}
    assert attempts == {"b": 2, "c": 2, "d": 1}
    folded = fold_history(ledger.history())
    assert {t: s.status.value for t, s in folded.tasks.items()} == dict.fromkeys(
        "abcd", "completed"
    )


class FoldOnlyLedger(CrashingLedger):
    """A real ledger whose whole-log read is refused: recovery must go by its fold."""

    def history(self) -> list[RuntimeEvent]:
        raise AssertionError("recovery read the whole log back")


async def test_recovery_goes_by_the_ledgers_fold_not_the_whole_log(session_db: SessionDB) -> None:
    # each event is read and folded once, for the recovery and the Scheduler (IMPL-BOOT-13)
    ledger = session_db.ledger
    await _crashed_run(ledger, None)
    report = await recover_session(FoldOnlyLedger(ledger, allowed=10))
    assert sorted(report.lost_agents) == ["agt_b", "agt_c"]
    assert sorted(report.interrupted_tasks) == ["b", "c"]
    assert report.pending_tasks == ["b", "c", "d"]
    # what that rests on: the incremental fold is the pure fold of the whole log
    assert ledger_view(ledger.state()) == fold_history(ledger.history())


async def _returned_run(ledger: Ledger, *, keeps_result: bool, remote: bool = False) -> None:
    """A log whose runtime died after task ``e``'s worker returned its result (made in place,
    in the project itself) and before ``e`` ended; an older air kept no result there."""
    await ledger.record("task.created", {"task_spec": _spec("e")})
    await ledger.record(
        "workspace.created",
        {"workspace_id": "ws_main", "task_id": None, "strategy": "main", "path": "/nonexistent"},
    )
    await ledger.record(
        "task.started",
        {
            "task_id": "e",
            "agent_id": "agt_e",
            "agent_type": "executor",
            "attempt_index": 1,
            "workspace_id": "ws_main",
        },
    )
    started = {"agent_id": "agt_e", "task_id": "e", "agent_type": "executor", "status": "running"}
    await ledger.record("agent.started", started | ({"remote": {"host": "h"}} if remote else {}))
    result = {"task_id": "e", "agent_id": "agt_e", "agent_type": "executor"}
    result |= {"status": "completed", "summary": "done in place"}
    ended: dict[str, Any] = {"agent_id": "agt_e", "task_id": "e", "exit_code": 0}
    await ledger.record(
        "agent.completed", ended | ({"worker_result": result} if keeps_result else {})
    )


@pytest.mark.parametrize("keeps_result", [True, False])
async def test_a_task_whose_worker_returned_is_collected_not_run_again(
    session_db: SessionDB, autojump_clock: trio.testing.MockClock, keeps_result: bool
) -> None:
    ledger = session_db.ledger
    await _returned_run(ledger, keeps_result=keeps_result)
    report = await recover_session(ledger)
    assert report.returned_tasks == (["e"] if keeps_result else [])
    assert report.interrupted_tasks == ([] if keeps_result else ["e"])
    runner = FakeTaskRunner(default=FakeStep(duration=2))
    sched = Scheduler(ledger, runner, project_root="/nonexistent", options=SchedulerOptions(4))
    assert (await sched.run_until_idle()).status == "completed"
    assert [r.task_id for r in runner.log.records] == ([] if keeps_result else ["e"])
    [end] = ledger.history_of("task.completed", task_id="e")
    said = "done in place" if keeps_result else "fake completed after 2s"
    assert end.payload["worker_result"]["summary"] == said
    assert end.payload["attempt_index"] == (1 if keeps_result else 2)


@pytest.mark.parametrize("merging", [False, True])
async def test_a_remote_task_is_collected_only_once_its_merge_began(
    session_db: SessionDB, merging: bool
) -> None:
    """A worker on another host: its result's files reach the local workspace after its end,
    before its merge begins; a crash in between leaves nothing to collect (interrupted), one
    after the merge began leaves a change that may have landed (collected)."""
    ledger = session_db.ledger
    await _returned_run(ledger, keeps_result=True, remote=True)
    if merging:
        await ledger.record("workspace.merge.started", {"workspace_id": "ws_main"})
    report = await recover_session(ledger)
    assert report.returned_tasks == (["e"] if merging else [])
    assert report.interrupted_tasks == ([] if merging else ["e"])
