"""Worker roles, the runtime context a worker is started with, and prompt-layer types.

Owns: ``AgentType`` (worker roles only), ``PermissionTemplate``, ``AgentRuntimeContext``,
``ContextPack`` and the context/prompt symbols merged here by SDD §3 (``PromptLayerLevel``,
``PromptLayer``, ``ContextAssembleInput``, ``AssembledContext``, ``CompactionResult``).
"""

from enum import StrEnum
from typing import Any, Literal

from pydantic import Field

from air.contracts.ids import AgentID, ArtifactID, Contract, ProjectID, SessionID, empty_list

__all__ = [
    "AgentRuntimeContext",
    "AgentType",
    "AssembledContext",
    "CompactionResult",
    "ContextAssembleInput",
    "ContextPack",
    "ContextPackRefs",
    "LayerOmission",
    "PermissionTemplate",
    "PromptLayer",
    "PromptLayerLevel",
]


class AgentType(StrEnum):
    """Worker child-process roles only (SDD §2). Runtime roles are never AgentType values."""

    EXECUTOR = "executor"
    REVIEWER = "reviewer"
    DEBUGGER = "debugger"
    COMPACTOR = "compactor"
    EXPERIENCE_MINER = "experience_miner"


class PermissionTemplate(StrEnum):
    MAIN_DIRECT = "main_direct"
    EXECUTOR = "executor"
    REVIEWER = "reviewer"
    DEBUGGER = "debugger"
    SYSTEM = "system"


class AgentRuntimeContext(Contract):
    session_id: SessionID
    project_id: ProjectID
    agent_id: AgentID
    worktree_path: str | None = None
    permission_template: PermissionTemplate


class ContextPackRefs(Contract):
    plan_ref: str | None = None
    arc_ref: str | None = None
    task_refs: list[str] | None = None
    artifact_refs: list[str] | None = None
    rule_refs: list[str] | None = None


class ContextPack(Contract):
    """Light, reference-based context handed to a worker (BL §14).

    ``messages`` carries the assembled canonical messages inline when they are small
    (IMPL: ``assembled_context_ref`` points at a messages artifact otherwise).
    """

    refs: ContextPackRefs = Field(default_factory=ContextPackRefs)
    assembled_context_ref: str | None = None
    notes: list[str] | None = None
    system_prompt: str | None = None
    messages: list[dict[str, Any]] | None = None
    tools: list[dict[str, Any]] | None = None


class PromptLayerLevel(StrEnum):
    """L0–L9 in priority order (prompt-layering §2)."""

    RUNTIME_INVARIANT = "runtime_invariant"
    ROLE = "role"
    SAFETY = "safety"
    PROJECT_RULES = "project_rules"
    ARCHITECTURE = "architecture"
    TASK_SPEC = "task_spec"
    EVIDENCE = "evidence"
    CONVERSATION = "conversation"
    TOOL_OUTPUT = "tool_output"
    USER_OVERRIDE = "user_override"
    SYSTEM_DEBUG = "system_debug"


class PromptLayer(Contract):
    level: PromptLayerLevel
    priority: int
    """Higher wins under budget pressure."""
    content: Any
    token_estimate: int | None = None
    source_ref: str | None = None
    immutable: bool | None = None


class ContextAssembleInput(Contract):
    session_id: SessionID
    project_id: ProjectID
    purpose: Literal["worker", "main", "architecture", "compaction"] = "worker"
    agent_type: AgentType | None = None
    task_spec: Any | None = None
    """A TaskSpec (typed as Any here to keep runtime.py free of a task.py cycle)."""
    token_budget: int
    user_instruction: str | None = None
    role_prompt: str | None = None
    """L1 text for runtime roles (main, architecture) that do not use ``load_role`` (SDD §10.2)."""
    system_debug: str | None = None
    """A system debug directive, placed with the immediate instruction (L9)."""


class LayerOmission(Contract):
    level: PromptLayerLevel
    source_ref: str | None = None
    token_estimate: int
    reason: str


class AssembledContext(Contract):
    canonical_format: Literal["anthropic"] = "anthropic"
    system: str
    messages: list[dict[str, Any]]
    layers: list[PromptLayer]
    token_estimate: int
    omitted: list[LayerOmission] = Field(default_factory=empty_list)
    messages_artifact_id: ArtifactID | None = None
    compaction_requested: bool = False


class CompactionResult(Contract):
    summary_id: str
    summary_text: str
    replaced_message_ids: list[str]
    token_estimate: int
