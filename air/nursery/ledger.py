"""The Scheduler's durable memory: the session's event log, folded into the state it plans from.

Owns: ``Ledger`` (the protocol: record one durable event, read the session's history),
``StoredTask`` / ``StoredAgent`` / ``LedgerState`` and ``fold_history``, the pure fold of the
task / dependency / agent events into that state. Every scheduling fact is an event first;
the in-memory graph is rebuilt from the log on every start (SDD §7 intro: "in-memory queues
rebuild from SQLite"), so a crash loses nothing that was recorded.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import trio

from air.contracts import (
    AirError,
    DependencySource,
    DependencyType,
    EventFilter,
    EventSource,
    RuntimeEvent,
    TaskSpec,
    TaskStatus,
    new_event,
)
from air.events.payloads import payload_model
from air.events.store import record_to_event
from air.nursery.graph import DependencyEdge
from air.nursery.retry import AttemptSummary

__all__ = [
    "EventLog",
    "Ledger",
    "LedgerState",
    "SessionLedger",
    "StoredAgent",
    "StoredTask",
    "fold_history",
]

_STATUS_BY_EVENT = {
    "task.started": TaskStatus.RUNNING,
    "task.completed": TaskStatus.COMPLETED,
    "task.failed": TaskStatus.FAILED,
    "task.blocked": TaskStatus.BLOCKED,
    "task.cancelled": TaskStatus.CANCELLED,
    "task.interrupted": TaskStatus.INTERRUPTED,
}
_AGENT_END = {
    "agent.completed": "completed",
    "agent.failed": "failed",
    "agent.lost": "lost",
    "agent.cancelled": "cancelled",
}


class Ledger(Protocol):
    """Where the Scheduler records facts and reads them back."""

    session_id: str
    project_id: str

    async def record(self, type: str, payload: dict[str, Any]) -> RuntimeEvent:
        """Ingest one durable event (one SQLite transaction) and return it; raises on failure."""
        ...

    def history(self) -> list[RuntimeEvent]:
        """The session's durable events, oldest first."""
        ...

    def knows(self, event_type: str) -> bool:
        """Whether the event registry has ``event_type`` (version 1)."""
        ...


@dataclass
class StoredTask:
    spec: TaskSpec
    status: TaskStatus = TaskStatus.PENDING
    order: int = 0
    attempts: list[AttemptSummary] = field(default_factory=list)
    started_attempts: int = 0
    last_error: AirError | None = None
    parent_task_id: str | None = None
    last_agent_id: str | None = None
    last_workspace_id: str | None = None
    worker_result: dict[str, Any] | None = None


@dataclass
class StoredAgent:
    agent_id: str
    task_id: str | None
    status: str
    pid: int | None = None
    pid_start_time: int | None = None
    boot_id: str | None = None


@dataclass
class LedgerState:
    tasks: dict[str, StoredTask] = field(default_factory=dict)
    edges: list[DependencyEdge] = field(default_factory=list)
    agents: dict[str, StoredAgent] = field(default_factory=dict)
    workspaces: dict[str, dict[str, Any]] = field(default_factory=dict)

    def active_agents(self) -> list[StoredAgent]:
        return [a for a in self.agents.values() if a.status in ("starting", "running")]


def _edge(task_id: str, raw: dict[str, Any]) -> DependencyEdge:
    source = raw.get("source")
    return DependencyEdge(
        task_id=task_id,
        depends_on_task_id=str(raw["depends_on_task_id"]),
        dependency_type=DependencyType(raw.get("dependency_type") or "hard"),
        reason=raw.get("reason"),
        source=DependencySource(source) if source else None,
    )


def fold_history(events: Iterable[RuntimeEvent]) -> LedgerState:
    """Fold task, dependency, agent and workspace events into the Scheduler's state. Pure."""
    state = LedgerState()
    for event in events:
        p = event.payload
        kind = event.type
        if kind == "task.created":
            spec = TaskSpec.model_validate(p["task_spec"])
            state.tasks[spec.id] = StoredTask(
                spec=spec, order=len(state.tasks), parent_task_id=p.get("parent_task_id")
            )
            for dep in p.get("dependencies") or [
                d.model_dump(mode="json") for d in spec.dependencies
            ]:
                edge = _edge(spec.id, dep)
                if edge not in state.edges:
                    state.edges.append(edge)
        elif kind == "task.dependency.added":
            edge = _edge(str(p["task_id"]), p)
            if edge not in state.edges:
                state.edges.append(edge)
        elif kind in _STATUS_BY_EVENT:
            task = state.tasks.get(str(p.get("task_id")))
            if task is None:
                continue
            task.status = _STATUS_BY_EVENT[kind]
            if kind == "task.started":
                task.started_attempts += 1
                task.last_agent_id = p.get("agent_id")
                task.last_workspace_id = p.get("workspace_id")
                task.last_error = None
            elif kind == "task.completed":
                task.worker_result = p.get("worker_result")
            if kind in ("task.failed", "task.blocked", "task.interrupted", "task.cancelled") and (
                p.get("error")
            ):
                task.last_error = AirError.model_validate(p["error"])
            if kind == "task.failed" and task.last_error is not None:
                # failed attempts are what the RetryPlanner counts against the retry budget
                task.attempts.append(
                    AttemptSummary(
                        attempt_index=int(p.get("attempt_index") or task.started_attempts),
                        failure_signature=task.last_error.semantic_signature,
                        failure_kind=task.last_error.kind.value,
                    )
                )
        elif kind == "agent.started":
            state.agents[str(p["agent_id"])] = StoredAgent(
                agent_id=str(p["agent_id"]),
                task_id=p.get("task_id"),
                status=str(p.get("status") or "running"),
                pid=p.get("pid"),
                pid_start_time=p.get("pid_start_time"),
                boot_id=p.get("boot_id"),
            )
        elif kind in _AGENT_END:
            agent = state.agents.get(str(p.get("agent_id")))
            if agent is not None:
                agent.status = _AGENT_END[kind]
        elif kind.startswith("workspace."):
            wid = str(p.get("workspace_id"))
            rec = state.workspaces.setdefault(wid, {})
            rec.update({k: v for k, v in p.items() if v is not None})
            rec["last_event"] = kind
    return state


class EventLog(Protocol):
    """What SessionLedger needs of ``air.events.store.EventStore``."""

    def append(self, event: RuntimeEvent) -> int: ...

    def query_records(self, flt: EventFilter | None = None) -> list[dict[str, Any]]: ...


class SessionLedger:
    """The Ledger over a session's SQLite event store.

    ``record`` appends one durable event (insert + projection + commit + publish, one
    transaction) inline: the store is synchronous and an append takes well under a millisecond.
    ``history`` reads the session's events back, caching what it has seen by ``seq`` so each
    call only reads new rows (events written by others — the WorkerManager's ``agent.*`` —
    are included).

    Args:
        events: the session's EventStore (or anything with ``append`` / ``query_records``).
        session_id: the session.
        project_id: the project.
        source: who the recorded events come from (default: the scheduler).
    """

    def __init__(
        self,
        events: EventLog,
        *,
        session_id: str,
        project_id: str,
        source: EventSource | None = None,
    ) -> None:
        self.events = events
        self.session_id = session_id
        self.project_id = project_id
        self.source = source or EventSource(kind="scheduler")
        self._seen: list[RuntimeEvent] = []
        self._last_seq = 0

    @classmethod
    def for_session(cls, session: Any) -> SessionLedger:
        """Build from an ``air.session`` OpenSession (``.events`` and ``.context``)."""
        return cls(
            session.events,
            session_id=session.context.session_id,
            project_id=session.context.project_id,
        )

    async def record(self, type: str, payload: dict[str, Any]) -> RuntimeEvent:
        event = new_event(
            type,
            payload,
            session_id=self.session_id,
            source=self.source,
            project_id=self.project_id,
        )
        await trio.lowlevel.checkpoint_if_cancelled()  # cancelled before writing, not after
        self.events.append(event)
        return event

    def history(self) -> list[RuntimeEvent]:
        rows = self.events.query_records(
            EventFilter(session_id=self.session_id, since_seq=self._last_seq)
        )
        for row in rows:
            self._seen.append(record_to_event(row))
            self._last_seq = max(self._last_seq, int(row["seq"]))
        return list(self._seen)

    def knows(self, event_type: str) -> bool:
        return payload_model(event_type) is not None
