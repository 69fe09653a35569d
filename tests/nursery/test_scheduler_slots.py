"""No idle slot and O(changes) scheduling (issue #11 items 4-5), under Trio's virtual clock.

The fake runner plays the workers; the event store is a real SQLite file. Times asserted are
virtual seconds (exact), costs are counts: events handed out by the ledger, readiness
evaluations and heap entries the planner looked at, per task.
"""

from __future__ import annotations

import os
import random
from typing import Any

import pytest
import trio
import trio.testing

from air.contracts.event import RuntimeEvent
from air.contracts.task import TaskDependencySpec, TaskScope, TaskSpec
from air.events.fold_state import SessionState
from air.nursery.ledger import SessionLedger
from air.nursery.scheduler import Scheduler, SchedulerOptions
from air.testing.fake_runner import FakeStep, FakeTaskRunner, RunLog
from tests.nursery.conftest import SessionDB, open_session_db


def _spec(tid: str, deps: tuple[str, ...] = (), area: list[str] | None = None) -> TaskSpec:
    return TaskSpec(
        id=tid,
        type="execute",
        title=tid,
        description=tid,
        scope=TaskScope(write_area=area if area is not None else [f"src/{tid}.py"]),
        dependencies=[TaskDependencySpec(depends_on_task_id=d) for d in deps],
    )


class CountingLedger:
    """A SessionLedger that counts how many events its readers were handed."""

    def __init__(self, inner: SessionLedger) -> None:
        self.inner = inner
        self.session_id = inner.session_id
        self.project_id = inner.project_id
        self.history_events = 0
        self.state_calls = 0

    async def record(self, type: str, payload: dict[str, Any]) -> RuntimeEvent:
        return await self.inner.record(type, payload)

    def history(self) -> list[RuntimeEvent]:
        events = self.inner.history()
        self.history_events += len(events)
        return events

    def history_of(self, *types: str, task_id: str | None = None) -> list[RuntimeEvent]:
        events = self.inner.history_of(*types, task_id=task_id)
        self.history_events += len(events)
        return events

    def knows(self, event_type: str) -> bool:
        return self.inner.knows(event_type)

    def state(self) -> SessionState:
        self.state_calls += 1
        return self.inner.state()


def _run(
    sdb: SessionDB, specs: list[TaskSpec], runner: FakeTaskRunner, workers: int
) -> tuple[Scheduler, float, CountingLedger]:
    ledger = CountingLedger(sdb.ledger)
    sched = Scheduler(
        ledger, runner, project_root="/x", options=SchedulerOptions(max_workers=workers)
    )

    async def main() -> float:
        await sched.create_tasks(specs)
        result = await sched.run_until_idle()
        assert result.status == "completed", result
        return trio.current_time()

    makespan = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    return sched, makespan, ledger


def _assert_work_conserving(log: RunLog, specs: list[TaskSpec], workers: int) -> None:
    """Whenever a task was runnable and not started yet, every slot was busy."""
    ended = {r.task_id: r.ended_at for r in log.records}
    started = {r.task_id: r.started_at for r in log.records}
    for spec in specs:
        ready = max((ended[d.depends_on_task_id] or 0.0 for d in spec.dependencies), default=0.0)
        t = ready
        while t < started[spec.id]:
            busy = len(log.running_at(t + 0.25))
            assert busy == workers, (spec.id, t, busy)
            t += 0.5


def test_a_free_slot_takes_the_next_task_without_waiting_for_the_slowest(tmp_path: str) -> None:
    # waves of whole batches would run {a, b} then {c, d}: makespan 8 + 1 = 9
    runner = FakeTaskRunner(
        {"a": [FakeStep(duration=8.0)]}, default=FakeStep(duration=1.0), heartbeat_interval=100
    )
    sdb = open_session_db(os.path.join(str(tmp_path), "s"))
    try:
        specs = [_spec(t) for t in ("a", "b", "c", "d")]
        sched, makespan, _ = _run(sdb, specs, runner, workers=2)
    finally:
        sdb.db.close()
    starts = {r.task_id: r.started_at for r in runner.log.records}
    assert starts == {"a": 0.0, "b": 0.0, "c": 1.0, "d": 2.0}
    assert makespan == 8.0
    assert runner.log.max_concurrency == 2
    assert sched.waves == 3  # each freed slot opened the next wave's nursery
    _assert_work_conserving(runner.log, specs, 2)


def test_mixed_lengths_with_dependencies_keep_every_slot_busy(tmp_path: str) -> None:
    rnd = random.Random(4)
    specs: list[TaskSpec] = []
    script: dict[str, list[FakeStep]] = {}
    for i in range(60):
        deps = (f"t{rnd.randrange(i)}",) if i and rnd.random() < 0.4 else ()
        specs.append(_spec(f"t{i}", deps))
        script[f"t{i}"] = [FakeStep(duration=float(rnd.randint(1, 8)))]
    runner = FakeTaskRunner(script, heartbeat_interval=100)
    sdb = open_session_db(os.path.join(str(tmp_path), "s"))
    try:
        _, makespan, _ = _run(sdb, specs, runner, workers=3)
    finally:
        sdb.db.close()
    _assert_work_conserving(runner.log, specs, 3)
    total = sum(step[0].duration for step in script.values())
    assert makespan >= total / 3
    assert runner.log.max_concurrency == 3


def test_a_task_that_overlaps_a_running_one_waits_while_others_fill_the_slot(
    tmp_path: str,
) -> None:
    runner = FakeTaskRunner(
        {"a": [FakeStep(duration=4.0)]}, default=FakeStep(duration=1.0), heartbeat_interval=100
    )
    sdb = open_session_db(os.path.join(str(tmp_path), "s"))
    try:
        specs = [
            _spec("a", area=["src/**"]),
            _spec("b", area=["docs/b.md"]),
            _spec("c", area=["src/c.py"]),  # overlaps a: may not run next to it
            _spec("d", area=["docs/d.md"]),
        ]
        _run(sdb, specs, runner, workers=2)
    finally:
        sdb.db.close()
    starts = {r.task_id: r.started_at for r in runner.log.records}
    assert starts == {"a": 0.0, "b": 0.0, "d": 1.0, "c": 4.0}


def _costs(tmp_path: str, n: int, shape: str) -> tuple[float, float, float, float]:
    specs = [
        _spec(f"t{i}", (f"t{i - 1}",) if shape == "chained" and i % 10 else ()) for i in range(n)
    ]
    runner = FakeTaskRunner(default=FakeStep(duration=1.0), heartbeat_interval=100)
    sdb = open_session_db(os.path.join(str(tmp_path), f"{shape}{n}"))
    try:
        sched, _, ledger = _run(sdb, specs, runner, workers=4)
        logged = len(sdb.events.query_records())
    finally:
        sdb.db.close()
    assert len(runner.log.records) == n
    return (
        ledger.history_events / logged,
        ledger.state_calls / n,
        sched.graph.evaluations / n,
        sched.graph.heap_pops / n,
    )


@pytest.mark.slow
def test_scheduling_costs_per_task_do_not_grow_with_the_batch(tmp_path: str) -> None:
    for shape in ("independent", "chained"):
        small = _costs(tmp_path, 50, shape)
        large = _costs(tmp_path, 500, shape)
        # the log is read whole only by recovery (twice a run), never per decision
        assert small[0] <= 2.0
        assert large[0] <= 2.0
        # per task: a bounded number of fold reads, readiness evaluations and heap looks
        for a, b in zip(small[1:], large[1:], strict=True):
            assert b <= a * 1.2 + 0.5, (shape, small, large)
        assert large[2] <= 6
        assert large[3] <= 4
