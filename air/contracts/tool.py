"""Tool contracts: definitions, execution context, result envelopes and diagnostics.

Owns: ``ToolCategory``, ``ToolPermissionSpec``, ``ToolDefinition``, ``ToolExecutionContext``,
``ToolResultEnvelope``, ``ToolEvent``, ``ToolRunStatus`` and the diagnostics symbols merged here by
SDD §3 (``Diagnostic``, ``DiagnosticSeverity``) (contracts §12, §21).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import Field

from air.contracts.artifact import ArtifactRef
from air.contracts.error import AirError
from air.contracts.evidence import EvidenceRef
from air.contracts.ids import AgentID, Contract, JsonObject, SessionID, TaskID, ToolRunID
from air.contracts.permission import PathPolicy, PermissionDecision
from air.contracts.runtime import PermissionTemplate

__all__ = [
    "Diagnostic",
    "DiagnosticSeverity",
    "ToolCategory",
    "ToolDefinition",
    "ToolEvent",
    "ToolExecutionContext",
    "ToolPermissionSpec",
    "ToolResultEnvelope",
    "ToolResultStatus",
    "ToolRunStatus",
]


class ToolCategory(StrEnum):
    FILESYSTEM = "filesystem"
    SHELL = "shell"
    BUILD = "build"
    TEST = "test"
    DEBUG = "debug"
    STATIC_ANALYSIS = "static_analysis"
    GUI = "gui"
    NETWORK = "network"
    MEMORY = "memory"
    PROJECT = "project"
    INTERNAL = "internal"


class ToolRunStatus(StrEnum):
    RUNNING = "running"
    OK = "ok"
    ERROR = "error"
    CANCELLED = "cancelled"


ToolResultStatus = Literal["ok", "error", "denied", "blocked", "cancelled"]


class ToolPermissionSpec(Contract):
    read_paths: PathPolicy | None = None
    write_paths: PathPolicy | None = None
    execute: bool = False
    network: bool = False
    system_sensitive: bool = False


class ToolDefinition(Contract):
    name: str
    version: int = 1
    description: str
    input_schema: JsonObject
    output_schema: JsonObject = Field(default_factory=dict)
    category: ToolCategory
    permissions: ToolPermissionSpec = Field(default_factory=ToolPermissionSpec)
    streaming: bool = False


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
    artifacts: list[ArtifactRef] = Field(default_factory=list)
    evidence_refs: list[EvidenceRef] = Field(default_factory=list)
    duration_ms: int = 0
    truncated: bool = False


class ToolEvent(Contract):
    """A progress item of a streaming tool; the stream ends with one ToolResultEnvelope."""

    tool_run_id: ToolRunID
    kind: Literal["progress", "stdout", "stderr", "text_delta", "provider_event"]
    data: Any


class DiagnosticSeverity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


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
