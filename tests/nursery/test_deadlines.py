"""Whole-task deadlines in the Scheduler (IMPL-DEADLINE-1; runner-contract invariants 14, 15,
31): one deadline per task, made before planning; queueing for a wave, every attempt and every
retry count against it; the failure names the phase it ran out in. The real Scheduler and
session database over the FakeTaskRunner, in virtual time (exact virtual seconds)."""

from __future__ import annotations

from typing import Any

import trio
import trio.testing

from air.contracts.task import TaskConstraints, TaskDependencySpec, TaskScope, TaskSpec
from air.contracts.task_results import SchedulerRunResult
from air.nursery.ledger import fold_history
from air.nursery.scheduler import Scheduler, SchedulerOptions
from air.testing.fake_runner import FakeStep, FakeTaskRunner
from tests.nursery.conftest import SessionDB


def _spec(tid: str, timeout_s: float, deps: tuple[str, ...] = (), retries: int = 1) -> TaskSpec:
    ms = int(timeout_s * 1000)
    return TaskSpec(
        id=tid,
        type="execute",
        title=tid,
        description=tid,
        scope=TaskScope(write_area=[f"{tid}/**"]),
        constraints=TaskConstraints(soft_timeout_ms=ms, hard_timeout_ms=ms, retry_budget=retries),
        dependencies=[TaskDependencySpec(depends_on_task_id=d) for d in deps],
    )


def _run(
    sdb: SessionDB,
    specs: list[TaskSpec],
    runner: FakeTaskRunner,
    workers: int = 2,
    before: Any = None,
) -> tuple[SchedulerRunResult, dict[str, float]]:
    sched = Scheduler(
        sdb.ledger, runner, project_root="/x", options=SchedulerOptions(max_workers=workers)
    )
    ends: dict[str, float] = {}

    async def main() -> SchedulerRunResult:
        await sched.create_tasks(specs)
        if before is not None:
            before(sched)
        result = await sched.run_until_idle()
        return result

    def watch(event: Any) -> None:
        if event.type in ("task.failed", "task.completed"):
            ends[f"{event.payload['task_id']}#{len(ends)}"] = trio.current_time()

    clock = trio.testing.MockClock(autojump_threshold=0)
    original = sdb.ledger.record

    async def record(type: str, payload: dict[str, Any]) -> Any:
        event = await original(type, payload)
        watch(event)
        return event

    sdb.ledger.record = record  # type: ignore[method-assign]
    return trio.run(main, clock=clock), ends


def _events(sdb: SessionDB, task_id: str) -> list[tuple[str, Any]]:
    return [
        (e.type, e.payload)
        for e in sdb.ledger.history()
        if e.type.startswith("task.")
        and e.type != "task.created"
        and e.payload.get("task_id") == task_id
    ]


def test_a_stalled_attempt_is_retried_and_the_deadline_ends_the_retry(
    session_db: SessionDB,
) -> None:
    """10 s for the whole task: the first attempt stalls at 4 s and is retried; the retry
    hangs and is ended at 10 s (not 4 + 10 s), phase running, with retries left unused."""
    runner = FakeTaskRunner(
        {"t": [FakeStep(duration=4, ending="stalled"), FakeStep(ending="hang")]}
    )
    result, ends = _run(session_db, [_spec("t", 10, retries=3)], runner)
    assert result.status == "blocked"
    kinds = [t for t, _ in _events(session_db, "t")]
    assert kinds == ["task.started", "task.failed", "task.started", "task.failed"]
    first, last = (p for t, p in _events(session_db, "t") if t == "task.failed")
    assert first["error"]["kind"] == "worker_stalled"
    assert last["error"]["kind"] == "timeout"
    assert last["error"]["metadata"]["timeout_phase"] == "running"
    assert list(ends.values()) == [4.0, 10.0]


def test_a_task_waiting_for_a_wave_ends_queued_at_its_deadline(session_db: SessionDB) -> None:
    """``b`` waits for ``a`` (a hard dependency): its 5 s pass while it is queued."""
    runner = FakeTaskRunner({"a": [FakeStep(duration=20)]})
    specs = [_spec("a", 60), _spec("b", 5, deps=("a",))]
    result, ends = _run(session_db, specs, runner)
    kinds = [t for t, _ in _events(session_db, "b")]
    assert kinds == ["task.failed"]  # never started
    failed = _events(session_db, "b")[-1][1]
    assert failed["error"]["metadata"]["timeout_phase"] == "queued"
    assert ends == {"b#0": 5.0, "a#1": 20.0}
    assert [r.task_id for r in runner.log.records] == ["a"]
    assert result.status == "blocked"


def test_a_task_dispatched_after_its_deadline_never_starts(session_db: SessionDB) -> None:
    runner = FakeTaskRunner()

    def past_deadline(sched: Scheduler) -> None:
        sched.st.deadlines["t"] = -1.0  # made, and passed, before this run planned anything

    _run(session_db, [_spec("t", 60)], runner, before=past_deadline)
    kinds = [t for t, _ in _events(session_db, "t")]
    assert kinds == ["task.failed"]
    assert _events(session_db, "t")[-1][1]["error"]["metadata"]["timeout_phase"] == "queued"
    assert runner.log.records == []


def test_a_retry_whose_deadline_passed_is_not_started(session_db: SessionDB) -> None:
    scheds: list[Scheduler] = []

    def shorten(request: Any) -> None:
        scheds[0].st.deadlines["t"] = 3.0  # the retry (after the stall at 4 s) is too late

    runner = FakeTaskRunner(
        {"t": [FakeStep(duration=4, ending="stalled"), FakeStep()]}, on_start=shorten
    )
    result, _ = _run(session_db, [_spec("t", 60, retries=3)], runner, before=scheds.append)
    kinds = [t for t, _ in _events(session_db, "t")]
    assert kinds == ["task.started", "task.failed"]
    assert len(runner.log.records) == 1
    assert result.status == "blocked"


def test_a_passed_deadline_is_never_retried_but_an_attempt_timeout_is() -> None:
    from air.contracts.error import ErrorKind, make_air_error
    from air.contracts.task import RetryAction
    from air.nursery.graph import TaskNode
    from air.nursery.retry import AttemptSummary, RetryPlanner
    from air.supervision.deadline import TIMEOUT_PHASES, deadline_error

    node = TaskNode(spec=_spec("t", 10, retries=5))
    for phase in TIMEOUT_PHASES:
        error = deadline_error(phase, 10)
        decision = RetryPlanner().decide(node, [AttemptSummary(1, None, "timeout")], error)
        assert decision.action == RetryAction.BLOCK, phase
        assert phase in decision.reason
    own = make_air_error(kind=ErrorKind.TIMEOUT, message="the task reached its hard timeout")
    decision = RetryPlanner().decide(node, [AttemptSummary(1, None, "timeout")], own)
    assert decision.action == RetryAction.RETRY_SERIAL


def test_a_task_resumed_in_the_same_process_gets_a_new_deadline(session_db: SessionDB) -> None:
    """Cancelled at 2 s (interrupted), continued at 30 s: past its first deadline of 10 s, it
    runs again with a new one, as it would in a new process (``air resume``)."""
    runner = FakeTaskRunner({"t": [FakeStep(duration=5), FakeStep(duration=5)]})
    sched = Scheduler(
        session_db.ledger, runner, project_root="/x", options=SchedulerOptions(max_workers=1)
    )

    async def main() -> list[str]:
        await sched.create_tasks([_spec("t", 10)])
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sched.run_until_idle)
            await trio.sleep(2)
            sched.cancel("the person pressed Ctrl-C")
        await trio.sleep(28)
        sched.st.cancel_reason = None  # the console's "continue": a new run of the same graph
        result = await sched.run_until_idle()
        return [result.status, *(t for t, _ in _events(session_db, "t"))]

    got = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert got == [
        "completed",
        "task.started",
        "task.interrupted",
        "task.started",
        "task.completed",
    ]


def test_a_task_that_ended_for_good_keeps_no_deadline(session_db: SessionDB) -> None:
    """What a run holds of deadlines is bounded by the tasks that may still run, not by the
    session (IMPL-RSS-1): after 300 tasks ended, completed or failed at their deadline, none
    is armed and the heap holds at most its slack of skipped entries."""
    late = {f"t{i}" for i in range(0, 300, 7)}  # these run out of time, queued or running
    specs = [_spec(f"t{i}", 10 if f"t{i}" in late else 1000) for i in range(300)]
    runner = FakeTaskRunner(
        {t: [FakeStep(duration=20)] * 2 for t in late}, default=FakeStep(duration=1)
    )
    sched = Scheduler(
        session_db.ledger, runner, project_root="/x", options=SchedulerOptions(max_workers=4)
    )

    async def main() -> SchedulerRunResult:
        await sched.create_tasks(specs)
        return await sched.run_until_idle()

    result = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    assert set(result.failed_task_ids) == late
    assert len(result.completed_task_ids) == 300 - len(late)
    assert sched.st.deadlines == {}
    assert len(sched.st.deadline_heap) <= 64


def test_an_interrupted_task_whose_deadline_passes_before_it_resumes_stays_interrupted(
    session_db: SessionDB,
) -> None:
    """Cancelled mid-run (both tasks interrupted), then resumed by a new Scheduler with one
    worker: ``b`` waits behind ``a`` past its new 8 s deadline and never runs again. Its end is
    the recorded one (interrupted → failed is no transition), and the graph says the same as
    the log; the run said ``failed`` while the log said ``interrupted`` (found by the scheduler
    property test)."""
    first = FakeTaskRunner({"a": [FakeStep(duration=20)], "b": [FakeStep(duration=3)]})
    specs = [_spec("a", 100), _spec("b", 8)]

    async def interrupted() -> None:
        sched = Scheduler(
            session_db.ledger, first, project_root="/x", options=SchedulerOptions(max_workers=2)
        )
        await sched.create_tasks(specs)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sched.run_until_idle)
            await trio.sleep(1)
            sched.cancel("the person pressed Ctrl-C")

    trio.run(interrupted, clock=trio.testing.MockClock(autojump_threshold=0))
    assert [t for t, _ in _events(session_db, "b")] == ["task.started", "task.interrupted"]
    again = FakeTaskRunner({"a": [FakeStep(duration=20)], "b": [FakeStep(duration=3)]})
    sched = Scheduler(
        session_db.ledger, again, project_root="/x", options=SchedulerOptions(max_workers=1)
    )

    async def resumed() -> None:
        await sched.create_tasks(specs)
        await sched.run_until_idle()

    trio.run(resumed, clock=trio.testing.MockClock(autojump_threshold=0))
    assert [r.task_id for r in again.log.records] == ["a"]
    assert [t for t, _ in _events(session_db, "b")] == ["task.started", "task.interrupted"]
    node = sched.graph.tasks["b"]
    assert node.final
    assert node.status == fold_history(session_db.ledger.history()).tasks["b"].status
    assert node.status.value == "interrupted"
