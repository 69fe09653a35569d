"""REPAIRING_OR_CONTINUING (SDD §20.2): what follows a failed task, and tasks that can never run.

Owns ``repair`` (apply the RetryPlanner to every failed task not decided on yet, then block
the pending tasks whose hard dependency ended without success), ``decide`` (one failed task:
retry, retry alone, a debug task, skip, or give up) and ``debug_spec``. Both read only the
failed and doomed sets the TaskGraph keeps up to date, never every task.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from air.contracts.error import AirError, ErrorKind, make_air_error
from air.contracts.task import DependencyType, RetryAction, TaskSpec, TaskStatus, TaskType
from air.nursery.graph import TaskNode
from air.nursery.ledger import stored_task
from air.nursery.retry import debug_context, retry_spec

if TYPE_CHECKING:
    from air.contracts.artifact_records import DebugRecord
    from air.nursery.scheduler import Scheduler

__all__ = ["debug_spec", "decide", "repair"]


async def repair(s: Scheduler) -> None:
    """Apply the RetryPlanner to failed tasks, then block tasks whose hard deps are dead."""
    changed = True
    while changed:
        changed = False
        for node in s.graph.open_failures():
            await decide(s, node)
            changed = True
        for node in s.graph.doomed_tasks():
            dead = [
                e.depends_on_task_id
                for e in s.graph.edges_of(node.task_id)
                if e.dependency_type == DependencyType.HARD
                and s.graph.hard_dep_dead(e.depends_on_task_id)
            ]
            await s.block(node, "hard dependency ended without success: " + ", ".join(dead))
            changed = True


async def decide(s: Scheduler, node: TaskNode) -> None:
    """What follows one failed task (the RetryPlanner's decision over its recorded failures)."""
    stored = stored_task(s.ledger.state().tasks[node.task_id])
    error = stored.last_error or make_air_error(
        kind=ErrorKind.TASK_FAILED, message="the task failed"
    )
    decision = s.retry.decide(node, stored.attempts, error)
    action = decision.action
    if action in (RetryAction.RETRY, RetryAction.RETRY_SERIAL):
        # the dimension the planner chose is applied, not dropped (IMPL-REVIEW-2); re-derived
        # from the same durable failures on a restart
        node.spec = retry_spec(s.retry, node, decision)
        node.status = TaskStatus.PENDING
        if action == RetryAction.RETRY_SERIAL:
            s.solo.add(node.task_id)
    elif action == RetryAction.DEBUG:
        # The debug task is the failed task's child (task.created parent_task_id); the
        # graph re-runs a task only after its debug children have ended.
        debug_id = f"{node.task_id}.debug{len(stored.attempts)}"
        if debug_id not in s.graph.tasks:
            from air.nursery.reviews import known_fixes  # the knowledge stores, only now

            known = await known_fixes(s, error.semantic_signature)
            spec = debug_spec(node.spec, debug_id, error, known)
            await s.create_tasks([spec], parent_task_id=node.task_id)
            s.graph.add_task(spec, parent_task_id=node.task_id)
        node.status = TaskStatus.PENDING
    elif action == RetryAction.SKIP:
        node.skipped = True
        node.final = True
    else:
        node.final = True


def debug_spec(
    spec: TaskSpec, debug_id: str, error: AirError, known: Sequence[DebugRecord] = ()
) -> TaskSpec:
    """The debug task for a failed task (retry budget 0; the known fixes in its description)."""
    return TaskSpec(
        id=debug_id,
        type=TaskType.DEBUG,
        title=f"Debug: {spec.title}",
        description=(
            f"Task {spec.id} failed with {error.kind.value}: {error.message}. "
            "Find the root cause and fix it so the task can succeed.\n"
            + debug_context(error, known)
        ),
        acceptance_criteria=spec.acceptance_criteria,
        scope=spec.scope,
        verification=spec.verification,
        constraints=spec.constraints.model_copy(update={"retry_budget": 0}),
        output_contract="DebuggerResult",
    )
