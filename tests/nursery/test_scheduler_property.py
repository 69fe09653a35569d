"""Property: random task graphs, outcomes, cancellations and timeouts through the Scheduler.

Each example runs the real Scheduler over the FakeTaskRunner (memory channels, virtual time:
``trio.run(..., clock=MockClock(autojump_threshold=0))``) and checks: no task starts before
its hard dependencies completed, no two overlapping write areas run at once, the worker cap
holds, every task ends terminal (or, after a run cancel, interrupted/pending and resumable),
the event log folds back to exactly the statuses the Scheduler holds in memory, a resumed run
finishes with no completed task run again, and the session DB's events replay into an empty DB
to identical tables (``air.events.store.replay_events`` + ``dump_tables``).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from air.contracts.task import (
    DependencyType,
    TaskConstraints,
    TaskDependencySpec,
    TaskScope,
    TaskSpec,
    TaskStatus,
    VerificationPolicy,
)
from air.nursery.graph import write_areas_overlap
from air.nursery.ledger import SessionLedger, fold_history
from air.nursery.scheduler import Scheduler, SchedulerOptions
from air.supervision.seams import SuperviseRequest
from air.testing.fake_runner import FakeStep, FakeTaskRunner
from tests.nursery.conftest import open_session_db

AREAS: list[list[str] | None] = [None, [], ["a/**"], ["a/x.py"], ["b/**"], ["b/y.py"], ["c"]]
ENDINGS = [
    "completed",
    "completed",
    "completed",
    "failed",
    "crashed",
    "stalled",
    "hang",
    "verification_failed",
    "blocked",
    "partial",
    "spawn_error",
]


@dataclass
class Case:
    specs: list[TaskSpec]
    script: dict[str, list[FakeStep]]
    cancels: list[tuple[float, str]]
    run_cancel_at: float | None
    max_workers: int


@st.composite
def cases(draw: st.DrawFn) -> Case:
    n = draw(st.integers(1, 8))
    specs: list[TaskSpec] = []
    script: dict[str, list[FakeStep]] = {}
    for i in range(n):
        tid = f"t{i}"
        deps: list[TaskDependencySpec] = []
        if i:
            for j in draw(st.sets(st.integers(0, i - 1), max_size=3)):
                kind = draw(st.sampled_from(list(DependencyType)))
                deps.append(TaskDependencySpec(depends_on_task_id=f"t{j}", dependency_type=kind))
        specs.append(
            TaskSpec(
                id=tid,
                type=draw(st.sampled_from(["execute", "execute", "review", "docs"])),
                title=tid,
                description=tid,
                scope=TaskScope(write_area=draw(st.sampled_from(AREAS))),
                dependencies=deps,
                verification=VerificationPolicy(fallback_allowed=draw(st.booleans())),
                constraints=TaskConstraints(
                    retry_budget=draw(st.integers(0, 2)),
                    soft_timeout_ms=draw(st.sampled_from([3_000, 60_000])),
                    hard_timeout_ms=draw(st.sampled_from([6_000, 120_000])),
                ),
            )
        )
        script[tid] = [
            FakeStep(
                duration=draw(st.integers(1, 8)),
                ending=draw(st.sampled_from(ENDINGS)),
                polite=draw(st.booleans()),
            )
            for _ in range(draw(st.integers(1, 3)))
        ]
    cancels = draw(
        st.lists(
            st.tuples(st.integers(0, 20).map(float), st.sampled_from([s.id for s in specs])),
            max_size=2,
        )
    )
    run_cancel_at = draw(st.one_of(st.none(), st.integers(1, 30).map(float)))
    return Case(specs, script, cancels, run_cancel_at, draw(st.integers(1, 4)))


def run_case(case: Case) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        sdb = open_session_db(os.path.join(scratch, "a"))
        try:
            _run_case(case, sdb.ledger)
            assert sdb.replay_matches(os.path.join(scratch, "replay.db"))
        finally:
            sdb.db.close()


def _run_case(case: Case, ledger: SessionLedger) -> None:
    violations: list[str] = []
    holder: dict[str, Scheduler] = {}

    def on_start(request: SuperviseRequest) -> None:
        sched = holder["s"]
        spec = request.task_spec
        for dep in sched.graph.edges_of(spec.id):
            if dep.dependency_type == DependencyType.HARD and not sched.graph.hard_dep_satisfied(
                dep.depends_on_task_id
            ):
                violations.append(f"{spec.id} started before hard dep {dep.depends_on_task_id}")
        live = [r for r in runner.log.records if r.ended_at is None and r.task_id != spec.id]
        if len(live) + 1 > case.max_workers:
            violations.append(f"worker cap exceeded at {spec.id}")
        for other in live:
            o = sched.graph.tasks[other.task_id]
            if write_areas_overlap(o.write_area, sched.graph.tasks[spec.id].write_area):
                violations.append(f"{spec.id} overlaps running {other.task_id}")

    runner = FakeTaskRunner(case.script, on_start=on_start, heartbeat_interval=2.0)

    async def main() -> None:
        sched = Scheduler(
            ledger,
            runner,
            project_root="/nonexistent",
            options=SchedulerOptions(max_workers=case.max_workers),
        )
        holder["s"] = sched
        await sched.create_tasks(case.specs)
        async with trio.open_nursery() as nursery:

            async def cancels() -> None:
                start = trio.current_time()
                for at, tid in sorted(case.cancels):
                    await trio.sleep_until(start + at)
                    await sched.cancel_task(tid, "test cancel")

            async def run_cancel() -> None:
                assert case.run_cancel_at is not None
                await trio.sleep(case.run_cancel_at)
                sched.cancel("test run cancel")

            nursery.start_soon(cancels)
            if case.run_cancel_at is not None:
                nursery.start_soon(run_cancel)
            result = await sched.run_until_idle()
            nursery.cancel_scope.cancel()
        holder["result"] = result  # type: ignore[assignment]

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    sched = holder["s"]
    assert violations == []
    folded = fold_history(ledger.history())
    cancelled_run = sched.cancel_reason is not None
    for tid, node in sched.graph.tasks.items():
        stored = folded.tasks[tid]
        if cancelled_run:
            assert stored.status in (
                TaskStatus.PENDING,
                TaskStatus.INTERRUPTED,
                TaskStatus.COMPLETED,
                TaskStatus.FAILED,
                TaskStatus.BLOCKED,
                TaskStatus.CANCELLED,
            )
        else:
            assert node.final, f"{tid} not terminal: {node.status}"
            assert stored.status in (
                TaskStatus.COMPLETED,
                TaskStatus.FAILED,
                TaskStatus.BLOCKED,
                TaskStatus.CANCELLED,
            ), (tid, stored.status)
            assert stored.status == node.status
    if cancelled_run:
        # resume: a new Scheduler over the same log finishes the run; completed tasks never rerun
        completed_before = {
            t for t, st_ in folded.tasks.items() if st_.status == TaskStatus.COMPLETED
        }
        runner2 = FakeTaskRunner(case.script, heartbeat_interval=2.0)

        async def resume() -> None:
            again = Scheduler(
                ledger,
                runner2,
                project_root="/nonexistent",
                options=SchedulerOptions(max_workers=case.max_workers),
            )
            await again.create_tasks(case.specs)  # re-submitting the batch creates nothing
            await again.run_until_idle()
            holder["s2"] = again

        trio.run(resume, clock=trio.testing.MockClock(autojump_threshold=0))
        assert not completed_before & {r.task_id for r in runner2.log.records}
        refolded = fold_history(ledger.history())
        assert len(refolded.tasks) >= len(case.specs)
        for tid, node in holder["s2"].graph.tasks.items():
            assert node.final, tid
            assert refolded.tasks[tid].status == node.status
    # every record of the fake ended, and no attempt was started twice under one index
    assert all(r.ended_at is not None for r in runner.log.records)
    seen = [(r.task_id, r.attempt_index) for r in runner.log.records]
    assert len(seen) == len(set(seen))
    # a completed task never runs again
    for tid, stored in folded.tasks.items():
        if stored.status == TaskStatus.COMPLETED:
            runs = [r for r in runner.log.records if r.task_id == tid]
            assert [r.kind for r in runs].count("completed") == 1


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_random_graphs_keep_the_scheduler_invariants(case: Case) -> None:
    run_case(case)
