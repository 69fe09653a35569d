"""The parts of a task's clock that stand still while the person is asked (IMPL-DEADLINE-1), on
Trio's virtual clock: the monitor's safety net does not cancel a task whose prompt is open past
its hard deadline (+ margin), and moves that deadline by the wait; the whole-task deadline moves
by the wait, so a retry or a queued task is judged by the moved one. The worker's own deadlines
are proven with a real runtime (tests/nursery/test_person_waits.py)."""

from __future__ import annotations

from types import SimpleNamespace

import trio
import trio.testing

from air.contracts.permission_records import PermissionPromptRequest, PermissionPromptResponse
from air.nursery import deadlines
from air.nursery.graph import TaskGraph
from air.nursery.person_waits import OffTheClock
from air.nursery.state import RunState
from air.supervision.monitor import AgentMonitor, WatchedAgent


class Person:
    async def ask(self, request: PermissionPromptRequest) -> PermissionPromptResponse:
        await trio.sleep(100)
        return PermissionPromptResponse.of("allow_once")


class Runner:
    """Records the holds a WorkerManager is asked for."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, float]] = []

    def hold_clock(self, agent_id: str) -> None:
        self.calls.append(("hold", agent_id, trio.current_time()))

    def release_clock(self, agent_id: str, waited_s: float) -> None:
        self.calls.append(("release", agent_id, waited_s))


def _request() -> PermissionPromptRequest:
    return PermissionPromptRequest.model_validate(
        {
            "prompt_id": "prm_1",
            "tool_name": "shell.run",
            "decision": {
                "action": "ask_user",
                "reason": "destructive",
                "risk_level": "medium",
                "layer": "5-risk",
            },
            "task_id": "t1",
            "agent_id": "a1",
        }
    )


async def test_a_prompt_holds_the_monitor_the_worker_and_moves_the_whole_deadline(
    autojump_clock: trio.testing.MockClock,
) -> None:
    overdue: list[str] = []

    async def on_overdue(agent: WatchedAgent) -> None:
        overdue.append(agent.agent_id)

    monitor = AgentMonitor(flush=lambda *_: None, margin=5.0, on_overdue=on_overdue)
    monitor.watch("a1", "t1", hard_timeout_s=10.0)
    st = RunState(graph=TaskGraph("s"))
    st.deadlines["t1"] = 10.0
    st.deadline_heap.append((10.0, "t1"))
    runner = Runner()
    prompt = OffTheClock(Person())
    prompt.scheduler = SimpleNamespace(  # type: ignore[assignment]
        io=SimpleNamespace(runner=runner, monitor=monitor), st=st
    )
    async with trio.open_nursery() as nursery:
        nursery.start_soon(prompt.ask, _request())
        await trio.sleep(50)  # the prompt is open, far past the deadline and its margin
        assert await monitor.enforce_timeouts() == []
    assert runner.calls == [("hold", "a1", 0.0), ("release", "a1", 100.0)]
    assert st.deadlines["t1"] == 110.0
    assert not deadlines.expired(st, SimpleNamespace(task_id="t1"))  # type: ignore[arg-type]
    await trio.sleep(114 - trio.current_time())  # 10 s of work + the 100 s wait, in margin
    assert await monitor.enforce_timeouts() == []
    await trio.sleep(2)
    assert await monitor.enforce_timeouts() == ["a1"]
    assert overdue == ["a1"]


async def test_a_moved_deadline_judges_a_queued_task_by_the_new_time(
    autojump_clock: trio.testing.MockClock,
) -> None:
    st = RunState(graph=TaskGraph("s"))
    st.deadlines["t1"] = 10.0
    st.deadline_heap.append((10.0, "t1"))
    deadlines.move(st, "t1", 30.0)
    assert st.deadlines["t1"] == 40.0
    assert deadlines.next_at(st) == 10.0  # the stale entry first: skipped when it is reached
    deadlines.move(st, "gone", 30.0)  # a task without a deadline keeps none
    assert "gone" not in st.deadlines
