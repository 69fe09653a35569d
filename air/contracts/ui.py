"""Projections the console renders (contracts §17). The UI reads only these shapes.

Owns: the ``*Projection`` models, ``ProjectionSnapshot`` and ``UiCommand``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from air.contracts.ids import Contract

__all__ = [
    "AgentProjection",
    "ArtifactProjection",
    "CommandRunProjection",
    "PermissionPromptProjection",
    "ProjectionSnapshot",
    "SessionProjection",
    "TaskProjection",
    "ToolRunProjection",
    "UiCommand",
]


class SessionProjection(Contract):
    session_id: str
    status: str
    title: str | None = None


class TaskProjection(Contract):
    task_id: str
    title: str
    type: str
    status: str
    agent_id: str | None = None


class AgentProjection(Contract):
    agent_id: str
    agent_type: str
    status: str
    task_id: str | None = None
    turn: int | None = None
    tokens: int | None = None


class ToolRunProjection(Contract):
    tool_run_id: str
    tool_name: str
    status: str
    task_id: str | None = None


class CommandRunProjection(Contract):
    command_run_id: str
    command: str
    status: Literal["running", "ok", "error", "cancelled", "unknown"]
    exit_code: int | None = None
    tail: str = ""


class ArtifactProjection(Contract):
    artifact_id: str
    type: str
    path: str


class PermissionPromptProjection(Contract):
    prompt_id: str
    tool_name: str
    summary: str
    risk_level: str


class ProjectionSnapshot(Contract):
    session: SessionProjection | None = None
    tasks: list[TaskProjection] = Field(default_factory=list)
    agents: list[AgentProjection] = Field(default_factory=list)
    tool_runs: list[ToolRunProjection] = Field(default_factory=list)
    command_runs: list[CommandRunProjection] = Field(default_factory=list)
    artifacts: list[ArtifactProjection] = Field(default_factory=list)
    permission_prompts: list[PermissionPromptProjection] = Field(default_factory=list)


class UiCommand(Contract):
    kind: Literal["permission_response", "cancel_task", "user_message", "quit"]
    prompt_id: str | None = None
    decision: (
        Literal["allow_once", "allow_task", "allow_session", "allow_project", "deny"] | None
    ) = None
    task_id: str | None = None
    text: str | None = None
