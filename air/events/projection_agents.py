"""The SQL projection of what agents do: ``agents``, ``tool_runs``, ``command_runs``,
``artifacts``, ``diagnostics``, ``evidence_refs`` and ``workspaces`` rows.

Owns the steps of ``agent.*``, ``tool.*``, ``command.*``, ``artifact.created``,
``diagnostic.created``, ``evidence.created`` and ``workspace.*`` (``AGENT_PROJECTIONS``).
Statuses move only along ``air.events.transitions`` (the fold's tables); a command run has no
status column, it is ended once (``completed_at``) and its status derived (SDD §4.4).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from air.contracts.error import AirError
from air.events.projection_context import (
    ProjectionCtx,
    ProjectionStep,
    opt_json,
    projection_error,
    require_row,
    to_json,
    transition,
)
from air.events.transitions import AGENT_FROM, TOOL_FROM, WORKSPACE_FROM

if TYPE_CHECKING:
    from air.events.payloads.ends import (
        WorkspaceAbandonedPayload,
        WorkspaceCleanedPayload,
        WorkspaceMergeCompletedPayload,
        WorkspaceMergeConflictedPayload,
        WorkspaceMergeStartedPayload,
    )
    from air.events.payloads.start import AgentStartedPayload, WorkspaceCreatedPayload
    from air.events.payloads.tools import (
        ArtifactCreatedPayload,
        CommandCompletedPayload,
        CommandFailedPayload,
        CommandStartedPayload,
        DiagnosticCreatedPayload,
        EvidenceCreatedPayload,
        ToolCancelledPayload,
        ToolCompletedPayload,
        ToolFailedPayload,
        ToolStartedPayload,
    )

__all__ = ["AGENT_PROJECTIONS"]


def _agent_started(ctx: ProjectionCtx, x: AgentStartedPayload) -> None:
    fields = {"pid": x.pid, "pid_start_time": x.pid_start_time, "boot_id": x.boot_id}
    inserted = ctx.store.agents.insert_new(
        {
            "id": x.agent_id,
            "session_id": ctx.event.session_id,
            "task_id": x.task_id,
            "agent_type": x.agent_type.value,
            "status": x.status,
            **fields,
            "started_at": ctx.ts,
            "updated_at": ctx.ts,
        }
    )
    if inserted:
        return
    # The running-phase re-emission of an agent inserted as ``starting`` (SDD §5.4).
    existing = require_row(ctx, ctx.store.agents.get(x.agent_id), f"agent {x.agent_id}", None)
    if existing["status"] != "starting" or x.status != "running":
        raise projection_error(ctx, f"agent {x.agent_id} already exists as {existing['status']}")
    ctx.store.agents.update(x.agent_id, {"status": "running", **fields, "updated_at": ctx.ts})


def _agent_end(status: str) -> ProjectionStep:
    def apply(ctx: ProjectionCtx, x: Any) -> None:
        error: AirError | None = getattr(x, "error", None)
        transition(
            ctx,
            ctx.store.agents,
            x.agent_id,
            f"agent {x.agent_id}",
            AGENT_FROM,
            {
                "status": status,
                "exit_code": getattr(x, "exit_code", None),
                "error_json": opt_json(error),
                "ended_at": ctx.ts,
                "updated_at": ctx.ts,
            },
        )

    return apply


def _tool_started(ctx: ProjectionCtx, x: ToolStartedPayload) -> None:
    ctx.store.tool_runs.insert(
        {
            "id": x.tool_run_id,
            "session_id": ctx.event.session_id,
            "task_id": x.task_id,
            "agent_id": x.agent_id,
            "origin_message_id": x.origin_message_id,
            "tool_name": x.tool_name,
            "status": "running",
            "input_json": to_json(x.input),
            "started_at": ctx.ts,
        }
    )


def _tool_end(ctx: ProjectionCtx, tool_run_id: str, patch: dict[str, Any]) -> None:
    transition(
        ctx,
        ctx.store.tool_runs,
        tool_run_id,
        f"tool run {tool_run_id}",
        TOOL_FROM,
        {**patch, "completed_at": ctx.ts},
    )


def _tool_completed(ctx: ProjectionCtx, x: ToolCompletedPayload) -> None:
    _tool_end(
        ctx,
        x.tool_run_id,
        {
            "status": "ok",
            "output_summary": x.output_summary,
            "artifact_ids_json": to_json(x.artifact_ids),
            "evidence_ref_ids_json": to_json(x.evidence_ref_ids),
            "duration_ms": x.duration_ms,
        },
    )


def _tool_failed(ctx: ProjectionCtx, x: ToolFailedPayload) -> None:
    _tool_end(
        ctx,
        x.tool_run_id,
        {
            "status": "error",
            "error_json": to_json(x.error),
            "artifact_ids_json": to_json(x.artifact_ids),
            "duration_ms": x.duration_ms,
        },
    )


def _tool_cancelled(ctx: ProjectionCtx, x: ToolCancelledPayload) -> None:
    _tool_end(
        ctx,
        x.tool_run_id,
        {"status": "cancelled", "output_summary": x.reason, "duration_ms": x.duration_ms},
    )


# --- commands -----------------------------------------------------------------------------


def _command_started(ctx: ProjectionCtx, x: CommandStartedPayload) -> None:
    ctx.store.command_runs.insert(
        {
            "id": x.command_run_id,
            "session_id": ctx.event.session_id,
            "task_id": x.task_id,
            "agent_id": x.agent_id,
            "tool_run_id": x.tool_run_id,
            "origin_message_id": x.origin_message_id,
            "command": x.command,
            "cwd": x.cwd,
            "started_at": ctx.ts,
        }
    )


def _command_end(ctx: ProjectionCtx, x: CommandCompletedPayload | CommandFailedPayload) -> None:
    patch: dict[str, Any] = {
        "exit_code": x.exit_code,
        "stdout_artifact_id": x.stdout_artifact_id,
        "stderr_artifact_id": x.stderr_artifact_id,
        "diagnostic_ids_json": to_json(x.diagnostic_ids),
        "duration_ms": x.duration_ms,
        "completed_at": ctx.ts,
    }
    from air.events.payloads.tools import CommandFailedPayload  # loaded: x is one of its

    if isinstance(x, CommandFailedPayload):
        patch["error_json"] = to_json(x.error)
        if x.cancelled:
            patch["cancelled_at"] = ctx.ts
            patch["cancel_reason"] = x.error.message
    if ctx.store.command_runs.update_unset(x.command_run_id, patch, "completed_at") == 0:
        # one statement on the common path; the read only to say precisely what is wrong
        what = f"command run {x.command_run_id}"
        require_row(ctx, ctx.store.command_runs.get(x.command_run_id), what, None)
        raise projection_error(ctx, f"{what} already ended")


# --- artifacts, diagnostics, evidence -----------------------------------------------------


def _artifact_created(ctx: ProjectionCtx, x: ArtifactCreatedPayload) -> None:
    row = x.model_dump(mode="json")
    row["session_id"] = ctx.event.session_id
    ctx.store.artifacts.insert(row)


def _diagnostic_created(ctx: ProjectionCtx, x: DiagnosticCreatedPayload) -> None:
    row = x.model_dump(mode="json")
    row["col"] = row.pop("column")
    row["session_id"] = ctx.event.session_id
    row["created_at"] = ctx.ts
    ctx.store.diagnostics.insert(row)


def _evidence_created(ctx: ProjectionCtx, x: EvidenceCreatedPayload) -> None:
    row = x.model_dump(mode="json")
    row["location_json"] = opt_json(x.location_json)
    row["session_id"] = ctx.event.session_id
    row["created_at"] = ctx.ts
    ctx.store.evidence.insert(row)


def _workspace_created(ctx: ProjectionCtx, x: WorkspaceCreatedPayload) -> None:
    ctx.store.workspaces.insert(
        {
            "workspace_id": x.workspace_id,
            "session_id": ctx.event.session_id,
            "task_id": x.task_id,
            "agent_id": x.agent_id,
            "strategy": x.strategy.value,
            "status": "active",
            "path": x.path,
            "branch": x.branch,
            "base_commit": x.base_commit,
            "created_at": ctx.ts,
            "updated_at": ctx.ts,
        }
    )


def _workspace_update(
    ctx: ProjectionCtx, workspace_id: str, allowed: tuple[str, ...], patch: dict[str, Any]
) -> None:
    transition(
        ctx,
        ctx.store.workspaces,
        workspace_id,
        f"workspace {workspace_id}",
        allowed,
        {**patch, "updated_at": ctx.ts},
    )


def _merge_started(ctx: ProjectionCtx, x: WorkspaceMergeStartedPayload) -> None:
    _workspace_update(
        ctx,
        x.workspace_id,
        WORKSPACE_FROM["workspace.merge.started"],
        {"status": "active", "merge_started_at": ctx.ts},
    )


def _merge_completed(ctx: ProjectionCtx, x: WorkspaceMergeCompletedPayload) -> None:
    _workspace_update(
        ctx,
        x.workspace_id,
        WORKSPACE_FROM["workspace.merge.completed"],
        {"status": "merged", "merge_commit": x.merge_commit, "merged_at": ctx.ts},
    )


def _merge_conflicted(ctx: ProjectionCtx, x: WorkspaceMergeConflictedPayload) -> None:
    _workspace_update(
        ctx,
        x.workspace_id,
        WORKSPACE_FROM["workspace.merge.conflicted"],
        {
            "status": "conflicted",
            "conflicted_paths_json": to_json(x.conflicted_paths),
            "kept_branch": x.kept_branch,
        },
    )


def _workspace_abandoned(ctx: ProjectionCtx, x: WorkspaceAbandonedPayload) -> None:
    patch: dict[str, Any] = {"status": "abandoned", "abandoned_at": ctx.ts}
    if x.kept_branch is not None:
        patch["kept_branch"] = x.kept_branch
    _workspace_update(ctx, x.workspace_id, WORKSPACE_FROM["workspace.abandoned"], patch)


def _workspace_cleaned(ctx: ProjectionCtx, x: WorkspaceCleanedPayload) -> None:
    _workspace_update(
        ctx,
        x.workspace_id,
        WORKSPACE_FROM["workspace.cleaned"],
        {"status": "cleaned", "cleaned_at": ctx.ts},
    )


AGENT_PROJECTIONS: dict[str, ProjectionStep] = {
    "agent.started": _agent_started,
    "agent.completed": _agent_end("completed"),
    "agent.failed": _agent_end("failed"),
    "agent.lost": _agent_end("lost"),
    "agent.cancelled": _agent_end("cancelled"),
    "tool.started": _tool_started,
    "tool.completed": _tool_completed,
    "tool.failed": _tool_failed,
    "tool.cancelled": _tool_cancelled,
    "command.started": _command_started,
    "command.completed": _command_end,
    "command.failed": _command_end,
    "artifact.created": _artifact_created,
    "diagnostic.created": _diagnostic_created,
    "evidence.created": _evidence_created,
    "workspace.created": _workspace_created,
    "workspace.merge.started": _merge_started,
    "workspace.merge.completed": _merge_completed,
    "workspace.merge.conflicted": _merge_conflicted,
    "workspace.abandoned": _workspace_abandoned,
    "workspace.cleaned": _workspace_cleaned,
}
"""The step per event type of agents, their runs, what the runs produced and workspaces."""
