"""Event payload models, group ``ends`` (``air.events.payloads``; IMPL-BOOT-7).

What a run records while its work runs and when it ends: an agent's heartbeat and end, a task's
progress and end (with the ``WorkerResult`` it carries), a workspace's merge, abandonment and
clean-up, a session archived or deleted, and each model call's usage (the usage ledger).
"""

from typing import Literal

from pydantic import Field

from air.contracts.error import AirError
from air.contracts.ids import empty_list
from air.contracts.worker_result import BlockerReport, WorkerResult
from air.events.payloads.start import EventPayload

__all__ = [
    "AgentCancelledPayload",
    "AgentCheckpointedPayload",
    "AgentCompletedPayload",
    "AgentFailedPayload",
    "AgentHeartbeatPayload",
    "AgentLostPayload",
    "CheckpointUsage",
    "ModelUsageRecordedPayload",
    "SessionArchivedPayload",
    "SessionDeletedPayload",
    "TaskBlockedPayload",
    "TaskCancelledPayload",
    "TaskCompletedPayload",
    "TaskFailedPayload",
    "TaskInterruptedPayload",
    "TaskProgressPayload",
    "WorkspaceAbandonedPayload",
    "WorkspaceCleanedPayload",
    "WorkspaceMergeCompletedPayload",
    "WorkspaceMergeConflictedPayload",
    "WorkspaceMergeStartedPayload",
]


# --- session ------------------------------------------------------------------------------


class SessionArchivedPayload(EventPayload):
    session_id: str
    reason: str | None = None


class SessionDeletedPayload(EventPayload):
    session_id: str
    reason: str | None = None


# --- agents -------------------------------------------------------------------------------


class AgentHeartbeatPayload(EventPayload):
    """Ephemeral: the agent is alive (turn and token counters)."""

    agent_id: str
    task_id: str | None = None
    state: str
    turn: int = 0
    tokens: int = 0


class AgentCompletedPayload(EventPayload):
    agent_id: str
    task_id: str | None = None
    exit_code: int | None = None
    worker_result: WorkerResult | None = None
    """The result the worker returned (checked and redacted): durable before anything is done
    with it, so a crash before its task's end collects it instead of running the task again."""


class AgentFailedPayload(EventPayload):
    agent_id: str
    task_id: str | None = None
    exit_code: int | None = None
    error: AirError


class CheckpointUsage(EventPayload):
    """What an attempt had spent when it checkpointed (the ``WorkerResult.usage`` counters)."""

    turns: int = Field(default=0, ge=0)
    tokens: int = Field(default=0, ge=0)
    cache_read_tokens: int = Field(default=0, ge=0)
    cache_write_tokens: int = Field(default=0, ge=0)
    cost_usd: float | None = Field(default=0.0, ge=0)
    """``None``: a turn's price was unknown (the spend is then not known)."""


class AgentCheckpointedPayload(EventPayload):
    """IMPL-CKPT-1: a worker's lightweight checkpoint, made durable (runner invariant 11).

    State, usage, process identity and pointers only; never the transcript (the terminal
    event carries the result, once). A retried attempt of the task starts from the last one.
    """

    agent_id: str
    task_id: str
    attempt_index: int = Field(ge=0)
    turn: int = Field(default=0, ge=0)
    state: str = Field(max_length=40)
    reason: str | None = Field(default=None, max_length=80)
    usage: CheckpointUsage
    changed_files: list[str] = Field(default_factory=empty_list, max_length=50)
    """Pointers: the paths the attempt changed so far (at most 50)."""
    pid: int | None = None
    pid_start_time: str | None = None
    """The worker's identity (as ``agent.started`` records it)."""


class AgentLostPayload(EventPayload):
    agent_id: str
    task_id: str | None = None
    error: AirError


class AgentCancelledPayload(EventPayload):
    agent_id: str
    task_id: str | None = None
    exit_code: int | None = None
    reason: str | None = None


# --- tasks --------------------------------------------------------------------------------


class TaskProgressPayload(EventPayload):
    """Ephemeral: free-form progress of a running task."""

    task_id: str
    agent_id: str | None = None
    message: str
    percent: float | None = None


class TaskCompletedPayload(EventPayload):
    task_id: str
    agent_id: str | None = None
    attempt_index: int | None = None
    worker_result: WorkerResult | None = None


class TaskBlockedPayload(EventPayload):
    task_id: str
    agent_id: str | None = None
    attempt_index: int | None = None
    reason: str
    blocker: BlockerReport | None = None
    worker_result: WorkerResult | None = None


class TaskFailedPayload(EventPayload):
    task_id: str
    agent_id: str | None = None
    attempt_index: int | None = None
    error: AirError
    worker_result: WorkerResult | None = None


class TaskCancelledPayload(EventPayload):
    task_id: str
    agent_id: str | None = None
    attempt_index: int | None = None
    reason: str | None = None


class TaskInterruptedPayload(EventPayload):
    task_id: str
    agent_id: str | None = None
    attempt_index: int | None = None
    reason: str | None = None
    resumable: bool = True


# --- workspaces ---------------------------------------------------------------------------


class WorkspaceMergeStartedPayload(EventPayload):
    workspace_id: str
    target_ref: str | None = None


class WorkspaceMergeCompletedPayload(EventPayload):
    workspace_id: str
    merge_commit: str | None = None
    left_out: list[str] = Field(default_factory=empty_list, max_length=20)
    """What git ignores that the task left in its worktree: not merged (``MergeResult``)."""
    left_out_count: int = Field(default=0, ge=0)
    left_out_dir: str | None = None
    """Where a copy of them is kept (``air.workspace.left_out``), None when none could be."""


class WorkspaceMergeConflictedPayload(EventPayload):
    workspace_id: str
    conflicted_paths: list[str] = Field(default_factory=empty_list)
    kept_branch: str | None = None


class WorkspaceAbandonedPayload(EventPayload):
    """IMPL (baselines §A.22 gap 13): the active/conflicted → abandoned transition."""

    workspace_id: str
    reason: str | None = None
    kept_branch: str | None = None


class WorkspaceCleanedPayload(EventPayload):
    workspace_id: str


# --- usage --------------------------------------------------------------------------------


class ModelUsageRecordedPayload(EventPayload):
    """IMPL-USAGE-1: one model call that completed, whoever made it (the Main Agent, the
    designer, compaction, a worker's turn served by the parent): the usage ledger every reader
    sums (HUD, ``/cost``, ``air report``, the headless summary)."""

    purpose: Literal["main_agent", "designer", "compaction", "task"]
    """``task`` when a task's worker made the call (``task_id`` says which)."""
    provider_id: str
    model_id: str
    agent_id: str | None = None
    task_id: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cost_usd: float | None = None
    """USD from the model's price; ``None`` when the price is unknown (never 0)."""
