"""AgentMonitor: heartbeat coalescing, lost-agent detection and the timeout safety net (SDD §7.6,
baselines §A.5).

Owns: ``AgentMonitor``, ``WatchedAgent``, ``AgentLost`` and ``process_alive`` (PID liveness with
start-time identity, so a recycled PID is never mistaken for the worker; over the one
``ProcessIdentity`` of ``air.contracts.platform``, read by ``air.ipc.procs``). Heartbeats are
ephemeral: the monitor keeps the latest per agent and flushes it to the heartbeat columns at
most every ``interval`` seconds, or at once on a meaningful state change. An agent silent for
``lost_after`` seconds is checked: alive but silent → ``on_silent`` (status ping / soft
cancel); gone without a result → reported lost (the Scheduler records ``agent.lost``).
``enforce_timeouts`` cancels a task still running ``margin`` seconds after its hard deadline
(the runner owns the real timeout; this is the net under it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import trio

from air.contracts.platform import ProcessIdentity
from air.ipc.procs import is_same_process, read_identity

__all__ = ["AgentLost", "AgentMonitor", "WatchedAgent", "pid_start_time", "process_alive"]


def pid_start_time(pid: int) -> int | None:
    """The process start time in clock ticks since boot (``/proc/PID/stat`` field 22)."""
    return read_identity(pid).start_ticks


def process_alive(pid: int | None, start_time: int | None = None) -> bool:
    """Whether ``pid`` is a live (non-zombie) process with the recorded start time."""
    if pid is None or pid <= 0:
        return False
    recorded = None if start_time is None else str(start_time)
    return is_same_process(ProcessIdentity(pid=pid, start_time=recorded))


@dataclass(eq=False)
class WatchedAgent:
    """One live agent the monitor watches: its deadlines, identity and last heartbeat."""

    agent_id: str
    task_id: str | None
    started_at: float
    hard_deadline: float | None = None
    pid: int | None = None
    pid_start_time: int | None = None
    last_seen: float = 0.0
    last_state: str | None = None
    last_flush: float | None = None
    pending: Mapping[str, Any] | None = None
    flagged: bool = False
    held: bool = False
    """The person is being asked about one of its calls: not overdue meanwhile."""


class AgentLost(NamedTuple):
    agent_id: str
    task_id: str | None
    silent_for: float
    reason: str


Flush = Callable[[str, str | None, Mapping[str, Any]], None]
Signal = Callable[[WatchedAgent], Awaitable[None]]


class AgentMonitor:
    """Watches the agents of running tasks.

    Args:
        flush: ``flush(agent_id, task_id, heartbeat)`` writes the coalesced heartbeat columns.
        interval: coalescing window in seconds (default 5).
        lost_after: silence after which an agent is checked (default 30).
        margin: seconds past a hard deadline before ``enforce_timeouts`` cancels (default 5).
        on_silent: awaited for an agent that is alive but silent (status ping / soft cancel).
        on_overdue: awaited for an agent past its hard deadline + margin (cancel its task).
        alive: liveness probe (default ``process_alive`` on the agent's pid / start time;
            an agent without a pid is in-process and counts as alive).
    """

    def __init__(
        self,
        *,
        flush: Flush,
        interval: float = 5.0,
        lost_after: float = 30.0,
        margin: float = 5.0,
        on_silent: Signal | None = None,
        on_overdue: Signal | None = None,
        alive: Callable[[WatchedAgent], bool] | None = None,
    ) -> None:
        self.flush = flush
        self.interval = interval
        self.lost_after = lost_after
        self.margin = margin
        self.on_silent = on_silent
        self.on_overdue = on_overdue
        self.alive = alive or (
            lambda a: True if a.pid is None else process_alive(a.pid, a.pid_start_time)
        )
        self.agents: dict[str, WatchedAgent] = {}
        self.flushes = 0

    def watch(
        self,
        agent_id: str,
        task_id: str | None,
        *,
        hard_timeout_s: float | None = None,
        pid: int | None = None,
        pid_start_time: int | None = None,
    ) -> WatchedAgent:
        now = trio.current_time()
        agent = WatchedAgent(
            agent_id=agent_id,
            task_id=task_id,
            started_at=now,
            hard_deadline=now + hard_timeout_s if hard_timeout_s is not None else None,
            pid=pid,
            pid_start_time=pid_start_time,
            last_seen=now,
        )
        self.agents[agent_id] = agent
        return agent

    def hold(self, agent_id: str, held: bool, waited_s: float = 0.0) -> None:
        """The person is being asked about one of ``agent_id``'s calls (``held``), or answered
        after ``waited_s``: its hard deadline moves by the wait."""
        agent = self.agents.get(agent_id)
        if agent is None:
            return
        agent.held = held
        if agent.hard_deadline is not None:
            agent.hard_deadline += waited_s

    def forget(self, agent_id: str) -> None:
        """Stop watching; a pending coalesced heartbeat is flushed first."""
        agent = self.agents.pop(agent_id, None)
        if agent is not None and agent.pending is not None:
            self._flush(agent, trio.current_time())

    def _flush(self, agent: WatchedAgent, now: float) -> None:
        assert agent.pending is not None
        self.flush(agent.agent_id, agent.task_id, agent.pending)
        agent.pending = None
        agent.last_flush = now
        self.flushes += 1

    def record_heartbeat(self, agent_id: str, heartbeat: Mapping[str, Any]) -> bool:
        """Note a heartbeat; flush it when the window passed or the state changed.

        Returns:
            True when the heartbeat columns were written now.
        """
        agent = self.agents.get(agent_id)
        if agent is None:
            return False
        now = trio.current_time()
        agent.last_seen = now
        agent.flagged = False
        state = heartbeat.get("state")
        changed = state is not None and state != agent.last_state
        agent.last_state = str(state) if state is not None else agent.last_state
        agent.pending = heartbeat
        if changed or agent.last_flush is None or now - agent.last_flush >= self.interval:
            self._flush(agent, now)
            return True
        return False

    async def detect_lost_agents(self) -> list[AgentLost]:
        """Check agents silent for ``lost_after``: alive → ``on_silent``; gone → lost."""
        now = trio.current_time()
        lost: list[AgentLost] = []
        for agent in list(self.agents.values()):
            silent = now - agent.last_seen
            if silent < self.lost_after:
                continue
            if self.alive(agent):
                if not agent.flagged:
                    agent.flagged = True
                    if self.on_silent is not None:
                        await self.on_silent(agent)
                continue
            lost.append(
                AgentLost(
                    agent_id=agent.agent_id,
                    task_id=agent.task_id,
                    silent_for=silent,
                    reason="process gone without a result",
                )
            )
            self.agents.pop(agent.agent_id, None)
        return lost

    async def enforce_timeouts(self, on_overdue: Signal | None = None) -> list[str]:
        """Call ``on_overdue`` (default: the constructor's) for agents past their hard deadline
        + margin; returns their ids."""
        on_overdue = on_overdue or self.on_overdue
        now = trio.current_time()
        overdue = [
            a
            for a in self.agents.values()
            if a.hard_deadline is not None and not a.held and now >= a.hard_deadline + self.margin
        ]
        for agent in overdue:
            agent.hard_deadline = None  # once
            if on_overdue is not None:
                await on_overdue(agent)
        return [a.agent_id for a in overdue]

    async def run(
        self,
        on_lost: Callable[[AgentLost], Awaitable[None]],
        *,
        on_overdue: Signal | None = None,
        period: float = 1.0,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Check periodically until cancelled; each lost agent goes to ``on_lost``, each agent
        past its hard deadline to ``on_overdue`` (default: the constructor's)."""
        task_status.started()
        while True:
            await trio.sleep(period)
            for item in await self.detect_lost_agents():
                await on_lost(item)
            await self.enforce_timeouts(on_overdue)
