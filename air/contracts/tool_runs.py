"""What one tool call runs with and hands back (contracts §12, §21): ``ToolExecutionContext``,
``ToolResultEnvelope``, ``ToolEvent`` and ``Diagnostic``.

Its users import it where they use one of its models; a run builds none of them before its first
model request (IMPL-BOOT-12).
"""

from typing import Any, Literal

from pydantic import Field

from air.contracts.artifact_records import ArtifactRef
from air.contracts.error import AirError
from air.contracts.evidence_records import EvidenceRef
from air.contracts.ids import AgentID, Contract, SessionID, TaskID, ToolRunID, empty_list
from air.contracts.permission_records import PermissionDecision
from air.contracts.runtime import PermissionTemplate
from air.contracts.tool import DiagnosticSeverity, ToolResultStatus

__all__ = ["Diagnostic", "ToolEvent", "ToolExecutionContext", "ToolResultEnvelope"]


class ToolExecutionContext(Contract):
    session_id: SessionID
    task_id: TaskID | None = None
    agent_id: AgentID | None = None
    project_root: str
    workspace_root: str
    """Where the tool works: the project root or the task's worktree / copy."""
    permission_template: PermissionTemplate = PermissionTemplate.EXECUTOR
    origin_message_id: str | None = None
    write_area: list[str] | None = None
    allowed_paths: list[str] | None = None
    denied_paths: list[str] | None = None
    headless: bool = False
    network_granted: bool = False


class ToolResultEnvelope(Contract):
    tool_run_id: ToolRunID
    tool_name: str
    status: ToolResultStatus
    output: Any | None = None
    error: AirError | None = None
    decision: PermissionDecision | None = None
    artifacts: list[ArtifactRef] = Field(default_factory=empty_list)
    evidence_refs: list[EvidenceRef] = Field(default_factory=empty_list)
    duration_ms: int = 0
    truncated: bool = False


class ToolEvent(Contract):
    """A progress item of a streaming tool; the stream ends with one ToolResultEnvelope."""

    tool_run_id: ToolRunID
    kind: Literal["progress", "stdout", "stderr", "text_delta", "provider_event"]
    data: Any


class Diagnostic(Contract):
    diagnostic_id: str
    severity: DiagnosticSeverity
    message: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    code: str | None = None
    tool: str | None = None
    semantic_signature: str
