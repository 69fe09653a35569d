"""The soft timeout asks the worker to wrap up (partial, answer kept); extend_timeout defers it."""

from __future__ import annotations

import trio

from air.contracts.ids import new_id
from air.contracts.task import TaskType
from air.contracts.tool_runs import ToolExecutionContext, ToolResultEnvelope
from air.contracts.worker_result import WorkerStatus
from air.supervision.worker_manager import WorkerManager
from tests.workers.conftest import Env, result_text, text_turn, tool_turn


def _slow_manager(env: Env, release: trio.Event) -> WorkerManager:
    turns = [
        tool_turn("slow.wait", {}),
        text_turn(result_text("completed", "reviewed", {"verdict": "approved"})),
    ]
    manager = env.manager(turns)

    async def router(
        name: str, input: dict[str, object], ctx: ToolExecutionContext
    ) -> ToolResultEnvelope:
        await release.wait()
        return ToolResultEnvelope(
            tool_run_id=new_id("tr"), tool_name=name, status="ok", output="ok"
        )

    manager.tools, manager.tool_streams = router, None
    return manager


async def test_soft_timeout_wraps_up_to_partial(env: Env) -> None:
    release = trio.Event()
    manager = _slow_manager(env, release)
    request = env.request(type=TaskType.REVIEW, soft_timeout_ms=100)
    box = []
    async with trio.open_nursery() as nursery:

        async def run() -> None:
            box.append(await manager.supervise(request))

        nursery.start_soon(run)
        # the soft deadline runs from the handshake: wait for it, not for a start under load
        for _ in range(400):
            if env.events.of_type("agent.started", request.agent_id):
                break
            await trio.sleep(0.05)
        await trio.sleep(1.0)
        release.set()
    result = box[0].result
    assert result is not None
    assert result.status == WorkerStatus.PARTIAL
    assert result.stop_reason == "soft_timeout"
    assert result.result == {"verdict": "approved", "findings": []}
    # the wrap-up's checkpoint is durable and knows the turn's usage (IMPL-CKPT-1)
    [checkpoint] = env.events.of_type("agent.checkpointed", request.agent_id)
    assert checkpoint["reason"] == "soft_timeout"
    assert checkpoint["usage"]["tokens"] == 15


async def test_extend_timeout_defers_the_wrap_up(env: Env) -> None:
    release = trio.Event()
    manager = _slow_manager(env, release)
    request = env.request(type=TaskType.REVIEW, soft_timeout_ms=800)
    box = []
    async with trio.open_nursery() as nursery:

        async def run() -> None:
            box.append(await manager.supervise(request))

        nursery.start_soon(run)
        for _ in range(400):
            if env.events.of_type("agent.started", request.agent_id):
                break
            await trio.sleep(0.05)
        await manager.extend_timeout(request.agent_id, 600_000, "user granted more time")
        await trio.sleep(1.2)
        release.set()
    result = box[0].result
    assert result is not None
    assert result.status == WorkerStatus.COMPLETED
    assert result.stop_reason is None


async def test_pause_holds_the_loop_and_resume_continues(env: Env) -> None:
    release = trio.Event()
    manager = _slow_manager(env, release)
    manager.config.heartbeat_s = 0.05
    request = env.request(type=TaskType.REVIEW)
    box = []
    async with trio.open_nursery() as nursery:

        async def run() -> None:
            box.append(await manager.supervise(request))

        nursery.start_soon(run)
        for _ in range(400):
            if env.events.of_type("agent.started", request.agent_id):
                break
            await trio.sleep(0.05)
        await manager.pause(request.agent_id, "user paused")
        release.set()
        states: list[str] = []
        for _ in range(200):  # a loaded machine may take a while to deliver the heartbeat
            await trio.sleep(0.05)
            states = [
                e.payload["state"] for d, e in env.events.events if e.type == "agent.heartbeat"
            ]
            if "paused" in states:
                break
        await trio.sleep(0.3)
        assert box == []
        assert "paused" in states
        await manager.resume(request.agent_id)
    result = box[0].result
    assert result is not None
    assert result.status == WorkerStatus.COMPLETED
