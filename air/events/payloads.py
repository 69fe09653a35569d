"""Event payload schemas: one frozen pydantic model per event type and version (baselines §A.7).

Owns the payload models of every event air records or streams, the ``PAYLOADS`` table keyed by
``(type, version)``, the ``PERSISTENCE`` policy per type (durable or ephemeral) and
``EPHEMERAL_TYPES``. Every model is version 1 (IMPL-EVT-1). A payload change is a new version:
add a new model and a new ``PAYLOADS`` entry, never edit a published one.

Ids in payloads are plain strings; the projection (``air.events.projection``) decides which
domain rows they touch. Failure payloads always carry ``error: AirError``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from air.contracts.artifact import ArtifactType, MemoryType
from air.contracts.error import AirError
from air.contracts.event import EntityType, EventPersistence
from air.contracts.evidence import EvidenceKind
from air.contracts.ids import Contract
from air.contracts.permission import PermissionDecision, RiskLevel
from air.contracts.runtime import AgentType
from air.contracts.task import (
    DependencySource,
    DependencyType,
    TaskDependencySpec,
    TaskSpec,
    WorkspaceStrategy,
)
from air.contracts.tool import DiagnosticSeverity
from air.contracts.worker_result import BlockerReport, WorkerResult

__all__ = [
    "DURABLE_TYPES",
    "EPHEMERAL_TYPES",
    "PAYLOADS",
    "PERSISTENCE",
    "AgentCancelledPayload",
    "AgentCompletedPayload",
    "AgentFailedPayload",
    "AgentHeartbeatPayload",
    "AgentLostPayload",
    "AgentStartedPayload",
    "ArchitectureImpactCompletedPayload",
    "ArchitecturePlanUpdatedPayload",
    "ArtifactCreatedPayload",
    "AssistantMessageCreatedPayload",
    "AssistantMessageDeltaPayload",
    "AssistantMessageFailedPayload",
    "AssistantMessageStartedPayload",
    "CapabilityStateChangedPayload",
    "CommandCompletedPayload",
    "CommandFailedPayload",
    "CommandStartedPayload",
    "CommandStreamDeltaPayload",
    "CompactionCompletedPayload",
    "CompactionFailedPayload",
    "CompactionRequestedPayload",
    "CompactionStartedPayload",
    "DebugRecordCreatedPayload",
    "DependencyPayload",
    "DiagnosticCreatedPayload",
    "DoctorIssueFoundPayload",
    "DoctorRunCompletedPayload",
    "DoctorRunStartedPayload",
    "EventPayload",
    "EvidenceCreatedPayload",
    "HudFrameRenderedPayload",
    "MainAgentStateChangedPayload",
    "MemoryArchivedPayload",
    "MemoryCandidateCreatedPayload",
    "MemoryPromotedPayload",
    "PermissionDecisionRecordedPayload",
    "PermissionPromptRequestedPayload",
    "PermissionPromptResolvedPayload",
    "RequirementChangedPayload",
    "SessionArchivedPayload",
    "SessionCreatedPayload",
    "SessionDeletedPayload",
    "SummaryCreatedPayload",
    "TaskBlockedPayload",
    "TaskCancelledPayload",
    "TaskCompletedPayload",
    "TaskCreatedPayload",
    "TaskFailedPayload",
    "TaskInterruptedPayload",
    "TaskProgressPayload",
    "TaskStartedPayload",
    "ToolCancelledPayload",
    "ToolCompletedPayload",
    "ToolFailedPayload",
    "ToolProgressPayload",
    "ToolStartedPayload",
    "UserMessageCreatedPayload",
    "WorkspaceAbandonedPayload",
    "WorkspaceCleanedPayload",
    "WorkspaceCreatedPayload",
    "WorkspaceMergeCompletedPayload",
    "WorkspaceMergeConflictedPayload",
    "WorkspaceMergeStartedPayload",
    "payload_model",
]


class EventPayload(Contract):
    """Base of every payload model: frozen, unknown fields are an error."""


# --- session ------------------------------------------------------------------------------


class SessionCreatedPayload(EventPayload):
    session_id: str
    project_id: str
    title: str | None = None
    mode: Literal["interactive", "headless"] = "interactive"
    model_provider_id: str | None = None
    model_id: str | None = None


class SessionArchivedPayload(EventPayload):
    session_id: str
    reason: str | None = None


class SessionDeletedPayload(EventPayload):
    session_id: str
    reason: str | None = None


# --- messages -----------------------------------------------------------------------------


class UserMessageCreatedPayload(EventPayload):
    message_id: str
    content: list[dict[str, Any]]
    """Anthropic canonical content blocks, e.g. ``[{"type": "text", "text": "..."}]``."""
    task_id: str | None = None


class AssistantMessageStartedPayload(EventPayload):
    message_id: str
    agent_id: str | None = None
    task_id: str | None = None
    model_id: str | None = None


class AssistantMessageDeltaPayload(EventPayload):
    """Ephemeral: a piece of streamed assistant text."""

    message_id: str
    index: int = 0
    """Content block index the delta belongs to."""
    text: str


class AssistantMessageCreatedPayload(EventPayload):
    message_id: str
    content: list[dict[str, Any]]
    agent_id: str | None = None
    task_id: str | None = None
    model_id: str | None = None
    stop_reason: str | None = None
    usage: dict[str, Any] | None = None


class AssistantMessageFailedPayload(EventPayload):
    message_id: str
    error: AirError
    failure_artifact_id: str | None = None


# --- agents -------------------------------------------------------------------------------


class AgentStartedPayload(EventPayload):
    agent_id: str
    task_id: str | None = None
    agent_type: AgentType
    status: Literal["running", "starting"]
    """Exactly one status: ``running`` after the handshake (normal), ``starting`` before it."""
    pid: int | None = None
    pid_start_time: str | None = None
    """Process start time as read from /proc, for PID-identity checks at recovery."""
    boot_id: str | None = None


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


class AgentFailedPayload(EventPayload):
    agent_id: str
    task_id: str | None = None
    exit_code: int | None = None
    error: AirError


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


class DependencyPayload(EventPayload):
    """One ``task_dependencies`` row as carried by ``task.created``."""

    depends_on_task_id: str
    dependency_type: DependencyType = DependencyType.HARD
    reason: str | None = None
    source: DependencySource = DependencySource.SCHEDULER

    @classmethod
    def from_spec(cls, spec: TaskDependencySpec) -> DependencyPayload:
        """Build a dependency row from a TaskSpec's dependency entry."""
        return cls(
            depends_on_task_id=spec.depends_on_task_id,
            dependency_type=spec.dependency_type,
            reason=spec.reason,
            source=spec.source or DependencySource.SCHEDULER,
        )


class TaskCreatedPayload(EventPayload):
    task_spec: TaskSpec
    dependencies: list[DependencyPayload] = Field(default_factory=list)
    """The ``task_dependencies`` rows to insert (usually derived from ``task_spec``)."""
    origin_message_id: str | None = None
    parent_task_id: str | None = None


class TaskDependencyAddedPayload(DependencyPayload):
    """A dependency edge added after ``task.created`` (e.g. a conflict edge the planner infers)."""

    task_id: str


class TaskStartedPayload(EventPayload):
    task_id: str
    agent_id: str
    agent_type: AgentType
    attempt_index: int
    workspace_id: str | None = None


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


# --- tools --------------------------------------------------------------------------------


class ToolStartedPayload(EventPayload):
    tool_run_id: str
    tool_name: str
    task_id: str | None = None
    agent_id: str | None = None
    origin_message_id: str | None = None
    input: dict[str, Any] = Field(default_factory=dict)
    """The tool arguments, already passed through the SecretRedactor."""


class ToolProgressPayload(EventPayload):
    """Ephemeral: a streaming tool's progress item."""

    tool_run_id: str
    kind: Literal["progress", "stdout", "stderr", "text_delta", "provider_event"] = "progress"
    data: Any = None


class ToolCompletedPayload(EventPayload):
    tool_run_id: str
    output_summary: str | None = None
    artifact_ids: list[str] = Field(default_factory=list)
    evidence_ref_ids: list[str] = Field(default_factory=list)
    duration_ms: int = 0


class ToolFailedPayload(EventPayload):
    tool_run_id: str
    error: AirError
    artifact_ids: list[str] = Field(default_factory=list)
    duration_ms: int = 0


class ToolCancelledPayload(EventPayload):
    tool_run_id: str
    reason: str | None = None
    duration_ms: int = 0


# --- commands -----------------------------------------------------------------------------


class CommandStartedPayload(EventPayload):
    command_run_id: str
    command: str
    cwd: str
    task_id: str | None = None
    agent_id: str | None = None
    tool_run_id: str | None = None
    origin_message_id: str | None = None


class CommandStreamDeltaPayload(EventPayload):
    """Ephemeral: a chunk of a running command's stdout or stderr."""

    command_run_id: str
    data: str


class CommandCompletedPayload(EventPayload):
    command_run_id: str
    exit_code: int
    duration_ms: int = 0
    stdout_artifact_id: str | None = None
    stderr_artifact_id: str | None = None
    diagnostic_ids: list[str] = Field(default_factory=list)


class CommandFailedPayload(EventPayload):
    command_run_id: str
    exit_code: int | None = None
    duration_ms: int = 0
    stdout_artifact_id: str | None = None
    stderr_artifact_id: str | None = None
    diagnostic_ids: list[str] = Field(default_factory=list)
    error: AirError
    cancelled: bool = False
    """True when the run was cancelled (then the derived status is ``cancelled``)."""


# --- artifacts, diagnostics, evidence -----------------------------------------------------


class ArtifactCreatedPayload(EventPayload):
    artifact_id: str
    uri: str
    path: str
    type: ArtifactType
    sha256: str | None = None
    size_bytes: int | None = None
    mime_type: str | None = None
    slug: str
    task_id: str | None = None
    agent_id: str | None = None
    tool_run_id: str | None = None
    command_run_id: str | None = None
    created_at: str


class DiagnosticCreatedPayload(EventPayload):
    diagnostic_id: str
    severity: DiagnosticSeverity
    message: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    code: str | None = None
    tool: str | None = None
    semantic_signature: str
    command_run_id: str | None = None
    artifact_id: str | None = None
    task_id: str | None = None


class EvidenceCreatedPayload(EventPayload):
    evidence_ref_id: str
    kind: EvidenceKind
    ref: str
    claim: str
    location_json: Any | None = None
    entity_type: EntityType
    entity_id: str


# --- context / summaries ------------------------------------------------------------------


class CompactionRequestedPayload(EventPayload):
    accepted: bool
    reason: str | None = None
    task_spec: TaskSpec | None = None
    """The compaction task (type ``compact``) inserted into ``tasks`` when accepted."""


class CompactionStartedPayload(EventPayload):
    task_id: str
    agent_id: str | None = None


class CompactionCompletedPayload(EventPayload):
    task_id: str
    summary_id: str


class CompactionFailedPayload(EventPayload):
    task_id: str
    error: AirError
    blocked: bool = False
    """True: the compaction task ends ``blocked`` instead of ``failed``."""


class SummaryCreatedPayload(EventPayload):
    summary_id: str
    content: str
    artifact_id: str | None = None
    task_id: str | None = None
    covers_until_message_id: str | None = None
    token_count: int | None = None


# --- permissions --------------------------------------------------------------------------


class PermissionDecisionRecordedPayload(EventPayload):
    decision: PermissionDecision
    tool_name: str
    tool_run_id: str | None = None
    task_id: str | None = None
    agent_id: str | None = None
    subject: str | None = None
    """What was judged: a path or a command segment (redacted)."""


class PermissionPromptRequestedPayload(EventPayload):
    prompt_id: str
    tool_name: str
    summary: str
    risk_level: RiskLevel
    tool_run_id: str | None = None
    task_id: str | None = None
    agent_id: str | None = None


class PermissionPromptResolvedPayload(EventPayload):
    prompt_id: str
    decision: Literal["allow_once", "allow_task", "allow_session", "allow_project", "deny"]
    resolved_by: Literal["user", "policy", "timeout", "headless"] = "user"


# --- doctor (IMPL names) ------------------------------------------------------------------


class DoctorRunStartedPayload(EventPayload):
    doctor_run_id: str
    checks: list[str] = Field(default_factory=list)


class DoctorIssueFoundPayload(EventPayload):
    doctor_run_id: str
    check: str
    severity: Literal["info", "warning", "error"]
    message: str
    user_action: str | None = None


class DoctorRunCompletedPayload(EventPayload):
    doctor_run_id: str
    ok: bool
    issue_count: int = 0
    report_artifact_id: str | None = None


# --- requirements / architecture ----------------------------------------------------------


class RequirementChangedPayload(EventPayload):
    requirement_id: str
    description: str
    change_class: Literal["execution", "possible_design", "design_interface_goal"]
    impacted_task_ids: list[str] = Field(default_factory=list)
    origin_message_id: str | None = None


class ArchitecturePlanUpdatedPayload(EventPayload):
    plan_ref: str
    summary: str
    artifact_ids: list[str] = Field(default_factory=list)


class ArchitectureImpactCompletedPayload(EventPayload):
    result_class: Literal[
        "silent_continue", "requires_user_confirmation", "requires_replan", "reject_or_escalate"
    ]
    summary: str
    requirement_id: str | None = None
    impacted_task_ids: list[str] = Field(default_factory=list)


# --- main agent ---------------------------------------------------------------------------


class MainAgentStateChangedPayload(EventPayload):
    """One transition of the Main Agent's state machine (SDD §20.1, IMPL-AGENT-1)."""

    from_state: str
    to_state: str
    trigger: str
    message_id: str | None = None
    """The user message that caused it, when one did."""
    reason: str | None = None


# --- workspaces ---------------------------------------------------------------------------


class WorkspaceCreatedPayload(EventPayload):
    workspace_id: str
    task_id: str | None = None
    agent_id: str | None = None
    strategy: WorkspaceStrategy
    path: str
    branch: str | None = None
    base_commit: str | None = None


class WorkspaceMergeStartedPayload(EventPayload):
    workspace_id: str
    target_ref: str | None = None


class WorkspaceMergeCompletedPayload(EventPayload):
    workspace_id: str
    merge_commit: str | None = None


class WorkspaceMergeConflictedPayload(EventPayload):
    workspace_id: str
    conflicted_paths: list[str] = Field(default_factory=list)
    kept_branch: str | None = None


class WorkspaceAbandonedPayload(EventPayload):
    """IMPL (baselines §A.22 gap 13): the active/conflicted → abandoned transition."""

    workspace_id: str
    reason: str | None = None
    kept_branch: str | None = None


class WorkspaceCleanedPayload(EventPayload):
    workspace_id: str


# --- memory / debug knowledge -------------------------------------------------------------


class MemoryCandidateCreatedPayload(EventPayload):
    candidate_id: str
    memory_type: MemoryType
    content: str
    task_id: str | None = None


class MemoryPromotedPayload(EventPayload):
    """Fixed by SDD §18.4: exactly {candidate_id, target_ref, promoted_by, summary}."""

    candidate_id: str
    target_ref: str
    promoted_by: str
    summary: str


class MemoryArchivedPayload(EventPayload):
    memory_id: str
    target_ref: str | None = None
    reason: str | None = None


class DebugRecordCreatedPayload(EventPayload):
    debug_record_id: str
    failure_signature: str
    task_id: str | None = None


class CapabilityStateChangedPayload(EventPayload):
    """A capability moved along its lifecycle (SDD §20.6; IMPL-CPP-5)."""

    capability_id: str
    version: str
    trust: str
    from_state: str | None = None
    to_state: str
    reason: str | None = None
    tools: list[str] = Field(default_factory=list)


# --- HUD ----------------------------------------------------------------------------------


class HudFrameRenderedPayload(EventPayload):
    """Ephemeral: the console rendered a frame (for frame-rate diagnostics)."""

    frame: int
    render_ms: float = 0.0


# --- tables -------------------------------------------------------------------------------

_V1: dict[str, type[EventPayload]] = {
    "session.created": SessionCreatedPayload,
    "session.archived": SessionArchivedPayload,
    "session.deleted": SessionDeletedPayload,
    "user.message.created": UserMessageCreatedPayload,
    "assistant.message.started": AssistantMessageStartedPayload,
    "assistant.message.delta": AssistantMessageDeltaPayload,
    "assistant.message.created": AssistantMessageCreatedPayload,
    "assistant.message.failed": AssistantMessageFailedPayload,
    "agent.started": AgentStartedPayload,
    "agent.heartbeat": AgentHeartbeatPayload,
    "agent.completed": AgentCompletedPayload,
    "agent.failed": AgentFailedPayload,
    "agent.lost": AgentLostPayload,
    "agent.cancelled": AgentCancelledPayload,
    "task.created": TaskCreatedPayload,
    "task.dependency.added": TaskDependencyAddedPayload,
    "task.started": TaskStartedPayload,
    "task.progress": TaskProgressPayload,
    "task.completed": TaskCompletedPayload,
    "task.blocked": TaskBlockedPayload,
    "task.failed": TaskFailedPayload,
    "task.cancelled": TaskCancelledPayload,
    "task.interrupted": TaskInterruptedPayload,
    "tool.started": ToolStartedPayload,
    "tool.progress": ToolProgressPayload,
    "tool.completed": ToolCompletedPayload,
    "tool.failed": ToolFailedPayload,
    "tool.cancelled": ToolCancelledPayload,
    "command.started": CommandStartedPayload,
    "command.stdout.delta": CommandStreamDeltaPayload,
    "command.stderr.delta": CommandStreamDeltaPayload,
    "command.completed": CommandCompletedPayload,
    "command.failed": CommandFailedPayload,
    "artifact.created": ArtifactCreatedPayload,
    "diagnostic.created": DiagnosticCreatedPayload,
    "evidence.created": EvidenceCreatedPayload,
    "context.compaction.requested": CompactionRequestedPayload,
    "context.compaction.started": CompactionStartedPayload,
    "context.compaction.completed": CompactionCompletedPayload,
    "context.compaction.failed": CompactionFailedPayload,
    "summary.created": SummaryCreatedPayload,
    "permission.decision.recorded": PermissionDecisionRecordedPayload,
    "permission.prompt.requested": PermissionPromptRequestedPayload,
    "permission.prompt.resolved": PermissionPromptResolvedPayload,
    "doctor.run.started": DoctorRunStartedPayload,
    "doctor.issue.found": DoctorIssueFoundPayload,
    "doctor.run.completed": DoctorRunCompletedPayload,
    "requirement.changed": RequirementChangedPayload,
    "architecture.plan.updated": ArchitecturePlanUpdatedPayload,
    "architecture.impact.completed": ArchitectureImpactCompletedPayload,
    "main_agent.state.changed": MainAgentStateChangedPayload,
    "workspace.created": WorkspaceCreatedPayload,
    "workspace.merge.started": WorkspaceMergeStartedPayload,
    "workspace.merge.completed": WorkspaceMergeCompletedPayload,
    "workspace.merge.conflicted": WorkspaceMergeConflictedPayload,
    "workspace.abandoned": WorkspaceAbandonedPayload,
    "workspace.cleaned": WorkspaceCleanedPayload,
    "memory.candidate.created": MemoryCandidateCreatedPayload,
    "memory.promoted": MemoryPromotedPayload,
    "memory.archived": MemoryArchivedPayload,
    "debug.record.created": DebugRecordCreatedPayload,
    "capability.state.changed": CapabilityStateChangedPayload,
    "hud.frame.rendered": HudFrameRenderedPayload,
}

EPHEMERAL_TYPES: frozenset[str] = frozenset(
    {
        "agent.heartbeat",
        "task.progress",
        "assistant.message.delta",
        "tool.progress",
        "command.stdout.delta",
        "command.stderr.delta",
        "hud.frame.rendered",
    }
)
"""The seven ephemeral types (SDD §5.5): published on the bus, never stored."""

DURABLE_TYPES: frozenset[str] = frozenset(t for t in _V1 if t not in EPHEMERAL_TYPES)

PAYLOADS: dict[tuple[str, int], type[BaseModel]] = {(t, 1): m for t, m in _V1.items()}
"""Payload model per (event type, version)."""

PERSISTENCE: dict[str, EventPersistence] = {
    t: (EventPersistence.EPHEMERAL if t in EPHEMERAL_TYPES else EventPersistence.DURABLE)
    for t in _V1
}
"""Persistence policy per event type (the same for every version of a type)."""


def payload_model(event_type: str, version: int = 1) -> type[BaseModel] | None:
    """Return the payload model of ``(event_type, version)``, or None when unknown."""
    return PAYLOADS.get((event_type, version))
