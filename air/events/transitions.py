"""The status transitions of a session's records, enforced by the fold and the SQL projection.

Owns the tables that say which status an event may leave (``TASK_FROM``, ``AGENT_FROM``,
``TOOL_FROM``, ``WORKSPACE_FROM``) and which events end a task's attempt (``TASK_ENDS``).
``air.events.fold`` checks them on ``SessionState`` and ``air.events.projection`` on the SQL
rows, so every status rule exists once.
"""

from __future__ import annotations

__all__ = ["AGENT_FROM", "TASK_ENDS", "TASK_FROM", "TOOL_FROM", "WORKSPACE_FROM"]

TASK_FROM: dict[str, tuple[str, ...]] = {
    "task.started": ("pending", "failed", "interrupted", "blocked"),
    "task.completed": ("running",),
    "task.blocked": ("pending", "running"),
    "task.failed": ("pending", "running"),
    "task.cancelled": ("pending", "running", "blocked", "interrupted"),
    "task.interrupted": ("running",),
    "context.compaction.started": ("pending",),
    "context.compaction.completed": ("running",),
    "context.compaction.failed": ("pending", "running"),
}
"""Per task event: the task statuses it may leave."""

TASK_ENDS: dict[str, str] = {
    "task.completed": "completed",
    "task.failed": "failed",
    "task.blocked": "blocked",
    "task.cancelled": "cancelled",
    "task.interrupted": "interrupted",
}
"""The events that end a task's attempt, and the status each leaves the task in."""

AGENT_FROM: tuple[str, ...] = ("starting", "running")
"""The agent statuses an ``agent.completed/failed/lost/cancelled`` may leave."""

TOOL_FROM: tuple[str, ...] = ("running",)
"""The tool-run statuses a ``tool.completed/failed/cancelled`` may leave."""

WORKSPACE_FROM: dict[str, tuple[str, ...]] = {
    "workspace.merge.started": ("active", "conflicted"),
    "workspace.merge.completed": ("active",),
    "workspace.merge.conflicted": ("active",),
    "workspace.abandoned": ("active", "conflicted"),
    "workspace.cleaned": ("merged", "abandoned"),
}
"""Per workspace event: the workspace statuses it may leave."""
