"""REVIEWING_WAVE and debug knowledge (SDD §7.1, §19.5): what the Scheduler adds after success.

Owns ``schedule_reviews`` (a review task per completed code change of a wave, under
``review: wave``), ``learn`` (a debug task's landed fix goes through the KnowledgeService's
outbox: DebugKnowledgeStore record, then ``debug.record.created``) and ``known_fixes`` (the
records a new debug task is told about).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import trio

from air.contracts import (
    DebugRecord,
    TaskConstraints,
    TaskDependencySpec,
    TaskScope,
    TaskSpec,
    TaskType,
)
from air.nursery.graph import TaskNode
from air.nursery.knowledge import KnowledgeService
from air.nursery.seams import TaskOutcome

if TYPE_CHECKING:
    from air.nursery.scheduler import Scheduler

__all__ = ["known_fixes", "learn", "schedule_reviews"]


async def known_fixes(s: Scheduler, signature: str | None) -> list[DebugRecord]:
    """The project's DebugKnowledgeStore records with ``signature``, fixed and newest first
    (none when the project has no ``.air/local``): what a new debug task is told about."""
    if not signature:
        return []

    def lookup() -> list[DebugRecord]:
        service = KnowledgeService.for_project(s.ledger, s.project_root)
        try:
            return service.known_fixes(signature)
        finally:
            service.close()

    return await trio.to_thread.run_sync(lookup)


async def learn(s: Scheduler, node: TaskNode, outcome: TaskOutcome) -> None:
    """A debug task's landed fix goes through the knowledge outbox (SDD §18.4): the
    DebugKnowledgeStore record first, then ``debug.record.created``, then mining."""
    if node.spec.type != TaskType.DEBUG or outcome.result is None or not node.parent_task_id:
        return
    parent = s.ledger.state().tasks.get(node.parent_task_id)
    service = KnowledgeService.for_project(s.ledger, s.project_root)
    try:
        await service.learn_from_debug(
            node.task_id,
            node.parent_task_id,
            outcome.result,
            parent.last_error if parent is not None else None,
        )
    finally:
        service.close()


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
