"""The Scheduler's durable memory: the session's event log, folded into the state it plans from.

Owns: ``Ledger`` (the protocol: record one durable event, read the session's history and its
fold), ``SessionLedger`` (over the SQLite event store; each event is folded once, by
``air.events.fold``) and ``StoredTask`` / ``StoredAgent`` / ``LedgerState`` with
``ledger_view`` / ``fold_history``, a thin view of that fold for loading and recovery. Every
scheduling fact is an event first;
the in-memory graph is rebuilt from the log on every start (SDD §7 intro: "in-memory queues
rebuild from SQLite"), so a crash loses nothing that was recorded; the fold starts from the
session's stored snapshot and its event position (``air.events.fold_snapshot``), and after each
snapshot it stores the allocator gives back its free memory (``air.nursery.allocator``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import trio

from air.contracts.error import AirError
from air.contracts.event import EventFilter, EventSource, RuntimeEvent, new_event
from air.contracts.ids import utc_now_iso
from air.contracts.task import TaskSpec, TaskStatus
from air.events.fold import FoldCursor, replay
from air.events.fold_snapshot import (
    SCHEDULER_FOLD,
    SNAPSHOT_EVERY,
    FoldAt,
    fold_session,
    save_fold,
)
from air.events.fold_state import DependencyFact, SessionState, TaskFact
from air.events.packed import unpack_result, unpack_spec
from air.events.payloads import PAYLOADS
from air.events.store import record_to_event
from air.nursery.allocator import release_free_memory
from air.nursery.graph import DependencyEdge
from air.nursery.retry import AttemptSummary

if TYPE_CHECKING:
    from air.events.bus import EventBus
    from air.store.db import DatabaseManager

__all__ = [
    "EventLog",
    "Ledger",
    "LedgerState",
    "SessionLedger",
    "StoredAgent",
    "StoredTask",
    "edge_of",
    "fold_history",
    "ledger_view",
    "stored_task",
]

_LAST_EVENT = {
    "active": "workspace.created",
    "merged": "workspace.merge.completed",
    "conflicted": "workspace.merge.conflicted",
    "abandoned": "workspace.abandoned",
    "cleaned": "workspace.cleaned",
}


_PAGE = 500
"""Events read per query when the fold catches up with the log."""


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

    def history_of(self, *types: str, task_id: str | None = None) -> list[RuntimeEvent]:
        """The session's durable events of ``types`` only (of one task, when ``task_id`` is
        given), oldest first (an indexed read)."""
        ...

    def knows(self, event_type: str) -> bool:
        """Whether the event registry has ``event_type`` (version 1)."""
        ...

    def state(self) -> SessionState:
        """The fold of the session's durable events (``air.events.fold``), caught up with the
        log; kept incrementally (each event is folded once)."""
        ...


@dataclass
class StoredTask:
    """The Scheduler's view of one task: its spec, status and attempts, folded from the log.

    The spec and the worker result stay the fold's packed text until read (IMPL-PACK-1): a
    view of every task (recovery, loading) validates none of them."""

    task_id: str
    spec_text: str
    status: TaskStatus = TaskStatus.PENDING
    order: int = 0
    attempts: list[AttemptSummary] = field(default_factory=list)
    started_attempts: int = 0
    last_error: AirError | None = None
    parent_task_id: str | None = None
    last_agent_id: str | None = None
    last_workspace_id: str | None = None
    result_text: str | None = None

    @property
    def spec(self) -> TaskSpec:
        return unpack_spec(self.spec_text)

    @property
    def worker_result(self) -> dict[str, Any] | None:
        result = unpack_result(self.result_text, self.task_id, self.last_agent_id)
        return None if result is None else result.model_dump(mode="json")


@dataclass
class StoredAgent:
    """One agent the log knows of: its task, status and recorded process identity."""

    agent_id: str
    task_id: str | None
    status: str
    pid: int | None = None
    pid_start_time: str | None = None
    boot_id: str | None = None


@dataclass
class LedgerState:
    """The Scheduler's view of a session (``ledger_view``): tasks, edges, agents, workspaces."""

    tasks: dict[str, StoredTask] = field(default_factory=dict)
    edges: list[DependencyEdge] = field(default_factory=list)
    agents: dict[str, StoredAgent] = field(default_factory=dict)
    workspaces: dict[str, dict[str, Any]] = field(default_factory=dict)

    def active_agents(self) -> list[StoredAgent]:
        return [a for a in self.agents.values() if a.status in ("starting", "running")]


def edge_of(fact: DependencyFact) -> DependencyEdge:
    """The graph edge of a folded dependency row."""
    return DependencyEdge(
        task_id=fact.task_id,
        depends_on_task_id=fact.depends_on_task_id,
        dependency_type=fact.dependency_type,
        reason=fact.reason,
        source=fact.source,
    )


def stored_task(task: TaskFact) -> StoredTask:
    """The Scheduler's view of one folded task."""
    return StoredTask(
        task_id=task.task_id,
        spec_text=task.spec_text,
        status=task.status,
        order=task.order,
        attempts=[
            AttemptSummary(
                attempt_index=f.attempt_index,
                failure_signature=f.failure_signature,
                failure_kind=f.failure_kind,
            )
            for f in task.failures
        ],
        started_attempts=task.attempt_count,
        last_error=task.last_error,
        parent_task_id=task.parent_task_id,
        last_agent_id=task.agent_id,
        last_workspace_id=task.workspace_id,
        result_text=task.result_text,
    )


def ledger_view(state: SessionState) -> LedgerState:
    """The ``LedgerState`` view of a fold (the scheduler tasks, their edges, agents and
    workspaces). O(tasks): for loading and reports, never per decision."""
    view = LedgerState()
    for task in state.scheduler_tasks():
        view.tasks[task.task_id] = stored_task(task)
        view.edges.extend(edge_of(f) for f in state.edges_of(task.task_id))
    for agent in state.agents.values():
        view.agents[agent.agent_id] = StoredAgent(
            agent_id=agent.agent_id,
            task_id=agent.task_id,
            status=agent.status,
            pid=agent.pid,
            pid_start_time=agent.pid_start_time,
            boot_id=agent.boot_id,
        )
    for ws in state.workspaces.values():
        rec = {
            "workspace_id": ws.workspace_id,
            "task_id": ws.task_id,
            "agent_id": ws.agent_id,
            "strategy": ws.strategy,
            "path": ws.path,
            "branch": ws.branch,
            "base_commit": ws.base_commit,
            "merge_commit": ws.merge_commit,
            "kept_branch": ws.kept_branch,
            "status": ws.status,
        }
        view.workspaces[ws.workspace_id] = {k: v for k, v in rec.items() if v is not None} | {
            "last_event": _LAST_EVENT[ws.status]
        }
    return view


def fold_history(events: Iterable[RuntimeEvent]) -> LedgerState:
    """Fold a log into the Scheduler's state: ``ledger_view(replay(events))``. Pure."""
    return ledger_view(replay(events))


class EventLog(Protocol):
    """What SessionLedger needs of ``air.events.store.EventStore``."""

    bus: EventBus | None

    def append(self, event: RuntimeEvent) -> int: ...

    def query_records(self, flt: EventFilter | None = None) -> list[dict[str, Any]]: ...


class SessionLedger:
    """The Ledger over a session's SQLite event store.

    ``record`` appends one durable event (insert + projection + commit + publish, one
    transaction) inline: the store is synchronous and an append takes well under a millisecond.
    ``state`` is the fold of the session's events (events written by others — the
    WorkerManager's ``agent.*``, the tools' ``tool.*`` — included): each call reads only the
    rows appended since the last one, by ``seq``, and folds each once. ``history`` reads the
    whole log back (for recovery and reports, a few times a run).

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
        snapshots: DatabaseManager | None = None,
    ) -> None:
        self.events = events
        self.session_id = session_id
        self.project_id = project_id
        self.source = source or EventSource(kind="scheduler")
        self._last_seq = 0
        self._fold = FoldCursor(SCHEDULER_FOLD)  # ended runs of ended tasks dropped: IMPL-MEM-1
        self._snapshots = snapshots
        self._snapshot_seq = 0
        self._started = False
        self.on_snapshot: Callable[[], None] | None = None
        """Called after each fold snapshot stored: the client keeps its own read state stored
        beside it (the console's view, IMPL-READ-7)."""
        self.release_memory: Callable[[], object] = release_free_memory
        """Called after each fold snapshot stored (and ``on_snapshot``): the allocator gives
        back what was freed (``air.nursery.allocator``, IMPL-RSS-1)."""

    @classmethod
    def for_session(cls, session: Any) -> SessionLedger:
        """Build from an ``air.session`` OpenSession (``.events`` and ``.context``); the fold
        starts from the session's snapshot (``air.events.fold_snapshot``) and keeps it."""
        return cls(
            session.events,
            session_id=session.context.session_id,
            project_id=session.context.project_id,
            snapshots=session.events.db,
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
        if self.events.bus is not None:  # a slow bus subscriber holds us back (IMPL-AGENT-6)
            await self.events.bus.wait_for_room()
        return event

    def _sync(self) -> None:
        """Read the rows appended since the last call (by anyone) and fold each once; the
        first call starts from the stored snapshot, and a snapshot is stored again every
        ``SNAPSHOT_EVERY`` events folded, after which the allocator's free pages are given
        back (``release_memory``)."""
        if self._snapshots is not None and not self._started:
            self._started = True
            start = fold_session(self._snapshots, self.session_id)
            self._fold = FoldCursor(start.state)
            self._last_seq, self._snapshot_seq = start.seq, start.snapshot_seq
        while True:  # in pages: a long tail is never all in memory at once (IMPL-PACK-1)
            rows = self.events.query_records(
                EventFilter(session_id=self.session_id, since_seq=self._last_seq, limit=_PAGE)
            )
            for row in rows:
                self._fold.feed(record_to_event(row))
                self._last_seq = max(self._last_seq, int(row["seq"]))
            if len(rows) < _PAGE:
                break
        if self._snapshots is not None and self._last_seq - self._snapshot_seq >= SNAPSHOT_EVERY:
            at = FoldAt(self._fold.state, self._last_seq, self._snapshot_seq)
            save_fold(self._snapshots, self.session_id, at, utc_now_iso())
            self._snapshot_seq = self._last_seq
            if self.on_snapshot is not None:
                self.on_snapshot()
            self.release_memory()

    def history(self) -> list[RuntimeEvent]:
        # read back whole (recovery, reports: a few times a run); the events are not kept in
        # memory beside the fold, which is what decisions read
        return [
            record_to_event(row)
            for row in self.events.query_records(EventFilter(session_id=self.session_id))
        ]

    def history_of(self, *types: str, task_id: str | None = None) -> list[RuntimeEvent]:
        """The session's events of ``types`` only (of one task: ``task_id``), oldest first: an
        indexed read of the log (``idx_events_type``, ``idx_events_task``), so a look-up for a
        few kinds of event costs what they are, not the session's length (recovery's knowledge
        look-ups, a retry's carried checkpoint)."""
        if not types:
            return []
        flt = EventFilter(session_id=self.session_id, types=list(types), task_id=task_id)
        return [record_to_event(row) for row in self.events.query_records(flt)]

    def state(self) -> SessionState:
        self._sync()
        return self._fold.state

    def knows(self, event_type: str) -> bool:
        return (event_type, 1) in PAYLOADS
