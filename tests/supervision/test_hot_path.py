"""The parent's hot path (issue #11 item 6): no Trio task per tool call, one validation pass
per worker message part. Counted, not timed: a Trio instrument counts spawned tasks, wrapped
validators count passes."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from air.contracts.event import RuntimeEvent
from air.events.payloads import PAYLOADS
from air.testing.launcher import scripted
from tests.supervision.conftest import Rig, bounded_nursery

DONE = {"status": "completed", "summary": "ok", "result": {"verdict": "approved", "findings": []}}


class Spawns(trio.abc.Instrument):
    def __init__(self) -> None:
        self.count = 0

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        self.count += 1


async def _spawned_for(rig: Rig, calls: int) -> int:
    steps: list[dict[str, Any]] = [{"call": "echo", "input": {"i": i}} for i in range(calls)]
    worker = scripted([*steps, {"result": DONE}])
    spawns = Spawns()
    async with bounded_nursery() as nursery:
        manager, _ = rig.manager(nursery, worker)
        request = rig.request()
        trio.lowlevel.add_instrument(spawns)
        try:
            outcome = await manager.supervise(request)
        finally:
            trio.lowlevel.remove_instrument(spawns)
    assert outcome.kind == "result"
    return spawns.count


async def test_tool_calls_spawn_no_task_each(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    """A run of 200 calls spawns exactly as many tasks as a run of 2 (the run's own)."""
    few = await _spawned_for(rig, 2)
    many = await _spawned_for(rig, 200)
    assert many == few


async def test_a_worker_event_is_validated_once_in_the_parent(
    rig: Rig, autojump_clock: trio.testing.MockClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The payload of a worker event is validated once against its model, and the
    RuntimeEvent around it is assembled without another validation pass."""
    model = PAYLOADS[("agent.heartbeat", 1)]
    passes: list[str] = []
    real_validate = model.model_validate
    real_init = RuntimeEvent.__init__

    def validate(obj: Any, *args: Any, **kwargs: Any) -> Any:
        passes.append("payload")
        return real_validate(obj, *args, **kwargs)

    def init(self: RuntimeEvent, **data: Any) -> None:
        passes.append(f"event {data.get('type')}")
        real_init(self, **data)

    monkeypatch.setattr(model, "model_validate", validate)
    monkeypatch.setattr(RuntimeEvent, "__init__", init)
    heartbeat = {"state": "running", "turn": 1}
    worker = scripted([{"event": "agent.heartbeat", "payload": heartbeat}, {"hang": True}])
    async with bounded_nursery() as nursery:
        manager, _ = rig.manager(nursery, worker, stall_after_s=0)
        with trio.move_on_after(5):
            await manager.supervise(rig.request())
    assert [p for p in passes if "agent.heartbeat" in p or p == "payload"] == ["payload"]
    assert [e.type for _, e in rig.events.events].count("agent.heartbeat") == 1
