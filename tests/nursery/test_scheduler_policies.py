"""Scheduler policies over a real session DB and virtual time: wave review, debug tasks,
allowed skips, cancel_task of one task leaving its siblings alone."""

from __future__ import annotations

import trio
import trio.testing

from air.contracts.task import (
    TaskConstraints,
    TaskDependencySpec,
    TaskScope,
    TaskSpec,
    TaskStatus,
    VerificationPolicy,
)
from air.nursery.ledger import fold_history
from air.nursery.scheduler import Scheduler, SchedulerOptions
from air.testing.fake_runner import FakeStep, FakeTaskRunner
from tests.nursery.conftest import SessionDB


def _spec(
    tid: str,
    *,
    deps: tuple[str, ...] = (),
    area: list[str] | None = None,
    budget: int = 1,
    fallback: bool = False,
) -> TaskSpec:
    return TaskSpec(
        id=tid,
        type="execute",
        title=tid,
        description=tid,
        scope=TaskScope(write_area=area),
        dependencies=[TaskDependencySpec(depends_on_task_id=d) for d in deps],
        constraints=TaskConstraints(retry_budget=budget),
        verification=VerificationPolicy(fallback_allowed=fallback),
    )


def _final(sdb: SessionDB) -> dict[str, str]:
    return {t: s.status.value for t, s in fold_history(sdb.ledger.history()).tasks.items()}


async def test_wave_review_creates_a_review_task_per_completed_change(
    session_db: SessionDB, autojump_clock: trio.testing.MockClock
) -> None:
    runner = FakeTaskRunner()
    sched = Scheduler(
        session_db.ledger,
        runner,
        project_root="/x",
        options=SchedulerOptions(max_workers=4, review="wave"),
    )
    await sched.create_tasks([_spec("a", area=["a"]), _spec("b", area=["b"])])
    result = await sched.run_until_idle()
    assert result.status == "completed"
    assert _final(session_db) == dict.fromkeys(["a", "b", "a.review", "b.review"], "completed")
    starts = {r.task_id: r.started_at for r in runner.log.records}
    assert starts["a.review"] > starts["a"]
    review = fold_history(session_db.ledger.history()).tasks["a.review"].spec
    assert (review.type.value, review.output_contract) == ("review", "ReviewerResult")


async def test_failed_verification_gets_a_debug_task_before_the_retry(
    session_db: SessionDB, autojump_clock: trio.testing.MockClock
) -> None:
    runner = FakeTaskRunner({"a": [FakeStep(1, "verification_failed"), FakeStep(1)]})
    sched = Scheduler(session_db.ledger, runner, project_root="/x", options=SchedulerOptions(2))
    await sched.create_tasks([_spec("a", area=["a"])])
    assert (await sched.run_until_idle()).status == "completed"
    order = [(r.task_id, r.attempt_index) for r in runner.log.records]
    assert order == [("a", 1), ("a.debug1", 1), ("a", 2)]
    folded = fold_history(session_db.ledger.history())
    assert folded.tasks["a.debug1"].parent_task_id == "a"
    assert folded.tasks["a.debug1"].spec.type.value == "debug"


async def test_skip_allowed_lets_dependents_run_and_blocks_otherwise(
    session_db: SessionDB, autojump_clock: trio.testing.MockClock
) -> None:
    runner = FakeTaskRunner({"s": [FakeStep(1, "failed")], "h": [FakeStep(1, "failed")]})
    sched = Scheduler(session_db.ledger, runner, project_root="/x", options=SchedulerOptions(4))
    await sched.create_tasks(
        [
            _spec("s", area=["s"], budget=0, fallback=True),
            _spec("after-s", deps=("s",), area=["x"]),
            _spec("h", area=["h"], budget=0),
            _spec("after-h", deps=("h",), area=["y"]),
        ]
    )
    result = await sched.run_until_idle()
    assert _final(session_db) == {
        "s": "failed",
        "after-s": "completed",
        "h": "failed",
        "after-h": "blocked",
    }
    assert result.status == "blocked"
    assert result.blocked_task_ids == ["after-h"]


async def test_cancel_task_cancels_only_that_task(
    session_db: SessionDB, autojump_clock: trio.testing.MockClock
) -> None:
    runner = FakeTaskRunner(default=FakeStep(duration=10))
    sched = Scheduler(session_db.ledger, runner, project_root="/x", options=SchedulerOptions(4))
    await sched.create_tasks(
        [_spec("a", area=["a"]), _spec("b", area=["b"]), _spec("c", deps=("b",), area=["c"])]
    )
    async with trio.open_nursery() as nursery:
        nursery.start_soon(sched.run_until_idle)
        await trio.sleep(3)
        await sched.cancel_task("b", "not needed")
    assert _final(session_db) == {"a": "completed", "b": "cancelled", "c": "blocked"}
    ends = {r.task_id: r.ended_at for r in runner.log.records}
    assert ends == {"a": 10.0, "b": 3.0}  # a ran to its end, unaffected
    assert sched.graph.tasks["b"].status == TaskStatus.CANCELLED
