"""The durable projection map (SDD §5.4 Table A): how each durable event changes domain rows.

Owns ``project(store, event, payload, seq)``: a deterministic function of (event, current rows)
that runs inside the caller's transaction and uses only the event's timestamp (never the
clock). An event that does not fit the current rows (unknown task, illegal status transition,
duplicate id) raises ``AirException(system_error)`` so the whole append rolls back. Events
of Table B and the append-only families write nothing here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pydantic_core
from pydantic import BaseModel

from air.contracts.error import AirError, AirException
from air.contracts.event import RuntimeEvent
from air.events.payloads import DURABLE_TYPES
from air.events.transitions import AGENT_FROM, TASK_FROM, TOOL_FROM, WORKSPACE_FROM
from air.store.repositories import Repository, Row, SessionStore

if TYPE_CHECKING:
    from air.events.payloads.conversation import (
        AssistantMessageCreatedPayload,
        AssistantMessageFailedPayload,
        AssistantMessageStartedPayload,
        UserMessageCreatedPayload,
    )
    from air.events.payloads.ends import (
        SessionArchivedPayload,
        SessionDeletedPayload,
        TaskBlockedPayload,
        TaskCancelledPayload,
        TaskCompletedPayload,
        TaskFailedPayload,
        TaskInterruptedPayload,
        WorkspaceAbandonedPayload,
        WorkspaceCleanedPayload,
        WorkspaceMergeCompletedPayload,
        WorkspaceMergeConflictedPayload,
        WorkspaceMergeStartedPayload,
    )
    from air.events.payloads.knowledge import (
        CompactionCompletedPayload,
        CompactionFailedPayload,
        CompactionRequestedPayload,
        CompactionStartedPayload,
        SummaryCreatedPayload,
    )
    from air.events.payloads.start import (
        AgentStartedPayload,
        DependencyPayload,
        SessionCreatedPayload,
        TaskCreatedPayload,
        TaskDependencyAddedPayload,
        TaskStartedPayload,
        WorkspaceCreatedPayload,
    )
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

__all__ = ["APPEND_ONLY_TYPES", "PROJECTED_TYPES", "project"]


def _json(value: Any) -> str:
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return pydantic_core.to_json(value).decode()


def _opt_json(value: Any) -> str | None:
    return None if value is None else _json(value)


class _Ctx:
    __slots__ = ("event", "seq", "store", "ts")

    def __init__(self, store: SessionStore, event: RuntimeEvent, seq: int) -> None:
        self.store = store
        self.event = event
        self.seq = seq
        self.ts = event.timestamp


def _fail(ctx: _Ctx, message: str) -> AirException:
    return AirException.of(
        kind="system_error",
        message=f"cannot project {ctx.event.type}: {message}",
        user_action=(
            "The event does not fit the session's recorded state; run `air doctor` and report "
            "the bug with its bundle."
        ),
        metadata={"event_id": ctx.event.id, "event_type": ctx.event.type},
    )


def _require(ctx: _Ctx, row: Row | None, what: str, allowed: tuple[str, ...] | None) -> Row:
    if row is None:
        raise _fail(ctx, f"{what} does not exist")
    if allowed is not None and row.get("status") not in allowed:
        raise _fail(ctx, f"{what} is {row.get('status')}, expected one of {', '.join(allowed)}")
    return row


def _transition(
    ctx: _Ctx,
    repo: Repository,
    key: Any,
    what: str,
    allowed: tuple[str, ...] | None,
    patch: dict[str, Any],
) -> None:
    """Update one row if it exists (and its status is allowed), else fail precisely."""
    if repo.update_if(key, patch, status_in=allowed) == 0:
        _require(ctx, repo.get(key), what, allowed)
        raise _fail(ctx, f"{what} was not updated")


# --- sessions -----------------------------------------------------------------------------


def _session_created(ctx: _Ctx, x: SessionCreatedPayload) -> None:
    ctx.store.sessions.insert(
        {
            "id": x.session_id,
            "project_id": x.project_id,
            "status": "active",
            "title": x.title,
            "mode": x.mode,
            "model_provider_id": x.model_provider_id,
            "model_id": x.model_id,
            "created_at": ctx.ts,
            "updated_at": ctx.ts,
        }
    )


def _session_status(status: str, column: str) -> Callable[[_Ctx, Any], None]:
    def apply(ctx: _Ctx, x: SessionArchivedPayload | SessionDeletedPayload) -> None:
        _transition(
            ctx,
            ctx.store.sessions,
            x.session_id,
            f"session {x.session_id}",
            None,
            {"status": status, column: ctx.ts, "updated_at": ctx.ts},
        )

    return apply


# --- messages -----------------------------------------------------------------------------


def _user_message(ctx: _Ctx, x: UserMessageCreatedPayload) -> None:
    ctx.store.messages.insert(
        {
            "id": x.message_id,
            "session_id": ctx.event.session_id,
            "role": "user",
            "content_json": _json(x.content),
            "task_id": x.task_id,
            "event_seq": ctx.seq,
            "created_at": ctx.ts,
        }
    )


def _assistant_started(ctx: _Ctx, x: AssistantMessageStartedPayload) -> None:
    ctx.store.message_drafts.upsert(
        {
            "message_id": x.message_id,
            "session_id": ctx.event.session_id,
            "status": "streaming",
            "agent_id": x.agent_id,
            "task_id": x.task_id,
            "model_id": x.model_id,
            "error_json": None,
            "failure_artifact_id": None,
            "started_at": ctx.ts,
            "updated_at": ctx.ts,
        }
    )


def _assistant_created(ctx: _Ctx, x: AssistantMessageCreatedPayload) -> None:
    ctx.store.messages.insert(
        {
            "id": x.message_id,
            "session_id": ctx.event.session_id,
            "role": "assistant",
            "content_json": _json(x.content),
            "agent_id": x.agent_id,
            "task_id": x.task_id,
            "model_id": x.model_id,
            "stop_reason": x.stop_reason,
            "usage_json": _opt_json(x.usage),
            "event_seq": ctx.seq,
            "created_at": ctx.ts,
        }
    )
    ctx.store.message_drafts.delete_for_message(x.message_id)


def _assistant_failed(ctx: _Ctx, x: AssistantMessageFailedPayload) -> None:
    existing = ctx.store.message_drafts.get(x.message_id)
    ctx.store.message_drafts.upsert(
        {
            "message_id": x.message_id,
            "session_id": ctx.event.session_id,
            "status": "error",
            "agent_id": existing["agent_id"] if existing else None,
            "task_id": existing["task_id"] if existing else None,
            "model_id": existing["model_id"] if existing else None,
            "error_json": _json(x.error),
            "failure_artifact_id": x.failure_artifact_id,
            "started_at": existing["started_at"] if existing else ctx.ts,
            "updated_at": ctx.ts,
        }
    )


# --- agents -------------------------------------------------------------------------------


def _agent_started(ctx: _Ctx, x: AgentStartedPayload) -> None:
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
    existing = _require(ctx, ctx.store.agents.get(x.agent_id), f"agent {x.agent_id}", None)
    if existing["status"] != "starting" or x.status != "running":
        raise _fail(ctx, f"agent {x.agent_id} already exists as {existing['status']}")
    ctx.store.agents.update(x.agent_id, {"status": "running", **fields, "updated_at": ctx.ts})


def _agent_end(status: str) -> Callable[[_Ctx, Any], None]:
    def apply(ctx: _Ctx, x: Any) -> None:
        error: AirError | None = getattr(x, "error", None)
        _transition(
            ctx,
            ctx.store.agents,
            x.agent_id,
            f"agent {x.agent_id}",
            AGENT_FROM,
            {
                "status": status,
                "exit_code": getattr(x, "exit_code", None),
                "error_json": _opt_json(error),
                "ended_at": ctx.ts,
                "updated_at": ctx.ts,
            },
        )

    return apply


# --- tasks --------------------------------------------------------------------------------


def _insert_task(
    ctx: _Ctx,
    spec: Any,
    deps: list[DependencyPayload],
    origin_message_id: str | None,
    parent_task_id: str | None,
) -> None:
    ctx.store.tasks.insert(
        {
            "id": spec.id,
            "session_id": ctx.event.session_id,
            "type": spec.type.value,
            "status": "pending",
            "title": spec.title,
            "description": spec.description,
            "spec_json": _json(spec),
            "origin_message_id": origin_message_id,
            "parent_task_id": parent_task_id,
            "attempt_count": 0,
            "created_at": ctx.ts,
            "updated_at": ctx.ts,
        }
    )
    for dep in deps:
        ctx.store.task_dependencies.insert(
            {
                "task_id": spec.id,
                "depends_on_task_id": dep.depends_on_task_id,
                "dependency_type": dep.dependency_type.value,
                "reason": dep.reason,
                "source": dep.source.value,
                "created_at": ctx.ts,
            }
        )


def _task_created(ctx: _Ctx, x: TaskCreatedPayload) -> None:
    from air.events.payloads.start import DependencyPayload  # loaded: x is one of its

    deps = x.dependencies or [DependencyPayload.from_spec(d) for d in x.task_spec.dependencies]
    _insert_task(ctx, x.task_spec, deps, x.origin_message_id, x.parent_task_id)


def _task_dependency_added(ctx: _Ctx, x: TaskDependencyAddedPayload) -> None:
    for task_id in (x.task_id, x.depends_on_task_id):
        if ctx.store.tasks.get(task_id) is None:
            raise _fail(ctx, f"dependency names unknown task {task_id}")
    ctx.store.task_dependencies.insert(
        {
            "task_id": x.task_id,
            "depends_on_task_id": x.depends_on_task_id,
            "dependency_type": x.dependency_type.value,
            "reason": x.reason,
            "source": x.source.value,
            "created_at": ctx.ts,
        }
    )


def _task_started(ctx: _Ctx, x: TaskStartedPayload) -> None:
    expected = ctx.store.task_attempts.next_attempt_index(x.task_id)
    if x.attempt_index != expected:
        raise _fail(ctx, f"attempt_index {x.attempt_index} for {x.task_id}, expected {expected}")
    _transition(
        ctx,
        ctx.store.tasks,
        x.task_id,
        f"task {x.task_id}",
        TASK_FROM["task.started"],
        {
            "status": "running",
            "agent_id": x.agent_id,
            "workspace_id": x.workspace_id,
            "attempt_count": x.attempt_index,
            "started_at": ctx.ts,
            "completed_at": None,
            "blocked_reason": None,
            "error_json": None,
            "updated_at": ctx.ts,
        },
    )
    ctx.store.task_attempts.insert(
        {
            "task_id": x.task_id,
            "attempt_index": x.attempt_index,
            "agent_id": x.agent_id,
            "agent_type": x.agent_type.value,
            "workspace_id": x.workspace_id,
            "status": "running",
            "started_at": ctx.ts,
        }
    )


def _end_attempt(
    ctx: _Ctx,
    task_id: str,
    attempt_index: int | None,
    status: str,
    extra: dict[str, Any] | None = None,
) -> None:
    attempts = ctx.store.task_attempts
    patch = {"status": status, "ended_at": ctx.ts, **(extra or {})}
    if attempt_index is not None:
        # one statement on the common path; the read only when nothing changed
        if attempts.update_if((task_id, attempt_index), patch, status_in=("running",)) == 0:
            if attempts.get((task_id, attempt_index)) is None:
                raise _fail(ctx, f"attempt {attempt_index} of task {task_id} does not exist")
        return
    row = attempts.latest(task_id)
    if row is None or row["status"] != "running":
        return
    attempts.update((task_id, row["attempt_index"]), patch)


def _task_completed(ctx: _Ctx, x: TaskCompletedPayload) -> None:
    _transition(
        ctx,
        ctx.store.tasks,
        x.task_id,
        f"task {x.task_id}",
        TASK_FROM["task.completed"],
        {
            "status": "completed",
            "worker_result_json": _opt_json(x.worker_result),
            "completed_at": ctx.ts,
            "updated_at": ctx.ts,
        },
    )
    _end_attempt(ctx, x.task_id, x.attempt_index, "completed")


def _task_blocked(ctx: _Ctx, x: TaskBlockedPayload) -> None:
    _transition(
        ctx,
        ctx.store.tasks,
        x.task_id,
        f"task {x.task_id}",
        TASK_FROM["task.blocked"],
        {
            "status": "blocked",
            "blocked_reason": x.reason,
            "worker_result_json": _opt_json(x.worker_result),
            "updated_at": ctx.ts,
        },
    )
    _end_attempt(ctx, x.task_id, x.attempt_index, "blocked")


def _task_failed(ctx: _Ctx, x: TaskFailedPayload) -> None:
    _transition(
        ctx,
        ctx.store.tasks,
        x.task_id,
        f"task {x.task_id}",
        TASK_FROM["task.failed"],
        {
            "status": "failed",
            "error_json": _json(x.error),
            "worker_result_json": _opt_json(x.worker_result),
            "completed_at": ctx.ts,
            "updated_at": ctx.ts,
        },
    )
    _end_attempt(
        ctx,
        x.task_id,
        x.attempt_index,
        "failed",
        {
            "failure_kind": x.error.kind.value,
            "failure_signature": x.error.semantic_signature,
            "failure_message": x.error.message,
            "failure_error_json": _json(x.error),
        },
    )


def _task_cancelled(ctx: _Ctx, x: TaskCancelledPayload) -> None:
    _transition(
        ctx,
        ctx.store.tasks,
        x.task_id,
        f"task {x.task_id}",
        TASK_FROM["task.cancelled"],
        {
            "status": "cancelled",
            "blocked_reason": x.reason,
            "completed_at": ctx.ts,
            "updated_at": ctx.ts,
        },
    )
    _end_attempt(ctx, x.task_id, x.attempt_index, "cancelled")


def _task_interrupted(ctx: _Ctx, x: TaskInterruptedPayload) -> None:
    _transition(
        ctx,
        ctx.store.tasks,
        x.task_id,
        f"task {x.task_id}",
        TASK_FROM["task.interrupted"],
        {"status": "interrupted", "updated_at": ctx.ts},
    )
    _end_attempt(ctx, x.task_id, x.attempt_index, "interrupted")


# --- tools --------------------------------------------------------------------------------


def _tool_started(ctx: _Ctx, x: ToolStartedPayload) -> None:
    ctx.store.tool_runs.insert(
        {
            "id": x.tool_run_id,
            "session_id": ctx.event.session_id,
            "task_id": x.task_id,
            "agent_id": x.agent_id,
            "origin_message_id": x.origin_message_id,
            "tool_name": x.tool_name,
            "status": "running",
            "input_json": _json(x.input),
            "started_at": ctx.ts,
        }
    )


def _tool_end(ctx: _Ctx, tool_run_id: str, patch: dict[str, Any]) -> None:
    _transition(
        ctx,
        ctx.store.tool_runs,
        tool_run_id,
        f"tool run {tool_run_id}",
        TOOL_FROM,
        {**patch, "completed_at": ctx.ts},
    )


def _tool_completed(ctx: _Ctx, x: ToolCompletedPayload) -> None:
    _tool_end(
        ctx,
        x.tool_run_id,
        {
            "status": "ok",
            "output_summary": x.output_summary,
            "artifact_ids_json": _json(x.artifact_ids),
            "evidence_ref_ids_json": _json(x.evidence_ref_ids),
            "duration_ms": x.duration_ms,
        },
    )


def _tool_failed(ctx: _Ctx, x: ToolFailedPayload) -> None:
    _tool_end(
        ctx,
        x.tool_run_id,
        {
            "status": "error",
            "error_json": _json(x.error),
            "artifact_ids_json": _json(x.artifact_ids),
            "duration_ms": x.duration_ms,
        },
    )


def _tool_cancelled(ctx: _Ctx, x: ToolCancelledPayload) -> None:
    _tool_end(
        ctx,
        x.tool_run_id,
        {"status": "cancelled", "output_summary": x.reason, "duration_ms": x.duration_ms},
    )


# --- commands -----------------------------------------------------------------------------


def _command_started(ctx: _Ctx, x: CommandStartedPayload) -> None:
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


def _command_end(ctx: _Ctx, x: CommandCompletedPayload | CommandFailedPayload) -> None:
    patch: dict[str, Any] = {
        "exit_code": x.exit_code,
        "stdout_artifact_id": x.stdout_artifact_id,
        "stderr_artifact_id": x.stderr_artifact_id,
        "diagnostic_ids_json": _json(x.diagnostic_ids),
        "duration_ms": x.duration_ms,
        "completed_at": ctx.ts,
    }
    from air.events.payloads.tools import CommandFailedPayload  # loaded: x is one of its

    if isinstance(x, CommandFailedPayload):
        patch["error_json"] = _json(x.error)
        if x.cancelled:
            patch["cancelled_at"] = ctx.ts
            patch["cancel_reason"] = x.error.message
    if ctx.store.command_runs.update_unset(x.command_run_id, patch, "completed_at") == 0:
        # one statement on the common path; the read only to say precisely what is wrong
        what = f"command run {x.command_run_id}"
        _require(ctx, ctx.store.command_runs.get(x.command_run_id), what, None)
        raise _fail(ctx, f"{what} already ended")


# --- artifacts, diagnostics, evidence -----------------------------------------------------


def _artifact_created(ctx: _Ctx, x: ArtifactCreatedPayload) -> None:
    row = x.model_dump(mode="json")
    row["session_id"] = ctx.event.session_id
    ctx.store.artifacts.insert(row)


def _diagnostic_created(ctx: _Ctx, x: DiagnosticCreatedPayload) -> None:
    row = x.model_dump(mode="json")
    row["col"] = row.pop("column")
    row["session_id"] = ctx.event.session_id
    row["created_at"] = ctx.ts
    ctx.store.diagnostics.insert(row)


def _evidence_created(ctx: _Ctx, x: EvidenceCreatedPayload) -> None:
    row = x.model_dump(mode="json")
    row["location_json"] = _opt_json(x.location_json)
    row["session_id"] = ctx.event.session_id
    row["created_at"] = ctx.ts
    ctx.store.evidence.insert(row)


# --- compaction / summaries ---------------------------------------------------------------


def _compaction_requested(ctx: _Ctx, x: CompactionRequestedPayload) -> None:
    if not x.accepted or x.task_spec is None:
        return
    if x.task_spec.type.value != "compact":
        raise _fail(ctx, f"compaction task {x.task_spec.id} has type {x.task_spec.type.value}")
    _insert_task(ctx, x.task_spec, [], None, None)


def _compaction_started(ctx: _Ctx, x: CompactionStartedPayload) -> None:
    _transition(
        ctx,
        ctx.store.tasks,
        x.task_id,
        f"compaction task {x.task_id}",
        TASK_FROM["context.compaction.started"],
        {"status": "running", "agent_id": x.agent_id, "started_at": ctx.ts, "updated_at": ctx.ts},
    )


def _compaction_completed(ctx: _Ctx, x: CompactionCompletedPayload) -> None:
    _transition(
        ctx,
        ctx.store.tasks,
        x.task_id,
        f"compaction task {x.task_id}",
        TASK_FROM["context.compaction.completed"],
        {
            "status": "completed",
            "worker_result_json": _json({"summary_id": x.summary_id}),
            "completed_at": ctx.ts,
            "updated_at": ctx.ts,
        },
    )


def _compaction_failed(ctx: _Ctx, x: CompactionFailedPayload) -> None:
    _transition(
        ctx,
        ctx.store.tasks,
        x.task_id,
        f"compaction task {x.task_id}",
        TASK_FROM["context.compaction.failed"],
        {
            "status": "blocked" if x.blocked else "failed",
            "error_json": _json(x.error),
            "updated_at": ctx.ts,
        },
    )


def _summary_created(ctx: _Ctx, x: SummaryCreatedPayload) -> None:
    row = x.model_dump(mode="json")
    row["session_id"] = ctx.event.session_id
    row["created_at"] = ctx.ts
    ctx.store.summaries.insert(row)


# --- workspaces ---------------------------------------------------------------------------


def _workspace_created(ctx: _Ctx, x: WorkspaceCreatedPayload) -> None:
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
    ctx: _Ctx, workspace_id: str, allowed: tuple[str, ...], patch: dict[str, Any]
) -> None:
    _transition(
        ctx,
        ctx.store.workspaces,
        workspace_id,
        f"workspace {workspace_id}",
        allowed,
        {**patch, "updated_at": ctx.ts},
    )


def _merge_started(ctx: _Ctx, x: WorkspaceMergeStartedPayload) -> None:
    _workspace_update(
        ctx,
        x.workspace_id,
        WORKSPACE_FROM["workspace.merge.started"],
        {"status": "active", "merge_started_at": ctx.ts},
    )


def _merge_completed(ctx: _Ctx, x: WorkspaceMergeCompletedPayload) -> None:
    _workspace_update(
        ctx,
        x.workspace_id,
        WORKSPACE_FROM["workspace.merge.completed"],
        {"status": "merged", "merge_commit": x.merge_commit, "merged_at": ctx.ts},
    )


def _merge_conflicted(ctx: _Ctx, x: WorkspaceMergeConflictedPayload) -> None:
    _workspace_update(
        ctx,
        x.workspace_id,
        WORKSPACE_FROM["workspace.merge.conflicted"],
        {
            "status": "conflicted",
            "conflicted_paths_json": _json(x.conflicted_paths),
            "kept_branch": x.kept_branch,
        },
    )


def _workspace_abandoned(ctx: _Ctx, x: WorkspaceAbandonedPayload) -> None:
    patch: dict[str, Any] = {"status": "abandoned", "abandoned_at": ctx.ts}
    if x.kept_branch is not None:
        patch["kept_branch"] = x.kept_branch
    _workspace_update(ctx, x.workspace_id, WORKSPACE_FROM["workspace.abandoned"], patch)


def _workspace_cleaned(ctx: _Ctx, x: WorkspaceCleanedPayload) -> None:
    _workspace_update(
        ctx,
        x.workspace_id,
        WORKSPACE_FROM["workspace.cleaned"],
        {"status": "cleaned", "cleaned_at": ctx.ts},
    )


_PROJECTIONS: dict[str, Callable[[_Ctx, Any], None]] = {
    "session.created": _session_created,
    "session.archived": _session_status("archived", "archived_at"),
    "session.deleted": _session_status("deleted", "deleted_at"),
    "user.message.created": _user_message,
    "assistant.message.started": _assistant_started,
    "assistant.message.created": _assistant_created,
    "assistant.message.failed": _assistant_failed,
    "agent.started": _agent_started,
    "agent.completed": _agent_end("completed"),
    "agent.failed": _agent_end("failed"),
    "agent.lost": _agent_end("lost"),
    "agent.cancelled": _agent_end("cancelled"),
    "task.created": _task_created,
    "task.dependency.added": _task_dependency_added,
    "task.started": _task_started,
    "task.completed": _task_completed,
    "task.blocked": _task_blocked,
    "task.failed": _task_failed,
    "task.cancelled": _task_cancelled,
    "task.interrupted": _task_interrupted,
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
    "context.compaction.requested": _compaction_requested,
    "context.compaction.started": _compaction_started,
    "context.compaction.completed": _compaction_completed,
    "context.compaction.failed": _compaction_failed,
    "summary.created": _summary_created,
    "workspace.created": _workspace_created,
    "workspace.merge.started": _merge_started,
    "workspace.merge.completed": _merge_completed,
    "workspace.merge.conflicted": _merge_conflicted,
    "workspace.abandoned": _workspace_abandoned,
    "workspace.cleaned": _workspace_cleaned,
}

PROJECTED_TYPES: frozenset[str] = frozenset(_PROJECTIONS)
APPEND_ONLY_TYPES: frozenset[str] = frozenset(DURABLE_TYPES - PROJECTED_TYPES)
"""Durable types stored in ``events`` only (permission, doctor, requirement, architecture,
memory, debug: SDD §5.4 Table A "append" rows and Table B)."""


def project(store: SessionStore, event: RuntimeEvent, payload: BaseModel, seq: int) -> None:
    """Apply the domain update of one durable event inside the caller's transaction.

    Args:
        store: the repositories bound to the session DB (a transaction must be open).
        event: the envelope (its timestamp is the only time used).
        payload: the payload validated by the registry.
        seq: the ``events.seq`` assigned to this event.

    Raises:
        AirException: ``system_error`` when the event does not fit the current rows.
    """
    handler = _PROJECTIONS.get(event.type)
    if handler is not None:
        handler(_Ctx(store, event, seq), payload)
