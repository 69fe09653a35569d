"""The records of a permission check (SDD §3 merges them into ``air.contracts.permission``):
``DeclaredPermissions``, ``PermissionRequestContext``, ``PathRiskClassification``,
``CommandSegment``, ``CommandRiskAnalysis``, ``PermissionDecision``, ``PermissionRecordResult``,
``PermissionPromptRequest`` and ``PermissionPromptResponse``.

Its users import it where they use one of its models; a run builds none of them before its first
model request (IMPL-BOOT-12).
"""

from typing import Self

from pydantic import Field

from air.contracts.error import AirError
from air.contracts.ids import AgentID, Contract, EvidenceRefID, SessionID, TaskID, empty_list
from air.contracts.permission import (
    CommandCategory,
    PathCategory,
    PermissionAction,
    PermissionAnswer,
    PermissionGrantScope,
    RiskLevel,
)
from air.contracts.runtime import PermissionTemplate
from air.contracts.tool import ExternalTool

__all__ = [
    "CommandRiskAnalysis",
    "CommandSegment",
    "DeclaredPermissions",
    "PathRiskClassification",
    "PermissionDecision",
    "PermissionPromptRequest",
    "PermissionPromptResponse",
    "PermissionRecordResult",
    "PermissionRequestContext",
]


class DeclaredPermissions(Contract):
    """What the tool's definition declares it may do (layer 1 of SDD §9.2; IMPL)."""

    read: bool = True
    write: bool = False
    execute: bool = False
    network: bool = False
    system_sensitive: bool = False
    external: ExternalTool | None = None
    """An MCP server's tool (``ToolPermissionSpec.external``): it asks unless a rule allows."""


class PermissionRequestContext(Contract):
    session_id: SessionID
    task_id: TaskID | None = None
    agent_id: AgentID | None = None
    tool_name: str
    permission_template: PermissionTemplate
    project_root: str
    workspace_root: str
    read_paths: list[str] = Field(default_factory=empty_list)
    write_paths: list[str] = Field(default_factory=empty_list)
    command: str | None = None
    cwd: str | None = None
    network: bool = False
    system_sensitive: bool = False
    write_area: list[str] | None = None
    allowed_paths: list[str] | None = None
    denied_paths: list[str] | None = None
    headless: bool = False
    declared: DeclaredPermissions | None = None
    """IMPL: the tool's declaration; None skips layer 1 (a direct engine query)."""
    network_granted: bool = False
    """IMPL: the task or session granted network access."""


class PathRiskClassification(Contract):
    path: str
    resolved_path: str | None
    category: PathCategory
    reason: str
    escapes: bool = False
    """True when the path leaves the workspace through ``..``, a symlink or a hardlink."""
    via_link: bool = False
    """IMPL: True when the path looks inside the workspace but a symlink or hardlink leads out."""


class CommandSegment(Contract):
    text: str
    program: str | None
    category: CommandCategory
    reason: str


class CommandRiskAnalysis(Contract):
    command: str
    category: CommandCategory
    segments: list[CommandSegment]
    reason: str
    write_targets: list[str] = Field(default_factory=empty_list)
    read_targets: list[str] = Field(default_factory=empty_list)
    tool_targets: list[str] = Field(default_factory=empty_list)
    """The write targets that are a build/test or install tool's own working directory or
    output (``cmake -B build``, ``make -C sub``): inside the workspace they are where the tool
    works, not source edits, so the task's write area does not bound them (IMPL-CLS-6)."""


class PermissionDecision(Contract):
    action: PermissionAction
    grant_scope: PermissionGrantScope = PermissionGrantScope.ONCE
    risk_level: RiskLevel = "low"
    reason: str
    layer: str | None = None
    """IMPL: which of the six layers decided."""
    required_confirmation: bool | None = None
    backup_required: bool | None = None
    evidence_ref_ids: list[EvidenceRefID] | None = None


class PermissionRecordResult(Contract):
    ok: bool
    event_id: str | None = None
    error: AirError | None = None


_SCOPE_OF: dict[str, PermissionGrantScope] = {
    "allow_once": PermissionGrantScope.ONCE,
    "allow_task": PermissionGrantScope.TASK,
    "allow_session": PermissionGrantScope.SESSION,
    "allow_project": PermissionGrantScope.PROJECT,
}


class PermissionPromptRequest(Contract):
    """One question to the person: may this tool call run?"""

    prompt_id: str
    tool_name: str
    decision: PermissionDecision
    """The engine's ``ask_user`` decision (its reason and risk level)."""
    items: list[str] = Field(default_factory=empty_list)
    """Why each pending item asks (one reason per path or command segment)."""
    command: str | None = None
    segments: list[CommandSegment] = Field(default_factory=empty_list)
    """The command's segments, each with its risk category (empty for a path-only call)."""
    risk_level: RiskLevel = "low"
    task_id: TaskID | None = None
    agent_id: AgentID | None = None


class PermissionPromptResponse(Contract):
    """The answer: approved for ``scope`` (``once`` stores no grant), or denied."""

    approved: bool
    scope: PermissionGrantScope = PermissionGrantScope.ONCE

    @classmethod
    def of(cls, answer: PermissionAnswer) -> Self:
        """The response for one of the console's answers."""
        if answer == "deny":
            return cls(approved=False)
        return cls(approved=True, scope=_SCOPE_OF[answer])

    @property
    def answer(self) -> PermissionAnswer:
        if not self.approved:
            return "deny"
        return {v: k for k, v in _SCOPE_OF.items()}[self.scope]  # type: ignore[return-value]
