"""The state the fold keeps of one session: ``SessionState``, its facts and a fold step's contract.

Owns ``SessionState`` and its facts (``SessionFact``, ``TaskFact``, ``AttemptFact``,
``FailureFact``, ``DependencyFact``, ``AgentFact``, ``WorkspaceFact``, ``ToolRunFact``,
``CommandRunFact``), ``FoldStep`` (the shape of one event type's step, ``air.events.fold_tasks``
and ``air.events.fold_agents``) and ``fold_error``, what a step raises when an event does not fit
the state. The state is built from persistent maps (``immutables.Map``, a HAMT; IMPL-CORE-1): a
step returns a new state sharing everything it did not touch, so an old state stays valid.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from immutables import Map

from air.contracts.error import AirError, AirException
from air.contracts.event import RuntimeEvent
from air.contracts.runtime import AgentType
from air.contracts.task import DependencySource, DependencyType, TaskSpec, TaskStatus
from air.events.packed import unpack_result, unpack_spec

if TYPE_CHECKING:
    from air.contracts.worker_result import WorkerResult

__all__ = [
    "AgentFact",
    "AttemptFact",
    "CommandRunFact",
    "DependencyFact",
    "FailureFact",
    "FoldStep",
    "SessionFact",
    "SessionState",
    "TaskFact",
    "ToolRunFact",
    "WorkspaceFact",
    "fold_error",
]


class SessionFact(NamedTuple):
    session_id: str
    project_id: str
    status: str
    mode: str
    title: str | None = None


class AttemptFact(NamedTuple):
    """One ``task_attempts`` row."""

    attempt_index: int
    agent_id: str
    agent_type: AgentType
    workspace_id: str | None
    status: str = "running"
    error: AirError | None = None


class FailureFact(NamedTuple):
    """One ``task.failed`` of a task: what the RetryPlanner counts against the retry budget."""

    attempt_index: int
    failure_signature: str | None
    failure_kind: str


class TaskFact(NamedTuple):
    """One task (a ``tasks`` row plus its attempts and failures).

    Its spec and worker result are kept as compact JSON text (``air.events.packed``,
    IMPL-PACK-1) and validated when read (``spec``, ``worker_result``)."""

    task_id: str
    spec_text: str
    """``pack(spec)``."""
    status: TaskStatus
    order: int
    """Creation order among the session's tasks."""
    compaction: bool = False
    """Inserted by ``context.compaction.requested`` (not a scheduler task)."""
    parent_task_id: str | None = None
    origin_message_id: str | None = None
    agent_id: str | None = None
    workspace_id: str | None = None
    attempts: tuple[AttemptFact, ...] = ()
    failures: tuple[FailureFact, ...] = ()
    last_error: AirError | None = None
    """The error of the last ``task.failed`` (cleared by ``task.started``)."""
    blocked_reason: str | None = None
    result_text: str | None = None
    """``pack_result(worker_result, task_id, agent_id)`` of the task's last end: its ids are
    left out when they are this fact's (IMPL-RSS-1); read it through ``worker_result``."""
    summary_id: str | None = None
    """A compaction task's summary."""

    @property
    def spec(self) -> TaskSpec:
        return unpack_spec(self.spec_text)

    @property
    def worker_result(self) -> WorkerResult | None:
        return unpack_result(self.result_text, self.task_id, self.agent_id)

    @property
    def attempt_count(self) -> int:
        return len(self.attempts)


class DependencyFact(NamedTuple):
    """One ``task_dependencies`` row: ``task_id`` depends on ``depends_on_task_id``."""

    task_id: str
    depends_on_task_id: str
    dependency_type: DependencyType
    reason: str | None
    source: DependencySource


class AgentFact(NamedTuple):
    agent_id: str
    task_id: str | None
    agent_type: AgentType
    status: str
    pid: int | None = None
    pid_start_time: str | None = None
    boot_id: str | None = None
    exit_code: int | None = None
    error: AirError | None = None


class WorkspaceFact(NamedTuple):
    workspace_id: str
    task_id: str | None
    agent_id: str | None
    strategy: str
    status: str
    path: str
    branch: str | None = None
    base_commit: str | None = None
    merge_commit: str | None = None
    conflicted_paths: tuple[str, ...] = ()
    kept_branch: str | None = None


class ToolRunFact(NamedTuple):
    tool_run_id: str
    tool_name: str
    task_id: str | None
    agent_id: str | None
    status: str = "running"
    duration_ms: int = 0
    error: AirError | None = None


class CommandRunFact(NamedTuple):
    command_run_id: str
    command: str
    cwd: str
    task_id: str | None
    agent_id: str | None
    tool_run_id: str | None
    ended: bool = False
    exit_code: int | None = None
    cancelled: bool = False
    error: AirError | None = None


_EMPTY: Map[Any, Any] = Map()
"""The empty persistent map every new state starts from (immutable, so one is shared)."""


class SessionState(NamedTuple):
    """Everything the fold knows about one session. Immutable; ``apply`` returns a new one."""

    session: SessionFact | None = None
    tasks: Map[str, TaskFact] = _EMPTY
    dependencies: Map[str, tuple[DependencyFact, ...]] = _EMPTY
    """Per task: the edges it depends along, in the order they were recorded."""
    agents: Map[str, AgentFact] = _EMPTY
    workspaces: Map[str, WorkspaceFact] = _EMPTY
    tool_runs: Map[str, ToolRunFact] = _EMPTY
    command_runs: Map[str, CommandRunFact] = _EMPTY
    agent_events: Map[str, tuple[RuntimeEvent, ...]] = _EMPTY
    """Per agent: its tool/command/artifact/evidence/diagnostic events, oldest first."""
    counts: Map[str, int] = _EMPTY
    """Scheduler tasks (not compaction tasks) per status."""
    applied: int = 0
    """How many events were applied."""
    forget_ended_runs: bool = False
    """The scheduler's fold (IMPL-MEM-1): a tool or command run of a task is dropped once both
    have ended (nothing the scheduler, recovery or a report reads looks at it again); the
    console's fold keeps every run (it shows their outcome)."""

    def count(self, status: TaskStatus | str) -> int:
        return self.counts.get(str(status), 0)

    def edges_of(self, task_id: str) -> tuple[DependencyFact, ...]:
        return self.dependencies.get(task_id, ())

    def scheduler_tasks(self) -> list[TaskFact]:
        """The tasks of ``task.created`` (compaction tasks left out), in creation order."""
        return sorted((t for t in self.tasks.values() if not t.compaction), key=lambda t: t.order)

    def active_agents(self) -> list[AgentFact]:
        return [a for a in self.agents.values() if a.status in ("starting", "running")]

    def events_of_agent(self, agent_id: str) -> tuple[RuntimeEvent, ...]:
        return self.agent_events.get(agent_id, ())

    def forgets_run_of(self, task_id: str | None, agent_id: str | None) -> bool:
        """Whether an ended run of ``task_id`` by ``agent_id`` is dropped: the scheduler's fold,
        and the run's attempt ended (its task known and not running, or running another agent's
        attempt; a run of no task, the main agent's, is kept). IMPL-MEM-1."""
        if not self.forget_ended_runs or task_id is None:
            return False
        task = self.tasks.get(task_id)
        if task is None:
            return False
        return task.status is not TaskStatus.RUNNING or agent_id not in (None, task.agent_id)


FoldStep = Callable[[SessionState, RuntimeEvent, Any], SessionState]
"""One event type's step: (state, event, its validated payload) -> the new state."""


def fold_error(event: RuntimeEvent, message: str) -> AirException:
    """The ``system_error`` a step raises when ``event`` does not fit the state."""
    return AirException.of(
        kind="system_error",
        message=f"cannot fold {event.type}: {message}",
        user_action=(
            "The event does not fit the session's recorded state; run `air doctor` and report "
            "the bug with its bundle."
        ),
        metadata={"event_id": event.id, "event_type": event.type},
    )
