"""AgentMonitor: heartbeat coalescing, lost-agent detection, the timeout net (virtual time),
and PID liveness with start-time identity against real processes."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

import trio

from air.supervision.monitor import (
    AgentLost,
    AgentMonitor,
    WatchedAgent,
    pid_start_time,
    process_alive,
)


class Flushes:
    def __init__(self) -> None:
        self.rows: list[tuple[str, float, Any]] = []

    def __call__(self, agent_id: str, task_id: str | None, hb: Mapping[str, Any]) -> None:
        self.rows.append((agent_id, trio.current_time(), hb.get("turn")))


async def test_heartbeats_coalesce_to_one_write_per_window(
    autojump_clock: trio.testing.MockClock,
) -> None:
    flushes = Flushes()
    monitor = AgentMonitor(flush=flushes, interval=5.0)
    monitor.watch("a1", "t1")
    for turn in range(20):  # one heartbeat a second, same state
        monitor.record_heartbeat("a1", {"state": "working", "turn": turn})
        await trio.sleep(1)
    # first one, then every 5 s
    assert [t for _, t, _ in flushes.rows] == [0.0, 5.0, 10.0, 15.0]
    # a meaningful state change flushes at once
    assert monitor.record_heartbeat("a1", {"state": "verifying", "turn": 20}) is True
    assert flushes.rows[-1] == ("a1", 20.0, 20)
    # forgetting flushes what is pending
    monitor.record_heartbeat("a1", {"state": "verifying", "turn": 21})
    monitor.forget("a1")
    assert flushes.rows[-1] == ("a1", 20.0, 21)


async def test_silent_agents_are_pinged_when_alive_and_lost_when_gone(
    autojump_clock: trio.testing.MockClock,
) -> None:
    alive = {"a1": True, "a2": False}
    pinged: list[str] = []

    async def on_silent(agent: WatchedAgent) -> None:
        pinged.append(agent.agent_id)

    monitor = AgentMonitor(
        flush=Flushes(), lost_after=30.0, on_silent=on_silent, alive=lambda a: alive[a.agent_id]
    )
    monitor.watch("a1", "t1")
    monitor.watch("a2", "t2")
    await trio.sleep(29)
    assert await monitor.detect_lost_agents() == []
    await trio.sleep(1)
    lost = await monitor.detect_lost_agents()
    assert lost == [AgentLost(agent_id="a2", task_id="t2", silent_for=30.0, reason=lost[0].reason)]
    assert pinged == ["a1"]
    # pinged once, not on every check; a heartbeat clears the flag
    await monitor.detect_lost_agents()
    assert pinged == ["a1"]
    monitor.record_heartbeat("a1", {"state": "working"})
    await trio.sleep(30)
    await monitor.detect_lost_agents()
    assert pinged == ["a1", "a1"]


async def test_overdue_agents_are_cancelled_once(autojump_clock: trio.testing.MockClock) -> None:
    overdue: list[tuple[str, float]] = []

    async def on_overdue(agent: WatchedAgent) -> None:
        overdue.append((agent.agent_id, trio.current_time()))

    monitor = AgentMonitor(flush=Flushes(), margin=5.0, on_overdue=on_overdue)
    monitor.watch("a1", "t1", hard_timeout_s=10.0)
    monitor.watch("a2", "t2", hard_timeout_s=100.0)
    async with trio.open_nursery() as nursery:

        async def on_lost(item: AgentLost) -> None:
            raise AssertionError(item)

        monitor.lost_after = 1000.0
        await nursery.start(monitor.run, on_lost)
        await trio.sleep(50)
        nursery.cancel_scope.cancel()
    assert overdue == [("a1", 15.0)]


def test_process_alive_checks_start_time_identity() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        start = pid_start_time(child.pid)
        assert start is not None
        assert process_alive(child.pid, start)
        assert not process_alive(child.pid, start + 1)  # a recycled PID is not our worker
    finally:
        child.kill()
        child.wait()
    assert not process_alive(child.pid, start)
    assert not process_alive(None)
    assert process_alive(os.getpid())
