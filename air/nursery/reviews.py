"""REVIEWING_WAVE and debug knowledge (SDD §7.1, §19.5): what the Scheduler adds after success.

Owns ``schedule_reviews`` (a review task per completed code change of a wave, under
``review: wave``), ``learn`` (a debug task's landed fix becomes a DebugKnowledgeStore record,
then a ``debug.record.created`` event) and ``known_fixes`` (the records a new debug task is
told about).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

import trio

from air.artifacts.knowledge import DebugKnowledgeStore
from air.contracts import (
    DebugRecord,
    TaskConstraints,
    TaskDependencySpec,
    TaskScope,
    TaskSpec,
    TaskType,
    new_id,
    utc_now_iso,
)
from air.nursery.graph import TaskNode
from air.nursery.seams import TaskOutcome

if TYPE_CHECKING:
    from air.nursery.scheduler import Scheduler

__all__ = ["knowledge_path", "known_fixes", "learn", "schedule_reviews"]


def knowledge_path(project_root: str) -> str | None:
    """``.air/local/debug-records.db`` of the project (None: the project has no .air/local)."""
    local = os.path.join(project_root, ".air", "local")
    return os.path.join(local, DebugKnowledgeStore.FILENAME) if os.path.isdir(local) else None


async def known_fixes(project_root: str, signature: str | None) -> list[DebugRecord]:
    """DebugKnowledgeStore records with ``signature`` (none when the project has no store)."""
    path = knowledge_path(project_root)
    if not signature or path is None:
        return []

    def lookup() -> list[DebugRecord]:
        store = DebugKnowledgeStore.open(path)
        try:
            return store.lookup_by_signature(signature)
        finally:
            store.close()

    return await trio.to_thread.run_sync(lookup)


async def learn(s: Scheduler, node: TaskNode, outcome: TaskOutcome) -> None:
    """A debug task's landed fix becomes a DebugKnowledgeStore record, then (outbox order:
    the store first) a ``debug.record.created`` event."""
    result = outcome.result
    if node.spec.type != TaskType.DEBUG or result is None or not node.parent_task_id:
        return
    body = result.result or {}
    parent = s.ledger.state().tasks.get(node.parent_task_id)
    error = parent.last_error if parent is not None else None
    signature = (error.semantic_signature if error else None) or body.get("failure_signature")
    if not body.get("fixed") or not signature:
        return
    path = knowledge_path(s.project_root)
    if path is None:
        return
    now = utc_now_iso()
    record = DebugRecord(
        debug_record_id=new_id("dbg"),
        failure_signature=str(signature),
        task_id=node.parent_task_id,
        session_id=s.ledger.session_id,
        diagnosis=str(body.get("diagnosis") or result.summary),
        root_cause=body.get("root_cause"),
        fix_summary=result.summary,
        fixed=True,
        created_at=now,
        updated_at=now,
        metadata={"debug_task_id": node.task_id, "changed_files": result.changed_files},
    )

    def insert() -> None:
        store = DebugKnowledgeStore.open(path)
        try:
            store.insert(record)
        finally:
            store.close()

    await trio.to_thread.run_sync(insert)
    await s.ledger.record(
        "debug.record.created",
        {
            "debug_record_id": record.debug_record_id,
            "failure_signature": record.failure_signature,
            "task_id": node.parent_task_id,
        },
    )


async def schedule_reviews(s: Scheduler, completed: Sequence[str]) -> None:
    """A review task for every completed execute/docs task of a wave (not reviewed yet)."""
    for task_id in completed:
        node = s.graph.tasks[task_id]
        if node.spec.type not in (TaskType.EXECUTE, TaskType.DOCS):
            continue
        review_id = f"{task_id}.review"
        if review_id in s.graph.tasks:
            continue
        spec = TaskSpec(
            id=review_id,
            type=TaskType.REVIEW,
            title=f"Review: {node.spec.title}",
            description=f"Review the change made by task {task_id}: {node.spec.description}",
            acceptance_criteria=node.spec.acceptance_criteria,
            scope=TaskScope(write_area=[]),
            dependencies=[TaskDependencySpec(depends_on_task_id=task_id)],
            constraints=TaskConstraints(
                max_turns=node.spec.constraints.max_turns,
                soft_timeout_ms=node.spec.constraints.soft_timeout_ms,
                hard_timeout_ms=node.spec.constraints.hard_timeout_ms,
                retry_budget=0,
            ),
            output_contract="ReviewerResult",
        )
        await s.create_tasks([spec])
        s.graph.add_task(spec)
