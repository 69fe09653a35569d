"""Event payload models, group ``start`` (``air.events.payloads``; IMPL-BOOT-7).

What a headless run records before its first model request: the session, its tasks and their
dependency edges, a task's start, its workspace, the agent, and the capabilities the runtime
loads. Every run builds these; nothing else is imported with them.
"""

from typing import Any, Literal, Self

from pydantic import Field

from air.contracts.ids import Contract, empty_list
from air.contracts.runtime import AgentType
from air.contracts.task import (
    DependencySource,
    DependencyType,
    TaskDependencySpec,
    TaskSpec,
    WorkspaceStrategy,
)

__all__ = [
    "AgentStartedPayload",
    "CapabilityStateChangedPayload",
    "DependencyPayload",
    "EventPayload",
    "SessionCreatedPayload",
    "TaskCreatedPayload",
    "TaskDependencyAddedPayload",
    "TaskStartedPayload",
    "WorkspaceCreatedPayload",
]


# --- session ------------------------------------------------------------------------------


class EventPayload(Contract):
    """Base of every payload model: frozen, unknown fields are an error."""


class SessionCreatedPayload(EventPayload):
    session_id: str
    project_id: str
    title: str | None = None
    mode: Literal["interactive", "headless"] = "interactive"
    model_provider_id: str | None = None
    model_id: str | None = None
    host: str | None = None
    """The run's ``--host NAME``: every task without a ``host:`` runs there, tasks made later
    too, and ``air resume`` keeps it (IMPL-REMOTE-6)."""
    isolation: Literal["main", "worktree", "isolated_copy"] | None = None
    """The run's ``--isolation`` (``auto``: none); ``air resume`` keeps it, as the three below
    (IMPL-RESUME-2)."""
    permission_mode: Literal["allow-ask"] | None = None
    """The run's ``--permission-mode`` (``default``: none)."""
    branch: str | None = None
    """The run's ``--branch NAME``: its merges land there."""
    review: bool = False
    """The run's ``--review``."""


# --- tasks --------------------------------------------------------------------------------


class DependencyPayload(EventPayload):
    """One ``task_dependencies`` row as carried by ``task.created``."""

    depends_on_task_id: str
    dependency_type: DependencyType = DependencyType.HARD
    reason: str | None = None
    source: DependencySource = DependencySource.SCHEDULER

    @classmethod
    def from_spec(cls, spec: TaskDependencySpec) -> Self:
        """Build a dependency row from a TaskSpec's dependency entry."""
        return cls(
            depends_on_task_id=spec.depends_on_task_id,
            dependency_type=spec.dependency_type,
            reason=spec.reason,
            source=spec.source or DependencySource.SCHEDULER,
        )


class TaskCreatedPayload(EventPayload):
    task_spec: TaskSpec
    dependencies: list[DependencyPayload] = Field(default_factory=empty_list)
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


# --- workspaces ---------------------------------------------------------------------------


class WorkspaceCreatedPayload(EventPayload):
    workspace_id: str
    task_id: str | None = None
    agent_id: str | None = None
    strategy: WorkspaceStrategy
    path: str
    branch: str | None = None
    base_commit: str | None = None


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
    remote: dict[str, Any] | None = None
    """A worker on another host: its host, boot id, pid, start time, a Slurm job id (the run
    record keeps the same for recovery's sweep)."""


# --- capabilities -------------------------------------------------------------------------


class CapabilityStateChangedPayload(EventPayload):
    """A capability moved along its lifecycle (SDD §20.6; IMPL-CPP-5)."""

    capability_id: str
    version: str
    trust: str
    from_state: str | None = None
    to_state: str
    reason: str | None = None
    tools: list[str] = Field(default_factory=empty_list)
