"""The fold of a session's durable events: one pure ``apply(state, event) -> state`` (issue #11).

Owns ``SessionState`` and its facts (``SessionFact``, ``TaskFact``, ``AttemptFact``,
``FailureFact``, ``DependencyFact``, ``AgentFact``, ``WorkspaceFact``, ``ToolRunFact``,
``CommandRunFact``), ``apply``, ``replay``, ``FoldCursor`` (a state kept incrementally over a
growing log) and the transition tables (``TASK_FROM``, ``AGENT_FROM``, ``TOOL_FROM``,
``WORKSPACE_FROM``) that ``air.events.projection`` enforces on the SQL rows too, so every
status rule exists once.

The state is built from persistent maps (``immutables.Map``, a HAMT; IMPL-CORE-1): ``apply``
returns a new state sharing everything it did not touch, so one event costs O(log n) and an
old state stays valid (a reader may keep it while the fold moves on). Payloads are validated
once per event into their typed model (``air.events.payloads``), or passed in already
validated. An event that does not fit the state (an unknown task, an illegal transition, a
duplicate id) raises ``AirException(system_error)``, exactly where the projection refuses it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from immutables import Map
from pydantic import BaseModel

from air.contracts.error import AirError, AirException
from air.contracts.event import RuntimeEvent
from air.contracts.runtime import AgentType
from air.contracts.task import DependencySource, DependencyType, TaskSpec, TaskStatus
from air.events.payloads import payload_model

if TYPE_CHECKING:
    from air.contracts.worker_result import WorkerResult
    from air.events.payloads.ends import (
        TaskBlockedPayload,
        TaskCancelledPayload,
        TaskCompletedPayload,
        TaskFailedPayload,
        TaskInterruptedPayload,
    )
    from air.events.payloads.knowledge import (
        CompactionCompletedPayload,
        CompactionFailedPayload,
        CompactionRequestedPayload,
        CompactionStartedPayload,
    )
    from air.events.payloads.start import (
        AgentStartedPayload,
        DependencyPayload,
        SessionCreatedPayload,
        TaskCreatedPayload,
        TaskDependencyAddedPayload,
        TaskStartedPayload,
        WorkspaceCreatedPayload,
    )
    from air.events.payloads.tools import CommandStartedPayload, ToolStartedPayload

__all__ = [
    "AGENT_FROM",
    "TASK_ENDS",
    "TASK_FROM",
    "TOOL_FROM",
    "WORKSPACE_FROM",
    "AgentFact",
    "AttemptFact",
    "CommandRunFact",
    "DependencyFact",
    "FailureFact",
    "FoldCursor",
    "SessionFact",
    "SessionState",
    "TaskFact",
    "ToolRunFact",
    "WorkspaceFact",
    "apply",
    "replay",
]

# --- the transition tables (the projection enforces the same ones on the SQL rows) ---------

TASK_FROM: dict[str, tuple[str, ...]] = {
    "task.started": ("pending", "failed", "interrupted", "blocked"),
    "task.completed": ("running",),
    "task.blocked": ("pending", "running"),
    "task.failed": ("pending", "running"),
    "task.cancelled": ("pending", "running", "blocked", "interrupted"),
    "task.interrupted": ("running",),
    "context.compaction.started": ("pending",),
    "context.compaction.completed": ("running",),
    "context.compaction.failed": ("pending", "running"),
}
"""Per task event: the task statuses it may leave."""

TASK_ENDS: dict[str, str] = {
    "task.completed": "completed",
    "task.failed": "failed",
    "task.blocked": "blocked",
    "task.cancelled": "cancelled",
    "task.interrupted": "interrupted",
}
"""The events that end a task's attempt, and the status each leaves the task in."""

AGENT_FROM: tuple[str, ...] = ("starting", "running")
"""The agent statuses an ``agent.completed/failed/lost/cancelled`` may leave."""

TOOL_FROM: tuple[str, ...] = ("running",)
"""The tool-run statuses a ``tool.completed/failed/cancelled`` may leave."""

WORKSPACE_FROM: dict[str, tuple[str, ...]] = {
    "workspace.merge.started": ("active", "conflicted"),
    "workspace.merge.completed": ("active",),
    "workspace.merge.conflicted": ("active",),
    "workspace.abandoned": ("active", "conflicted"),
    "workspace.cleaned": ("merged", "abandoned"),
}
"""Per workspace event: the workspace statuses it may leave."""

_AGENT_END = {
    "agent.completed": "completed",
    "agent.failed": "failed",
    "agent.lost": "lost",
    "agent.cancelled": "cancelled",
}
_TOOL_END = {"tool.completed": "ok", "tool.failed": "error", "tool.cancelled": "cancelled"}
_WORKSPACE_TO = {
    "workspace.merge.started": "active",
    "workspace.merge.completed": "merged",
    "workspace.merge.conflicted": "conflicted",
    "workspace.abandoned": "abandoned",
    "workspace.cleaned": "cleaned",
}
# events an agent's evidence is read from (``air.artifacts.evidence``)
_EVIDENCE_TYPES = frozenset(
    {
        "tool.started",
        "command.started",
        "command.completed",
        "command.failed",
        "artifact.created",
        "evidence.created",
        "diagnostic.created",
    }
)


# --- facts ---------------------------------------------------------------------------------


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
    """One task (a ``tasks`` row plus its attempts and failures)."""

    spec: TaskSpec
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
    worker_result: WorkerResult | None = None
    summary_id: str | None = None
    """A compaction task's summary."""

    @property
    def task_id(self) -> str:
        return self.spec.id

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


# --- apply ---------------------------------------------------------------------------------


def _fail(event: RuntimeEvent, message: str) -> AirException:
    return AirException.of(
        kind="system_error",
        message=f"cannot fold {event.type}: {message}",
        user_action=(
            "The event does not fit the session's recorded state; run `air doctor` and report "
            "the bug with its bundle."
        ),
        metadata={"event_id": event.id, "event_type": event.type},
    )


def _task(state: SessionState, event: RuntimeEvent, task_id: str) -> TaskFact:
    task = state.tasks.get(task_id)
    if task is None:
        raise _fail(event, f"task {task_id} does not exist")
    allowed = TASK_FROM.get(event.type)
    if allowed is not None and task.status.value not in allowed:
        raise _fail(
            event, f"task {task_id} is {task.status.value}, expected one of {', '.join(allowed)}"
        )
    return task


def _put_task(state: SessionState, old: TaskFact | None, new: TaskFact) -> SessionState:
    counts = state.counts
    if not new.compaction:
        if old is not None:
            counts = counts.set(old.status.value, counts.get(old.status.value, 0) - 1)
        counts = counts.set(new.status.value, counts.get(new.status.value, 0) + 1)
    return state._replace(tasks=state.tasks.set(new.spec.id, new), counts=counts)


def _end_attempt(
    event: RuntimeEvent,
    task: TaskFact,
    attempt_index: int | None,
    status: str,
    error: AirError | None = None,
) -> tuple[AttemptFact, ...]:
    attempts = task.attempts
    if attempt_index is not None:
        pos = attempt_index - 1
        if not 0 <= pos < len(attempts):
            raise _fail(event, f"attempt {attempt_index} of task {task.task_id} does not exist")
    else:
        pos = len(attempts) - 1
    if pos < 0 or attempts[pos].status != "running":
        return attempts
    ended = attempts[pos]._replace(status=status, error=error)
    return (*attempts[:pos], ended, *attempts[pos + 1 :])


def _add_edge(
    state: SessionState, event: RuntimeEvent, edge: DependencyFact
) -> Map[str, tuple[DependencyFact, ...]]:
    edges = state.dependencies.get(edge.task_id, ())
    if any(e.depends_on_task_id == edge.depends_on_task_id for e in edges):
        raise _fail(event, f"dependency {edge.task_id} -> {edge.depends_on_task_id} exists")
    return state.dependencies.set(edge.task_id, (*edges, edge))


def _dep(task_id: str, d: DependencyPayload) -> DependencyFact:
    return DependencyFact(
        task_id=task_id,
        depends_on_task_id=d.depends_on_task_id,
        dependency_type=d.dependency_type,
        reason=d.reason,
        source=d.source,
    )


def _new_task(
    state: SessionState,
    event: RuntimeEvent,
    spec: TaskSpec,
    deps: Sequence[DependencyPayload],
    *,
    compaction: bool = False,
    origin_message_id: str | None = None,
    parent_task_id: str | None = None,
) -> SessionState:
    if spec.id in state.tasks:
        raise _fail(event, f"task {spec.id} already exists")
    task = TaskFact(
        spec=spec,
        status=TaskStatus.PENDING,
        order=len(state.tasks),
        compaction=compaction,
        parent_task_id=parent_task_id,
        origin_message_id=origin_message_id,
    )
    state = _put_task(state, None, task)
    for d in deps:
        state = state._replace(dependencies=_add_edge(state, event, _dep(spec.id, d)))
    return state


def _task_created(state: SessionState, event: RuntimeEvent, x: TaskCreatedPayload) -> SessionState:
    from air.events.payloads.start import DependencyPayload  # loaded: x is one of its

    deps = x.dependencies or [DependencyPayload.from_spec(d) for d in x.task_spec.dependencies]
    return _new_task(
        state,
        event,
        x.task_spec,
        deps,
        origin_message_id=x.origin_message_id,
        parent_task_id=x.parent_task_id,
    )


def _dependency_added(
    state: SessionState, event: RuntimeEvent, x: TaskDependencyAddedPayload
) -> SessionState:
    for task_id in (x.task_id, x.depends_on_task_id):
        if task_id not in state.tasks:
            raise _fail(event, f"dependency names unknown task {task_id}")
    return state._replace(dependencies=_add_edge(state, event, _dep(x.task_id, x)))


def _task_started(state: SessionState, event: RuntimeEvent, x: TaskStartedPayload) -> SessionState:
    task = _task(state, event, x.task_id)
    expected = len(task.attempts) + 1
    if x.attempt_index != expected:
        raise _fail(event, f"attempt_index {x.attempt_index} for {x.task_id}, expected {expected}")
    attempt = AttemptFact(
        attempt_index=x.attempt_index,
        agent_id=x.agent_id,
        agent_type=x.agent_type,
        workspace_id=x.workspace_id,
    )
    new = task._replace(
        status=TaskStatus.RUNNING,
        agent_id=x.agent_id,
        workspace_id=x.workspace_id,
        attempts=(*task.attempts, attempt),
        blocked_reason=None,
        last_error=None,
    )
    return _put_task(state, task, new)


def _end_task(
    state: SessionState,
    event: RuntimeEvent,
    task_id: str,
    attempt_index: int | None,
    status: TaskStatus,
    error: AirError | None = None,
    **changes: Any,
) -> SessionState:
    """A task-ending event: the task takes ``status`` (and ``changes``), its attempt ends too."""
    task = _task(state, event, task_id)
    attempts = _end_attempt(event, task, attempt_index, status.value, error)
    new = task._replace(status=status, attempts=attempts, **changes)
    return _put_task(state, task, new)


def _task_completed(
    state: SessionState, event: RuntimeEvent, x: TaskCompletedPayload
) -> SessionState:
    return _end_task(
        state,
        event,
        x.task_id,
        x.attempt_index,
        TaskStatus.COMPLETED,
        worker_result=x.worker_result,
    )


def _task_blocked(state: SessionState, event: RuntimeEvent, x: TaskBlockedPayload) -> SessionState:
    return _end_task(
        state,
        event,
        x.task_id,
        x.attempt_index,
        TaskStatus.BLOCKED,
        blocked_reason=x.reason,
        worker_result=x.worker_result,
    )


def _task_failed(state: SessionState, event: RuntimeEvent, x: TaskFailedPayload) -> SessionState:
    task = _task(state, event, x.task_id)
    failure = FailureFact(
        attempt_index=x.attempt_index or len(task.attempts),
        failure_signature=x.error.semantic_signature,
        failure_kind=x.error.kind.value,
    )
    return _end_task(
        state,
        event,
        x.task_id,
        x.attempt_index,
        TaskStatus.FAILED,
        x.error,
        last_error=x.error,
        worker_result=x.worker_result,
        failures=(*task.failures, failure),
    )


def _task_cancelled(
    state: SessionState, event: RuntimeEvent, x: TaskCancelledPayload
) -> SessionState:
    return _end_task(
        state, event, x.task_id, x.attempt_index, TaskStatus.CANCELLED, blocked_reason=x.reason
    )


def _task_interrupted(
    state: SessionState, event: RuntimeEvent, x: TaskInterruptedPayload
) -> SessionState:
    return _end_task(state, event, x.task_id, x.attempt_index, TaskStatus.INTERRUPTED)


def _compaction_requested(
    state: SessionState, event: RuntimeEvent, x: CompactionRequestedPayload
) -> SessionState:
    if not x.accepted or x.task_spec is None:
        return state
    if x.task_spec.type.value != "compact":
        raise _fail(event, f"compaction task {x.task_spec.id} has type {x.task_spec.type.value}")
    return _new_task(state, event, x.task_spec, [], compaction=True)


def _compaction_started(
    state: SessionState, event: RuntimeEvent, x: CompactionStartedPayload
) -> SessionState:
    task = _task(state, event, x.task_id)
    return _put_task(state, task, task._replace(status=TaskStatus.RUNNING, agent_id=x.agent_id))


def _compaction_completed(
    state: SessionState, event: RuntimeEvent, x: CompactionCompletedPayload
) -> SessionState:
    task = _task(state, event, x.task_id)
    new = task._replace(status=TaskStatus.COMPLETED, summary_id=x.summary_id)
    return _put_task(state, task, new)


def _compaction_failed(
    state: SessionState, event: RuntimeEvent, x: CompactionFailedPayload
) -> SessionState:
    task = _task(state, event, x.task_id)
    status = TaskStatus.BLOCKED if x.blocked else TaskStatus.FAILED
    return _put_task(state, task, task._replace(status=status, last_error=x.error))


def _session_created(
    state: SessionState, event: RuntimeEvent, x: SessionCreatedPayload
) -> SessionState:
    if state.session is not None:
        raise _fail(event, f"session {x.session_id} already exists")
    fact = SessionFact(x.session_id, x.project_id, "active", x.mode, x.title)
    return state._replace(session=fact)


def _session_status(status: str) -> Callable[[SessionState, RuntimeEvent, Any], SessionState]:
    def fold(state: SessionState, event: RuntimeEvent, x: Any) -> SessionState:
        if state.session is None or state.session.session_id != x.session_id:
            raise _fail(event, f"session {x.session_id} does not exist")
        return state._replace(session=state.session._replace(status=status))

    return fold


def _agent_started(
    state: SessionState, event: RuntimeEvent, x: AgentStartedPayload
) -> SessionState:
    existing = state.agents.get(x.agent_id)
    if existing is not None:
        # the running-phase re-emission of an agent recorded as ``starting`` (SDD §5.4)
        if existing.status != "starting" or x.status != "running":
            raise _fail(event, f"agent {x.agent_id} already exists as {existing.status}")
        fact = existing._replace(
            status="running",
            pid=x.pid,
            pid_start_time=x.pid_start_time,
            boot_id=x.boot_id,
        )
    else:
        fact = AgentFact(
            agent_id=x.agent_id,
            task_id=x.task_id,
            agent_type=x.agent_type,
            status=x.status,
            pid=x.pid,
            pid_start_time=x.pid_start_time,
            boot_id=x.boot_id,
        )
    return state._replace(agents=state.agents.set(x.agent_id, fact))


def _agent_end(state: SessionState, event: RuntimeEvent, x: Any) -> SessionState:
    agent = state.agents.get(x.agent_id)
    if agent is None:
        raise _fail(event, f"agent {x.agent_id} does not exist")
    if agent.status not in AGENT_FROM:
        raise _fail(event, f"agent {x.agent_id} is {agent.status}, expected starting or running")
    fact = agent._replace(
        status=_AGENT_END[event.type],
        exit_code=getattr(x, "exit_code", None),
        error=getattr(x, "error", None),
    )
    return state._replace(agents=state.agents.set(x.agent_id, fact))


def _tool_started(state: SessionState, event: RuntimeEvent, x: ToolStartedPayload) -> SessionState:
    if x.tool_run_id in state.tool_runs:
        raise _fail(event, f"tool run {x.tool_run_id} already exists")
    fact = ToolRunFact(x.tool_run_id, x.tool_name, x.task_id, x.agent_id)
    return state._replace(tool_runs=state.tool_runs.set(x.tool_run_id, fact))


def _tool_end(state: SessionState, event: RuntimeEvent, x: Any) -> SessionState:
    run = state.tool_runs.get(x.tool_run_id)
    if run is None:
        raise _fail(event, f"tool run {x.tool_run_id} does not exist")
    if run.status not in TOOL_FROM:
        raise _fail(event, f"tool run {x.tool_run_id} is {run.status}, expected running")
    fact = run._replace(
        status=_TOOL_END[event.type],
        duration_ms=x.duration_ms,
        error=getattr(x, "error", None),
    )
    return state._replace(tool_runs=state.tool_runs.set(x.tool_run_id, fact))


def _command_started(
    state: SessionState, event: RuntimeEvent, x: CommandStartedPayload
) -> SessionState:
    if x.command_run_id in state.command_runs:
        raise _fail(event, f"command run {x.command_run_id} already exists")
    fact = CommandRunFact(x.command_run_id, x.command, x.cwd, x.task_id, x.agent_id, x.tool_run_id)
    return state._replace(command_runs=state.command_runs.set(x.command_run_id, fact))


def _command_end(state: SessionState, event: RuntimeEvent, x: Any) -> SessionState:
    run = state.command_runs.get(x.command_run_id)
    if run is None:
        raise _fail(event, f"command run {x.command_run_id} does not exist")
    if run.ended:
        raise _fail(event, f"command run {x.command_run_id} already ended")
    fact = run._replace(
        ended=True,
        exit_code=x.exit_code,
        cancelled=bool(getattr(x, "cancelled", False)),
        error=getattr(x, "error", None),
    )
    return state._replace(command_runs=state.command_runs.set(x.command_run_id, fact))


def _workspace_created(
    state: SessionState, event: RuntimeEvent, x: WorkspaceCreatedPayload
) -> SessionState:
    if x.workspace_id in state.workspaces:
        raise _fail(event, f"workspace {x.workspace_id} already exists")
    fact = WorkspaceFact(
        workspace_id=x.workspace_id,
        task_id=x.task_id,
        agent_id=x.agent_id,
        strategy=x.strategy.value,
        status="active",
        path=x.path,
        branch=x.branch,
        base_commit=x.base_commit,
    )
    return state._replace(workspaces=state.workspaces.set(x.workspace_id, fact))


def _workspace_step(state: SessionState, event: RuntimeEvent, x: Any) -> SessionState:
    ws = state.workspaces.get(x.workspace_id)
    if ws is None:
        raise _fail(event, f"workspace {x.workspace_id} does not exist")
    allowed = WORKSPACE_FROM[event.type]
    if ws.status not in allowed:
        raise _fail(event, f"workspace {x.workspace_id} is {ws.status}, expected one of {allowed}")
    fact = ws._replace(status=_WORKSPACE_TO[event.type])
    from air.events.payloads.ends import (  # loaded: x is one of its (all steps but created)
        WorkspaceAbandonedPayload,
        WorkspaceMergeCompletedPayload,
        WorkspaceMergeConflictedPayload,
    )

    if isinstance(x, WorkspaceMergeCompletedPayload):
        fact = fact._replace(merge_commit=x.merge_commit)
    elif isinstance(x, WorkspaceMergeConflictedPayload):
        fact = fact._replace(conflicted_paths=tuple(x.conflicted_paths), kept_branch=x.kept_branch)
    elif isinstance(x, WorkspaceAbandonedPayload) and x.kept_branch is not None:
        fact = fact._replace(kept_branch=x.kept_branch)
    return state._replace(workspaces=state.workspaces.set(x.workspace_id, fact))


_Fold = Callable[[SessionState, RuntimeEvent, Any], SessionState]

_HANDLERS: dict[str, _Fold] = {
    "session.created": _session_created,
    "session.archived": _session_status("archived"),
    "session.deleted": _session_status("deleted"),
    "task.created": _task_created,
    "task.dependency.added": _dependency_added,
    "task.started": _task_started,
    "task.completed": _task_completed,
    "task.blocked": _task_blocked,
    "task.failed": _task_failed,
    "task.cancelled": _task_cancelled,
    "task.interrupted": _task_interrupted,
    "context.compaction.requested": _compaction_requested,
    "context.compaction.started": _compaction_started,
    "context.compaction.completed": _compaction_completed,
    "context.compaction.failed": _compaction_failed,
    "agent.started": _agent_started,
    **dict.fromkeys(_AGENT_END, _agent_end),
    "tool.started": _tool_started,
    **dict.fromkeys(_TOOL_END, _tool_end),
    "command.started": _command_started,
    "command.completed": _command_end,
    "command.failed": _command_end,
    "workspace.created": _workspace_created,
    **dict.fromkeys(WORKSPACE_FROM, _workspace_step),
}

FOLDED_TYPES: frozenset[str] = frozenset(_HANDLERS) | _EVIDENCE_TYPES
"""The event types ``apply`` reads; every other type leaves the state as it is."""


def _agent_of(state: SessionState, event: RuntimeEvent, x: Any) -> str | None:
    """The agent whose evidence ``event`` belongs to (None: no agent's)."""
    agent_id: str | None = getattr(x, "agent_id", None)
    if agent_id is not None:
        return agent_id
    run_id: str | None = None
    if event.type in ("command.completed", "command.failed"):
        run_id = x.command_run_id
    elif event.type == "diagnostic.created":
        run_id = x.command_run_id
    elif event.type == "evidence.created" and x.entity_type.value == "command_run":
        run_id = x.entity_id
    run = state.command_runs.get(run_id) if run_id is not None else None
    return run.agent_id if run is not None else None


def apply(
    state: SessionState, event: RuntimeEvent, payload: BaseModel | None = None
) -> SessionState:
    """The state after one event. Pure: ``state`` is left as it was.

    Args:
        state: the state before the event.
        event: the durable event (ephemeral and unfolded types leave the state unchanged).
        payload: the event's payload already validated into its model (validated here when
            None).

    Returns:
        The new state.

    Raises:
        AirException: ``system_error`` when the event does not fit the state (unknown task,
            illegal transition, duplicate id) or its type is unknown; ``validation_error``
            when its payload does not match its model.
    """
    if event.type not in FOLDED_TYPES:
        return state._replace(applied=state.applied + 1)
    x = payload if payload is not None else _validate(event)
    handler = _HANDLERS.get(event.type)
    if handler is not None:
        state = handler(state, event, x)
    if event.type in _EVIDENCE_TYPES:
        agent_id = _agent_of(state, event, x)
        if agent_id is not None:
            log = state.agent_events.get(agent_id, ())
            state = state._replace(agent_events=state.agent_events.set(agent_id, (*log, event)))
    elif event.type in TASK_ENDS:
        # the attempt's outcome is recorded: nothing reads its agent's evidence again (issue 28)
        ended: str | None = getattr(x, "agent_id", None)
        if ended is not None and ended in state.agent_events:
            state = state._replace(agent_events=state.agent_events.delete(ended))
    return state._replace(applied=state.applied + 1)


def _validate(event: RuntimeEvent) -> BaseModel:
    model = payload_model(event.type, event.version)
    if model is None:
        raise _fail(event, f"unknown event type {event.type} v{event.version}")
    try:
        return model.model_validate(event.payload)
    except ValueError as exc:
        raise AirException.of(
            kind="validation_error",
            message=f"invalid payload for event {event.type} v{event.version}",
            detail=str(exc),
            user_action="Fix the producer of this event so its payload matches its model.",
            metadata={"event_type": event.type, "event_id": event.id},
        ) from exc


def replay(events: Iterable[RuntimeEvent]) -> SessionState:
    """The state after every event of ``events``, oldest first, from an empty session."""
    state = SessionState()
    for event in events:
        state = apply(state, event)
    return state


class FoldCursor:
    """A ``SessionState`` kept incrementally: feed it each new event once, read ``state``.

    Args:
        state: the state to start from (default: an empty session).
    """

    __slots__ = ("state",)

    def __init__(self, state: SessionState | None = None) -> None:
        self.state = state or SessionState()

    def feed(self, event: RuntimeEvent, payload: BaseModel | None = None) -> SessionState:
        """Apply one event; returns the new state."""
        self.state = apply(self.state, event, payload)
        return self.state

    def feed_all(self, events: Iterable[RuntimeEvent]) -> SessionState:
        for event in events:
            self.state = apply(self.state, event)
        return self.state
