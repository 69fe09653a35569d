"""The SQL projection of the task graph: ``tasks``, ``task_dependencies``, ``task_attempts``,
compaction tasks and ``summaries`` rows.

Owns the steps of ``task.*``, ``task.dependency.added``, ``context.compaction.*`` and
``summary.created`` (``TASK_PROJECTIONS``): a task's row moves only along
``air.events.transitions.TASK_FROM`` (the fold's table), its attempt row ends with it and a
failure's kind, signature and error are kept on the attempt for the RetryPlanner.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from air.events.projection_context import (
    ProjectionCtx,
    ProjectionStep,
    opt_json,
    projection_error,
    to_json,
    transition,
)
from air.events.transitions import TASK_FROM

if TYPE_CHECKING:
    from air.events.payloads.ends import (
        TaskBlockedPayload,
        TaskCancelledPayload,
        TaskCompletedPayload,
        TaskFailedPayload,
        TaskInterruptedPayload,
    )
    from air.events.payloads.knowledge import (
        CompactionCompletedPayload,
        CompactionFailedPayload,
        CompactionRequestedPayload,
        CompactionStartedPayload,
        SummaryCreatedPayload,
    )
    from air.events.payloads.start import (
        DependencyPayload,
        TaskCreatedPayload,
        TaskDependencyAddedPayload,
        TaskStartedPayload,
    )

__all__ = ["TASK_PROJECTIONS"]


def _insert_task(
    ctx: ProjectionCtx,
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
            "spec_json": to_json(spec),
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


def _task_created(ctx: ProjectionCtx, x: TaskCreatedPayload) -> None:
    from air.events.payloads.start import DependencyPayload  # loaded: x is one of its

    deps = x.dependencies or [DependencyPayload.from_spec(d) for d in x.task_spec.dependencies]
    _insert_task(ctx, x.task_spec, deps, x.origin_message_id, x.parent_task_id)


def _task_dependency_added(ctx: ProjectionCtx, x: TaskDependencyAddedPayload) -> None:
    for task_id in (x.task_id, x.depends_on_task_id):
        if ctx.store.tasks.get(task_id) is None:
            raise projection_error(ctx, f"dependency names unknown task {task_id}")
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


def _task_started(ctx: ProjectionCtx, x: TaskStartedPayload) -> None:
    expected = ctx.store.task_attempts.next_attempt_index(x.task_id)
    if x.attempt_index != expected:
        raise projection_error(
            ctx, f"attempt_index {x.attempt_index} for {x.task_id}, expected {expected}"
        )
    transition(
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
    ctx: ProjectionCtx,
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
                raise projection_error(
                    ctx, f"attempt {attempt_index} of task {task_id} does not exist"
                )
        return
    attempts.update_latest_running(task_id, patch)


def _task_completed(ctx: ProjectionCtx, x: TaskCompletedPayload) -> None:
    transition(
        ctx,
        ctx.store.tasks,
        x.task_id,
        f"task {x.task_id}",
        TASK_FROM["task.completed"],
        {
            "status": "completed",
            "worker_result_json": opt_json(x.worker_result),
            "completed_at": ctx.ts,
            "updated_at": ctx.ts,
        },
    )
    _end_attempt(ctx, x.task_id, x.attempt_index, "completed")


def _task_blocked(ctx: ProjectionCtx, x: TaskBlockedPayload) -> None:
    transition(
        ctx,
        ctx.store.tasks,
        x.task_id,
        f"task {x.task_id}",
        TASK_FROM["task.blocked"],
        {
            "status": "blocked",
            "blocked_reason": x.reason,
            "worker_result_json": opt_json(x.worker_result),
            "updated_at": ctx.ts,
        },
    )
    _end_attempt(ctx, x.task_id, x.attempt_index, "blocked")


def _task_failed(ctx: ProjectionCtx, x: TaskFailedPayload) -> None:
    transition(
        ctx,
        ctx.store.tasks,
        x.task_id,
        f"task {x.task_id}",
        TASK_FROM["task.failed"],
        {
            "status": "failed",
            "error_json": to_json(x.error),
            "worker_result_json": opt_json(x.worker_result),
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
            "failure_error_json": to_json(x.error),
        },
    )


def _task_cancelled(ctx: ProjectionCtx, x: TaskCancelledPayload) -> None:
    transition(
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


def _task_interrupted(ctx: ProjectionCtx, x: TaskInterruptedPayload) -> None:
    transition(
        ctx,
        ctx.store.tasks,
        x.task_id,
        f"task {x.task_id}",
        TASK_FROM["task.interrupted"],
        {"status": "interrupted", "updated_at": ctx.ts},
    )
    _end_attempt(ctx, x.task_id, x.attempt_index, "interrupted")


def _compaction_requested(ctx: ProjectionCtx, x: CompactionRequestedPayload) -> None:
    if not x.accepted or x.task_spec is None:
        return
    if x.task_spec.type.value != "compact":
        raise projection_error(
            ctx, f"compaction task {x.task_spec.id} has type {x.task_spec.type.value}"
        )
    _insert_task(ctx, x.task_spec, [], None, None)


def _compaction_started(ctx: ProjectionCtx, x: CompactionStartedPayload) -> None:
    transition(
        ctx,
        ctx.store.tasks,
        x.task_id,
        f"compaction task {x.task_id}",
        TASK_FROM["context.compaction.started"],
        {"status": "running", "agent_id": x.agent_id, "started_at": ctx.ts, "updated_at": ctx.ts},
    )


def _compaction_completed(ctx: ProjectionCtx, x: CompactionCompletedPayload) -> None:
    transition(
        ctx,
        ctx.store.tasks,
        x.task_id,
        f"compaction task {x.task_id}",
        TASK_FROM["context.compaction.completed"],
        {
            "status": "completed",
            "worker_result_json": to_json({"summary_id": x.summary_id}),
            "completed_at": ctx.ts,
            "updated_at": ctx.ts,
        },
    )


def _compaction_failed(ctx: ProjectionCtx, x: CompactionFailedPayload) -> None:
    transition(
        ctx,
        ctx.store.tasks,
        x.task_id,
        f"compaction task {x.task_id}",
        TASK_FROM["context.compaction.failed"],
        {
            "status": "blocked" if x.blocked else "failed",
            "error_json": to_json(x.error),
            "updated_at": ctx.ts,
        },
    )


def _summary_created(ctx: ProjectionCtx, x: SummaryCreatedPayload) -> None:
    row = x.model_dump(mode="json")
    row["session_id"] = ctx.event.session_id
    row["created_at"] = ctx.ts
    ctx.store.summaries.insert(row)


TASK_PROJECTIONS: dict[str, ProjectionStep] = {
    "task.created": _task_created,
    "task.dependency.added": _task_dependency_added,
    "task.started": _task_started,
    "task.completed": _task_completed,
    "task.blocked": _task_blocked,
    "task.failed": _task_failed,
    "task.cancelled": _task_cancelled,
    "task.interrupted": _task_interrupted,
    "context.compaction.requested": _compaction_requested,
    "context.compaction.started": _compaction_started,
    "context.compaction.completed": _compaction_completed,
    "context.compaction.failed": _compaction_failed,
    "summary.created": _summary_created,
}
"""The task graph's step per event type."""
