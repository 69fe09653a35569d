"""Projections the console renders and the two narrow seams it talks through (contracts §17).

Owns: the ``*Projection`` models and ``ProjectionSnapshot`` (what the UI reads), ``UiCommand``
(what the person decided), and the protocols ``ProjectionClient`` (snapshot + change
notification, in process in v1) and ``UiCommandChannel`` (where UiCommands go). The console
(``air.ui_urwid``) imports only this module's shapes; it never reads the database or the bus.
"""

from collections.abc import Callable
from typing import Literal, Protocol

from pydantic import Field

from air.contracts.ids import Contract, empty_list

__all__ = [
    "PERMISSION_ANSWERS",
    "AgentProjection",
    "ArtifactProjection",
    "BlockerProjection",
    "CommandRunProjection",
    "DiffProjection",
    "EvidenceProjection",
    "MainAgentProjection",
    "MessageProjection",
    "PermissionAnswer",
    "PermissionPromptProjection",
    "PermissionSegmentProjection",
    "ProjectionClient",
    "ProjectionSnapshot",
    "ProjectionSubscription",
    "SessionProjection",
    "TaskProjection",
    "ToolRunProjection",
    "TotalsProjection",
    "UiCommand",
    "UiCommandChannel",
    "UiCommandKind",
    "UsagePart",
    "WaveProjection",
]


PermissionAnswer = Literal["allow_once", "allow_task", "allow_session", "allow_project", "deny"]
PERMISSION_ANSWERS: tuple[PermissionAnswer, ...] = (
    "allow_once",
    "allow_task",
    "allow_session",
    "allow_project",
    "deny",
)


class SessionProjection(Contract):
    session_id: str
    status: str
    title: str | None = None
    mode: str | None = None
    model_provider_id: str | None = None
    model_id: str | None = None
    created_at: str | None = None


class MessageProjection(Contract):
    """One conversation message; an assistant message is ``streaming`` until it is created."""

    message_id: str
    role: Literal["user", "assistant"]
    text: str = ""
    status: Literal["streaming", "complete", "failed"] = "complete"
    task_id: str | None = None
    agent_id: str | None = None
    error: str | None = None
    timestamp: str | None = None


class MainAgentProjection(Contract):
    """The Main Agent's state (SDD §20.1 names, e.g. ``IDLE``, ``ANSWERING``, ``EXECUTING``)."""

    state: str = "IDLE"
    direct_mode: bool = False


class TaskProjection(Contract):
    task_id: str
    title: str
    type: str
    status: str
    agent_id: str | None = None
    wave: int = 0
    """Dependency depth: 0 for a task with no dependency, else 1 + its deepest dependency's."""
    depends_on: list[str] = Field(default_factory=empty_list)
    parent_task_id: str | None = None
    attempt: int = 0
    started_at: str | None = None
    ended_at: str | None = None
    """Set when the task reached a terminal (or interrupted) status; elapsed = ended - started."""
    turns: int = 0
    tokens: int = 0
    """Tokens in and out of every model call of the task (the usage ledger, IMPL-USAGE-1)."""
    cost_usd: float | None = 0.0
    """``None`` when a call's model has no known price (shown "unknown", never $0.00)."""
    progress: str | None = None
    summary: str | None = None
    error: str | None = None
    changed_files: list[str] = Field(default_factory=empty_list)
    left_out: list[str] = Field(default_factory=empty_list)
    """What the task left that git ignores, so its merge did not take it (the first 20)."""
    left_out_count: int = 0


class WaveProjection(Contract):
    index: int
    task_ids: list[str] = Field(default_factory=empty_list)
    status: Literal["pending", "running", "done"] = "pending"


class AgentProjection(Contract):
    agent_id: str
    agent_type: str
    status: str
    task_id: str | None = None
    turn: int | None = None
    tokens: int | None = None
    state: str | None = None
    """The worker's last heartbeat state (thinking, tool, ...)."""


class ToolRunProjection(Contract):
    tool_run_id: str
    tool_name: str
    status: str
    task_id: str | None = None
    agent_id: str | None = None
    input_summary: str = ""
    output_summary: str | None = None
    error: str | None = None
    duration_ms: int | None = None
    started_at: str | None = None


class CommandRunProjection(Contract):
    command_run_id: str
    command: str
    status: Literal["running", "ok", "error", "cancelled", "unknown"]
    exit_code: int | None = None
    tail: str = ""
    """The last bytes of stdout+stderr seen live (bounded; older output is dropped)."""
    tail_truncated: bool = False
    task_id: str | None = None
    tool_run_id: str | None = None
    cwd: str | None = None
    duration_ms: int | None = None


class ArtifactProjection(Contract):
    artifact_id: str
    type: str
    path: str
    task_id: str | None = None
    size_bytes: int | None = None


class DiffProjection(Contract):
    """A diff artifact with its text (bounded) so the console can colour and copy it."""

    artifact_id: str
    path: str
    text: str = ""
    truncated: bool = False
    task_id: str | None = None


class EvidenceProjection(Contract):
    evidence_ref_id: str
    kind: str
    ref: str
    claim: str
    entity_type: str
    entity_id: str
    task_id: str | None = None


class PermissionSegmentProjection(Contract):
    """One segment of a compound command, classified on its own (SDD §9.2)."""

    text: str
    risk_level: str
    category: str | None = None


class PermissionPromptProjection(Contract):
    prompt_id: str
    tool_name: str
    summary: str
    """The command (if any) and why it asks: shown as exact text (``display.shown``, IMPL-UI-7),
    as is every segment's text, never as a terminal would render it."""
    risk_level: str
    task_id: str | None = None
    agent_id: str | None = None
    tool_run_id: str | None = None
    segments: list[PermissionSegmentProjection] = Field(default_factory=empty_list)
    scopes: list[PermissionAnswer] = Field(default_factory=lambda: list(PERMISSION_ANSWERS))
    """The answers offered; an answer outside this list is not shown."""
    requested_at: str | None = None


class BlockerProjection(Contract):
    task_id: str
    reason: str
    needs: str = "other"
    options: list[str] = Field(default_factory=empty_list)
    timestamp: str | None = None


class UsagePart(Contract):
    """What one kind of caller's model calls used (a line of ``/cost``)."""

    purpose: str
    """``main_agent``, ``designer``, ``compaction`` or ``task``."""
    calls: int = 0
    tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = 0.0


def list_of_usage_parts() -> list[UsagePart]:
    return []


class TotalsProjection(Contract):
    tasks: int = 0
    running: int = 0
    completed: int = 0
    failed: int = 0
    blocked: int = 0
    cancelled: int = 0
    turns: int = 0
    tokens: int = 0
    """Tokens in and out of every model call of the session: tasks, Main Agent, designer,
    compaction (the usage ledger, IMPL-USAGE-1)."""
    cost_usd: float | None = 0.0
    """``None`` when a call's model has no known price (shown "unknown", never $0.00)."""
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    calls: int = 0
    parts: list[UsagePart] = Field(default_factory=list_of_usage_parts)
    """The sums per purpose (``main_agent``, ``designer``, ``compaction``, ``task``)."""


class ProjectionSnapshot(Contract):
    revision: int = 0
    """Increases by one for every event that changed the projection."""
    session: SessionProjection | None = None
    main_agent: MainAgentProjection = Field(default_factory=MainAgentProjection)
    messages: list[MessageProjection] = Field(default_factory=empty_list)
    tasks: list[TaskProjection] = Field(default_factory=empty_list)
    waves: list[WaveProjection] = Field(default_factory=empty_list)
    agents: list[AgentProjection] = Field(default_factory=empty_list)
    tool_runs: list[ToolRunProjection] = Field(default_factory=empty_list)
    command_runs: list[CommandRunProjection] = Field(default_factory=empty_list)
    artifacts: list[ArtifactProjection] = Field(default_factory=empty_list)
    diffs: list[DiffProjection] = Field(default_factory=empty_list)
    evidence: list[EvidenceProjection] = Field(default_factory=empty_list)
    permission_prompts: list[PermissionPromptProjection] = Field(default_factory=empty_list)
    """Open prompts only (a resolved prompt leaves the list)."""
    blockers: list[BlockerProjection] = Field(default_factory=empty_list)
    totals: TotalsProjection = Field(default_factory=TotalsProjection)
    last_event_at: str | None = None


UiCommandKind = Literal[
    "user_message",
    "interrupt",
    "cancel_task",
    "cancel_run",
    "permission_response",
    "confirm",
    "direct",
    "direct_done",
    "compact",
    "switch_model",
    "plan",
    "quit",
    "replay_pause",
    "replay_step",
    "replay_back",
    "replay_speed",
]


class UiCommand(Contract):
    """One decision of the person at the console.

    ``user_message`` (``text``); ``interrupt`` (Esc: the Main Agent's current turn only);
    ``cancel_task`` (``task_id``: exactly that task); ``cancel_run`` (Ctrl-C: cooperative, or
    ``force`` on the second press); ``permission_response`` (``prompt_id``, ``decision``);
    ``confirm`` (``confirmed`` answers the Main Agent's CONFIRMING question); ``direct``
    (``/direct [text]``) and ``direct_done`` (``/done``); ``compact`` (``/compact``: compact the
    session's conversation now); ``switch_model`` (``text``: ``provider/model`` for what comes
    next); ``plan`` (``text``: a batch file, checked and planned as ``air run --plan``);
    ``quit`` (``force`` when the person confirmed quitting with work running);
    ``replay_pause`` (toggle), ``replay_step``, ``replay_back`` (one event back) and
    ``replay_speed`` (``speed``) drive a read-only replay player.
    """

    kind: UiCommandKind
    prompt_id: str | None = None
    decision: PermissionAnswer | None = None
    task_id: str | None = None
    text: str | None = None
    confirmed: bool | None = None
    force: bool = False
    speed: float | None = Field(default=None, gt=0)


class ProjectionSubscription(Protocol):
    """A change subscription; ``close()`` stops further notifications."""

    def close(self) -> None: ...


class ProjectionClient(Protocol):
    """What the console reads (in process in v1, SDD §13.2).

    ``subscribe(handler)`` calls ``handler(revision)`` synchronously after every change; the
    handler must be cheap and never block (the console marks itself dirty and pulls
    ``snapshot()`` at its own bounded frame rate).
    """

    def snapshot(self) -> ProjectionSnapshot: ...

    def subscribe(self, handler: Callable[[int], None]) -> ProjectionSubscription: ...


class UiCommandChannel(Protocol):
    """Where the console sends every decision of the person (implemented in ``air.agents``)."""

    async def send(self, command: UiCommand) -> None: ...
