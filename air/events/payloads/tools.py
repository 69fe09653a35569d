"""Event payload models, group ``tools`` (``air.events.payloads``; IMPL-BOOT-7).

What tools and commands do: tool runs, command runs and their streams, the permission
decisions and prompts around them, and the artifacts, diagnostics and evidence they leave.
"""

from typing import Any, Literal

from pydantic import Field

from air.contracts.artifact import ArtifactType
from air.contracts.error import AirError
from air.contracts.event import EntityType
from air.contracts.evidence import EvidenceKind
from air.contracts.ids import empty_list
from air.contracts.permission import RiskLevel
from air.contracts.permission_records import PermissionDecision
from air.contracts.tool import DiagnosticSeverity
from air.events.payloads.start import EventPayload

__all__ = [
    "ArtifactCreatedPayload",
    "CommandCompletedPayload",
    "CommandFailedPayload",
    "CommandStartedPayload",
    "CommandStreamDeltaPayload",
    "DiagnosticCreatedPayload",
    "EvidenceCreatedPayload",
    "PermissionDecisionRecordedPayload",
    "PermissionPromptRequestedPayload",
    "PermissionPromptResolvedPayload",
    "ToolCancelledPayload",
    "ToolCompletedPayload",
    "ToolFailedPayload",
    "ToolProgressPayload",
    "ToolStartedPayload",
]


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
    artifact_ids: list[str] = Field(default_factory=empty_list)
    evidence_ref_ids: list[str] = Field(default_factory=empty_list)
    duration_ms: int = 0


class ToolFailedPayload(EventPayload):
    tool_run_id: str
    error: AirError
    artifact_ids: list[str] = Field(default_factory=empty_list)
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
    diagnostic_ids: list[str] = Field(default_factory=empty_list)


class CommandFailedPayload(EventPayload):
    command_run_id: str
    exit_code: int | None = None
    duration_ms: int = 0
    stdout_artifact_id: str | None = None
    stderr_artifact_id: str | None = None
    diagnostic_ids: list[str] = Field(default_factory=empty_list)
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
