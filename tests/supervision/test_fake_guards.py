"""Parent-side guards on worker events, driven through FakeLauncher workers (virtual time)."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from air.testing.launcher import scripted
from tests.supervision.conftest import Rig, bounded_nursery


@pytest.mark.parametrize(
    ("version", "payload"),
    [("1", {"state": "running"}), ("abc", {}), (True, {}), (1, ["not", "an", "object"])],
)
async def test_a_worker_event_of_the_wrong_shape_is_a_protocol_error(
    rig: Rig, autojump_clock: trio.testing.MockClock, version: Any, payload: Any
) -> None:
    worker = scripted([{"event": "agent.heartbeat", "version": version, "payload": payload}])
    async with bounded_nursery() as nursery:
        manager, _ = rig.manager(nursery, worker)
        outcome = await manager.supervise(rig.request())
    assert outcome.kind == "protocol_error"
    assert outcome.error is not None
    assert "string type, an int version" in outcome.error.message
    assert [e.type for _, e in rig.events.events if e.type == "agent.heartbeat"] == []


async def test_a_worker_event_is_recorded_as_the_parent_names_it(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    """The worker claims another agent and task in its payload; the parent overwrites both."""
    heartbeat = {"agent_id": "agt_other", "task_id": "task_other", "state": "running"}
    worker = scripted(
        [
            {"event": "agent.heartbeat", "payload": heartbeat},
            {
                "result": {
                    "status": "completed",
                    "summary": "ok",
                    "result": {"verdict": "approved", "findings": []},
                }
            },
        ]
    )
    async with bounded_nursery() as nursery:
        manager, _ = rig.manager(nursery, worker)
        request = rig.request()
        outcome = await manager.supervise(request)
    assert outcome.kind == "result"
    beats = [e for durable, e in rig.events.events if e.type == "agent.heartbeat"]
    assert len(beats) == 1
    assert beats[0].payload["agent_id"] == request.agent_id
    assert beats[0].payload["task_id"] == request.task_spec.id
    assert beats[0].source.kind == "agent"
    assert beats[0].source.id == request.agent_id
