"""Permission contracts: what a tool call asks for and what the PermissionEngine decides.

Owns: ``PathCategory`` (8), ``CommandCategory`` (10), ``PermissionAction`` (6),
``PermissionGrantScope``, ``PathPolicy``, ``PermissionRequestContext``, ``PermissionDecision``,
``PermissionRecordResult``, ``PathRiskClassification``, ``CommandRiskAnalysis`` (contracts §13;
category names IMPL, see docs/decisions.md).

Also owns the permission-prompt interface (IMPL-SPINE-5): ``PermissionPrompt`` is what asks the
person about an ``ask_user`` decision (the console implements it; the headless path uses
``FailClosedPrompt``, which refuses every question), with ``PermissionPromptRequest`` (the
tool, the decision, the pending items, the command's segments and the risk) and
``PermissionPromptResponse`` (allow once / task / session / project, or deny).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal, Protocol

from pydantic import Field

from air.contracts.error import AirError
from air.contracts.ids import AgentID, Contract, EvidenceRefID, SessionID, TaskID
from air.contracts.runtime import PermissionTemplate

__all__ = [
    "CommandCategory",
    "CommandRiskAnalysis",
    "CommandSegment",
    "DeclaredPermissions",
    "FailClosedPrompt",
    "PathCategory",
    "PathPolicy",
    "PathRiskClassification",
    "PermissionAction",
    "PermissionAnswer",
    "PermissionDecision",
    "PermissionGrantScope",
    "PermissionPrompt",
    "PermissionPromptRequest",
    "PermissionPromptResponse",
    "PermissionRecordResult",
    "PermissionRequestContext",
    "RiskLevel",
]


class PathCategory(StrEnum):
    PROJECT_SOURCE = "project_source"
    PROJECT_BUILD_OUTPUT = "project_build_output"
    PROJECT_GIT_INTERNAL = "project_git_internal"
    AIR_INTERNAL = "air_internal"
    OUTSIDE_PROJECT = "outside_project"
    SYSTEM_SENSITIVE = "system_sensitive"
    CREDENTIALS = "credentials"
    UNKNOWN = "unknown"


class CommandCategory(StrEnum):
    """Ordered from least to most risky; a compound command takes its riskiest segment's."""

    READ_ONLY = "read_only"
    BUILD_TEST = "build_test"
    FILE_MUTATION = "file_mutation"
    VCS_MUTATION = "vcs_mutation"
    PACKAGE_INSTALL = "package_install"
    NETWORK = "network"
    PROCESS_CONTROL = "process_control"
    DESTRUCTIVE = "destructive"
    PRIVILEGED = "privileged"
    OPAQUE = "opaque"
    """Could not be analysed (dynamic, obfuscated, unparseable): treated as the highest risk."""


class PermissionAction(StrEnum):
    ALLOW = "allow"
    ANNOUNCE_THEN_RUN = "announce_then_run"
    ASK_USER = "ask_user"
    DENY = "deny"
    BLOCK = "block"
    REFUSE = "refuse"


class PermissionGrantScope(StrEnum):
    ONCE = "once"
    TASK = "task"
    SESSION = "session"
    PROJECT = "project"


RiskLevel = Literal["none", "low", "medium", "high", "critical"]


class PathPolicy(Contract):
    """Paths a tool may touch: globs relative to the project root, or ``input:<field>``."""

    globs: list[str] = Field(default_factory=list)
    from_input: list[str] = Field(default_factory=list)
    """Names of input fields that hold paths (e.g. ``["path"]``)."""


class DeclaredPermissions(Contract):
    """What the tool's definition declares it may do (layer 1 of SDD §9.2; IMPL)."""

    read: bool = True
    write: bool = False
    execute: bool = False
    network: bool = False
    system_sensitive: bool = False


class PermissionRequestContext(Contract):
    session_id: SessionID
    task_id: TaskID | None = None
    agent_id: AgentID | None = None
    tool_name: str
    permission_template: PermissionTemplate
    project_root: str
    workspace_root: str
    read_paths: list[str] = Field(default_factory=list)
    write_paths: list[str] = Field(default_factory=list)
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
    write_targets: list[str] = Field(default_factory=list)
    read_targets: list[str] = Field(default_factory=list)
    tool_targets: list[str] = Field(default_factory=list)
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


PermissionAnswer = Literal["allow_once", "allow_task", "allow_session", "allow_project", "deny"]
"""The person's answer to a prompt (the console's choices; ``UiCommand.decision``)."""

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
    items: list[str] = Field(default_factory=list)
    """Why each pending item asks (one reason per path or command segment)."""
    command: str | None = None
    segments: list[CommandSegment] = Field(default_factory=list)
    """The command's segments, each with its risk category (empty for a path-only call)."""
    risk_level: RiskLevel = "low"
    task_id: TaskID | None = None
    agent_id: AgentID | None = None


class PermissionPromptResponse(Contract):
    """The answer: approved for ``scope`` (``once`` stores no grant), or denied."""

    approved: bool
    scope: PermissionGrantScope = PermissionGrantScope.ONCE

    @classmethod
    def of(cls, answer: PermissionAnswer) -> PermissionPromptResponse:
        """The response for one of the console's answers."""
        if answer == "deny":
            return cls(approved=False)
        return cls(approved=True, scope=_SCOPE_OF[answer])

    @property
    def answer(self) -> PermissionAnswer:
        if not self.approved:
            return "deny"
        return {v: k for k, v in _SCOPE_OF.items()}[self.scope]  # type: ignore[return-value]


class PermissionPrompt(Protocol):
    """Asks the person (the console implements it). Must answer; a refusal is ``deny``."""

    async def ask(self, request: PermissionPromptRequest) -> PermissionPromptResponse: ...


class FailClosedPrompt:
    """The headless answer: nobody is there to ask, so every question is denied."""

    async def ask(self, request: PermissionPromptRequest) -> PermissionPromptResponse:
        return PermissionPromptResponse(approved=False)
