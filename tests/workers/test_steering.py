"""Mid-run steering through the real worker process (issue 24 item 3): ``WorkerManager.steer``
sends ``agent.steer`` down each running worker's stdin; the worker adds the correction before its
next model turn, so its next ``provider.complete`` request carries it. The model calls go through
the real ProviderManager (cassette); a recording router in front of it keeps each request."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import trio

from air.contracts.ids import new_id
from air.contracts.provider import ProviderCompletionInput
from air.contracts.tool_runs import ToolExecutionContext, ToolResultEnvelope
from air.roles.steering import STEER_MESSAGE
from air.supervision.seams import SuperviseRequest
from air.supervision.task_outcome import TaskOutcome
from air.supervision.worker_manager import WorkerManager
from tests.workers.conftest import Env, result_text, text_turn, tool_turn

NOTE = "Use tabs, not spaces."


class _Recorded:
    """The provider router in front of the real ones (a ProviderManager per worker, each
    replaying its own cassette): keeps every request."""

    def __init__(self, inner: list[Any]) -> None:
        self.inner = inner
        self.by_agent: dict[str, Any] = {}
        self.requests: list[ProviderCompletionInput] = []

    def complete(self, request: ProviderCompletionInput) -> AsyncIterator[Any]:
        self.requests.append(request)
        agent = str(request.agent_id)
        if agent not in self.by_agent:
            self.by_agent[agent] = self.inner[len(self.by_agent)]
        result: AsyncIterator[Any] = self.by_agent[agent].complete(request)
        return result

    def of(self, agent_id: str) -> list[str]:
        """Each request of ``agent_id`` as the text of its last message."""
        out = []
        for r in self.requests:
            if r.agent_id == agent_id:
                last = r.messages[-1].model_dump(mode="json")["content"]
                out.append(last if isinstance(last, str) else json_text(last))
        return out


def json_text(blocks: list[dict[str, Any]]) -> str:
    return "\n".join(str(b.get("text") or b.get("content") or "") for b in blocks)


def _manager(
    env: Env, release: trio.Event, serving: set[str], both: trio.Event
) -> tuple[WorkerManager, _Recorded]:
    done = text_turn(result_text("completed", "done", {"changes_made": False}))
    manager, other = (env.manager([tool_turn("slow.wait", {}), done]) for _ in range(2))

    async def router(
        name: str, input: dict[str, object], ctx: ToolExecutionContext
    ) -> ToolResultEnvelope:
        serving.add(str(ctx.agent_id))
        if len(serving) == 2:
            both.set()
        await release.wait()
        return ToolResultEnvelope(
            tool_run_id=new_id("tr"), tool_name=name, status="ok", output="ok"
        )

    recorded = _Recorded([manager.provider, other.provider])
    manager.tools, manager.tool_streams, manager.provider = router, None, recorded
    return manager, recorded


async def _two_in_a_tool(
    env: Env, session: str | None = None
) -> tuple[WorkerManager, _Recorded, list[SuperviseRequest], trio.Event, trio.Event]:
    """Two requests; ``both`` is set once each worker waits in its tool call."""
    release, both = trio.Event(), trio.Event()
    manager, recorded = _manager(env, release, set(), both)
    requests = [env.request(), env.request()]
    if session is not None:
        requests[1] = requests[1].model_copy(update={"session_id": session})
    return manager, recorded, requests, release, both


async def test_a_correction_reaches_both_running_workers_before_their_next_turn(
    env: Env,
) -> None:
    manager, recorded, requests, release, both = await _two_in_a_tool(env)
    outcomes: list[TaskOutcome] = []
    async with trio.open_nursery() as nursery:
        for request in requests:
            nursery.start_soon(_supervise, manager, request, outcomes)
        with trio.fail_after(30):
            await both.wait()
        reached = await manager.steer("ses_test", "req_1", NOTE)
        release.set()
    assert sorted(reached) == sorted((r.task_spec.id, r.agent_id) for r in requests)
    expected = STEER_MESSAGE.format(text=NOTE)
    for request in requests:
        first, second = recorded.of(request.agent_id)
        assert NOTE not in first
        assert second.endswith(expected)
    assert all(o.result is not None and o.result.status.value == "completed" for o in outcomes)


async def test_a_correction_reaches_no_worker_of_another_session(env: Env) -> None:
    manager, recorded, requests, release, both = await _two_in_a_tool(env, "ses_other")
    outcomes: list[TaskOutcome] = []
    async with trio.open_nursery() as nursery:
        for request in requests:
            nursery.start_soon(_supervise, manager, request, outcomes)
        with trio.fail_after(30):
            await both.wait()
        reached = await manager.steer("ses_test", "req_1", NOTE)
        release.set()
    mine, other = requests
    assert reached == [(mine.task_spec.id, mine.agent_id)]
    assert NOTE in recorded.of(mine.agent_id)[1]
    assert all(NOTE not in text for text in recorded.of(other.agent_id))


async def test_a_correction_to_a_session_with_no_running_worker_reaches_none(env: Env) -> None:
    manager, _, _, _, _ = await _two_in_a_tool(env)
    assert await manager.steer("ses_test", "req_1", NOTE) == []


async def _supervise(
    manager: WorkerManager, request: SuperviseRequest, out: list[TaskOutcome]
) -> None:
    out.append(await manager.supervise(request))
