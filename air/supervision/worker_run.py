"""The state of one supervised attempt and what its parts share (SDD §8.1, §20.4).

Owns: ``SupervisionConfig``, the injected-collaborator protocols (``EventSink``,
``ArtifactSink``, ``ProviderRouter``, ``ToolRouter``, ``ToolStreamRouter``), ``Supervisor`` (the
collaborators the supervision parts read, which ``WorkerManager`` provides), ``WorkerRun`` (one
attempt: its channel, its deadlines as cancel scopes, what the worker said), ``End`` (why the
running phase ended) and the plumbing every part uses: ``send`` / ``control`` to the worker,
``emit`` of the parent-owned ``agent.*`` events, ``err`` and ``redact``.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeAlias

import trio
from pydantic import BaseModel, ValidationError

from air.contracts.error import AirError, ErrorKind, Retryability, make_air_error
from air.contracts.event import EventSource, RuntimeEvent, new_event
from air.contracts.ids import new_id
from air.contracts.ipc import IpcEnvelope
from air.contracts.provider import ProviderCompletionInput, ProviderStreamEvent
from air.contracts.runtime import AgentType, ContextPack, PermissionTemplate
from air.contracts.task import AGENT_TYPE_FOR_TASK
from air.ipc.framing import DEFAULT_MAX_LINE_BYTES
from air.ipc.launcher import Launcher
from air.ipc.process import WorkerProcess
from air.ipc.protocol import LineEncoder
from air.security.redact import SecretRedactor
from air.supervision.checkpoints import CheckpointPacer
from air.supervision.conversation import Conversation
from air.supervision.seams import SuperviseRequest

if TYPE_CHECKING:  # built once a worker calls a tool or sends its result (IMPL-BOOT-12)
    from air.contracts.artifact_records import ArtifactContext, ArtifactCreateInput, ArtifactRef
    from air.contracts.tool_runs import ToolEvent, ToolExecutionContext, ToolResultEnvelope
    from air.contracts.worker_result import WorkerResult

__all__ = [
    "CONTRACT",
    "LOG_KEEP_BYTES",
    "TEMPLATE",
    "ArtifactSink",
    "ContextProvider",
    "End",
    "EventSink",
    "ProviderRouter",
    "SupervisionConfig",
    "Supervisor",
    "ToolRouter",
    "ToolStreamRouter",
    "WorkerRun",
    "control",
    "dump",
    "emit",
    "err",
    "is_cancel",
    "keep_log",
    "new_run",
    "redact",
    "say_progress",
    "send",
    "worker_error",
]

TEMPLATE: dict[AgentType, PermissionTemplate] = {
    AgentType.EXECUTOR: PermissionTemplate.EXECUTOR,
    AgentType.REVIEWER: PermissionTemplate.REVIEWER,
    AgentType.DEBUGGER: PermissionTemplate.DEBUGGER,
    AgentType.COMPACTOR: PermissionTemplate.REVIEWER,
    AgentType.EXPERIENCE_MINER: PermissionTemplate.REVIEWER,
}
CONTRACT: dict[AgentType, str] = {
    AgentType.EXECUTOR: "ExecutorResult",
    AgentType.REVIEWER: "ReviewerResult",
    AgentType.DEBUGGER: "DebuggerResult",
    AgentType.COMPACTOR: "CompactorResult",
    AgentType.EXPERIENCE_MINER: "ExperienceMinerResult",
}


class EventSink(Protocol):
    async def ingest(self, event: RuntimeEvent) -> Any: ...

    async def ingest_ephemeral(self, event: RuntimeEvent) -> Any: ...


class ArtifactSink(Protocol):
    def create(self, input: ArtifactCreateInput, context: ArtifactContext) -> ArtifactRef: ...


class ProviderRouter(Protocol):
    def complete(self, request: ProviderCompletionInput) -> AsyncIterator[ProviderStreamEvent]: ...


ToolRouter: TypeAlias = (
    "Callable[[str, dict[str, Any], ToolExecutionContext], Awaitable[ToolResultEnvelope]]"
)
ToolStreamRouter: TypeAlias = (
    "Callable[[str, dict[str, Any], ToolExecutionContext],"
    " AbstractAsyncContextManager[AsyncIterator[ToolEvent | ToolResultEnvelope]]]"
)
"""``ToolRegistry.call_streaming``: ``async with router(...) as items: async for item in items``."""
ContextProvider = Callable[[SuperviseRequest], Awaitable[ContextPack]]


@dataclass(eq=False)
class SupervisionConfig:
    """Timings and limits of supervision (runner-contract defaults, baselines §B.3)."""

    handshake_timeout_s: float = 15.0
    stall_after_s: float = 90.0
    stall_kill_after_s: float = 90.0
    kill_grace_s: float = 3.0
    exit_grace_s: float = 5.0
    """How long a worker may take to exit after its result (or after agent.cancel)."""
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    max_result_bytes: int = 50 * 1024
    max_result_lines: int = 2000
    heartbeat_s: float = 5.0
    grace_turns: int = 2
    max_tokens: int | None = None
    """A cap on each turn's max_tokens; ``None``: the model's max_output_tokens (models.yaml)."""
    command: list[str] | None = None
    """The worker command; default ``[sys.executable, "-P", "-m", "air.roles"]``."""
    env: dict[str, str] | None = None
    """Variables added to the worker's allowlisted environment (``air.ipc.launcher``)."""


class Supervisor(Protocol):
    """What the supervision parts read from their manager (``WorkerManager``), at call time."""

    tools: ToolRouter
    tool_streams: ToolStreamRouter | None
    provider: ProviderRouter
    events: EventSink
    artifacts: ArtifactSink
    model: str
    config: SupervisionConfig
    redactor: SecretRedactor | None
    launcher: Launcher


class End(NamedTuple):
    """Why the running phase of an attempt ended; a read-only record, so a NamedTuple (~60 us
    to create, not a dataclass's ~300: IMPL-BOOT-9, IMPL-BOOT-12)."""

    kind: str
    error: AirError | None = None
    transient: bool = False


@dataclass(eq=False)
class WorkerRun:
    """One supervised attempt. Its deadlines are cancel scopes (IMPL-LAUNCH-2): ``hard_scope``
    (the hard timeout), ``soft_scope`` (when to ask for a wrap-up), ``grace_scope`` (how long a
    cancelled worker may take to end); ``extend`` moves the first two, ``hold`` stops them while
    the person is asked and ``release`` moves them by the wait."""

    request: SuperviseRequest
    agent_type: AgentType
    marker: str
    proc: WorkerProcess | None = None
    result: WorkerResult | None = None
    end: End | None = None
    last_seen: float = 0.0
    soft_at: float = math.inf
    hard_at: float = math.inf
    hard_scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    soft_scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    grace_scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    tasks_scope: trio.CancelScope | None = None
    serving: bool = False
    """A tool call is being served: the worker waits on the parent, it is not silent."""
    call_scope: trio.CancelScope | None = None
    """The scope of the call being served; the worker's exit cancels it (IMPL-DEADCALL-1)."""
    exit_code: int | None = None
    """The worker process's exit code once ``exit_watch`` saw it end (IMPL-DEADCALL-1)."""
    cancel_reason: str | None = None
    remote: dict[str, Any] | None = None
    """Where the launcher placed the worker (``LaunchSpec.placed``): run record, agent.started."""
    launch_scope: trio.CancelScope | None = None
    """While the launcher places the worker (a queued Slurm job): a cancel ends the wait."""
    logs: deque[str] = field(default_factory=deque)
    """The worker's ``log`` messages, the newest ``LOG_KEEP_BYTES`` of them (``keep_log``)."""
    log_bytes: int = 0
    logs_dropped: int = 0
    model_turns: int = 0
    """The ``provider.complete`` calls the parent served this attempt (``worker_tools``)."""
    model_cost_usd: float = 0.0
    cost_reached_at: int | None = None
    """The served turn whose cost reached the task's ``max_cost_usd``, if one did."""
    verified: dict[str, bool] = field(default_factory=dict)
    checkpoint: dict[str, Any] | None = None
    pacer: CheckpointPacer = field(default_factory=CheckpointPacer)
    """Which checkpoints become ``agent.checkpointed`` events (``air.supervision.checkpoints``)."""
    started_recorded: bool = False
    ctx: ToolExecutionContext | None = None
    conversation: Conversation | None = None
    """The model turns so far, kept by the parent (``air.supervision.conversation``)."""
    encoder: LineEncoder | None = None
    holds: int = 0
    """Permission prompts open for this attempt's calls (its deadlines stand still meanwhile)."""
    held_s: float = 0.0
    """How long the person was waited for so far: the whole-task deadline moved by as much."""
    _source: EventSource | None = field(default=None, repr=False)

    @property
    def source(self) -> EventSource:
        """Who a worker event comes from: this run's agent, as the parent names it."""
        if self._source is None:
            req = self.request
            self._source = EventSource(kind="agent", id=req.agent_id, agent_type=self.agent_type)
        return self._source

    def arm(self, now: float) -> None:
        """Set the soft and hard deadlines from the task's limits, counted from ``now``; the
        hard one never later than the task's whole-task deadline (IMPL-DEADLINE-1)."""
        limits = self.request.task_spec.constraints
        self.last_seen = now
        self.hard_at = now + limits.hard_timeout_ms / 1000
        if self.request.deadline_at is not None:
            self.hard_at = min(self.hard_at, self.request.deadline_at)
        self.soft_at = min(now + limits.soft_timeout_ms / 1000, self.hard_at)
        self.soft_scope.deadline = self.soft_at
        self.hard_scope.deadline = self.hard_at

    def extend(self, extra_s: float) -> None:
        """Move both deadlines by ``extra_s`` (a wrap-up already asked for may be asked again)."""
        self.soft_at += extra_s
        self.hard_at += extra_s
        self.soft_scope.deadline = self.soft_at
        self.hard_scope.deadline = self.hard_at

    def hold(self) -> None:
        """Stop both deadlines while the person is asked (IMPL-DEADLINE-1: the wait for them
        is not the task's time)."""
        self.holds += 1
        self.soft_scope.deadline = self.hard_scope.deadline = math.inf

    def release(self, waited_s: float) -> None:
        """The person answered after ``waited_s``: both deadlines move by it and run again."""
        self.holds = max(0, self.holds - 1)
        self.held_s += waited_s
        self.soft_at += waited_s
        self.hard_at += waited_s
        if not self.holds:
            self.soft_scope.deadline = self.soft_at
            self.hard_scope.deadline = self.hard_at

    def stop(self, end: End) -> None:
        """End the running phase with ``end`` (the first reason wins)."""
        if self.end is None:
            self.end = end
        if self.tasks_scope is not None:
            self.tasks_scope.cancel()


LOG_KEEP_BYTES = 1024 * 1024
"""How much of a worker's ``log`` messages the parent keeps for its stderr artifact: the newest
(a worker that logs without end never grows the parent; a log line is cut at 2,000 characters)."""


def keep_log(run: WorkerRun, text: str) -> None:
    """Keep ``text`` as the worker's newest log message, dropping the oldest past the bound."""
    run.logs.append(text)
    run.log_bytes += len(text)
    while run.log_bytes > LOG_KEEP_BYTES:
        run.log_bytes -= len(run.logs.popleft())
        run.logs_dropped += 1


def new_run(request: SuperviseRequest) -> WorkerRun:
    agent_type = AGENT_TYPE_FOR_TASK[request.task_spec.type]
    return WorkerRun(
        request=request, agent_type=agent_type, marker=f"{request.agent_id}.{new_id('run')}"
    )


async def send(
    run: WorkerRun,
    kind: str,
    payload: dict[str, Any] | BaseModel,
    correlation_id: str | None = None,
) -> bool:
    """One message to the worker (a model payload is dumped as JSON in the same pass); False
    when it has no process or its stdin is closed."""
    if run.proc is None:
        return False
    encoder = run.encoder
    if encoder is None:
        req = run.request
        encoder = run.encoder = LineEncoder(session_id=req.session_id, agent_id=req.agent_id)
    return await run.proc.send_line(encoder.line(kind, payload, correlation_id=correlation_id))


async def control(run: WorkerRun, payload: dict[str, Any]) -> bool:
    return await send(run, "control", payload)


async def emit(sup: Supervisor, run: WorkerRun, type: str, payload: dict[str, Any]) -> None:
    req = run.request
    event = new_event(
        type,
        {"agent_id": req.agent_id, "task_id": req.task_spec.id, **payload},
        session_id=req.session_id,
        project_id=req.project_id,
        source=EventSource(kind="scheduler", id="worker_manager"),
        route=["scheduler", "worker_manager"],
    )
    await sup.events.ingest(event)


def redact(sup: Supervisor, text: str) -> str:
    return sup.redactor.redact(text) if sup.redactor is not None else text


def err(
    kind: ErrorKind,
    message: str,
    *,
    detail: str | None = None,
    transient: bool = False,
    user_action: str | None = None,
) -> AirError:
    return make_air_error(
        kind=kind,
        message=message,
        detail=detail,
        retryability=Retryability.TRANSIENT if transient else Retryability.UNKNOWN,
        user_action=user_action or "See the worker's stderr log artifact; a retry may succeed.",
    )


def worker_error(msg: IpcEnvelope) -> AirError:
    try:
        return AirError.model_validate(msg.payload.get("error"))
    except ValidationError:
        return err(ErrorKind.PROTOCOL_ERROR, "the worker reported a protocol error")


def dump(error: AirError) -> dict[str, Any]:
    return error.model_dump(mode="json")


def is_cancel(exc: BaseException) -> bool:
    if isinstance(exc, trio.Cancelled):
        return True
    if isinstance(exc, BaseExceptionGroup):
        rest = exc.split(trio.Cancelled)[1]
        return rest is None
    return False


async def say_progress(events: EventSink, run: WorkerRun, message: str) -> None:
    """Tell the session how a wait before the worker runs goes (a machine-wide slot, a Slurm
    allocation): an ephemeral ``task.progress`` (SDD §5.5)."""
    req = run.request
    event = new_event(
        "task.progress",
        {"task_id": req.task_spec.id, "agent_id": req.agent_id, "message": message},
        session_id=req.session_id,
        project_id=req.project_id,
        source=EventSource(kind="scheduler", id="worker_manager"),
        route=["scheduler", "worker_manager"],
    )
    await events.ingest_ephemeral(event)
