"""REPAIRING_OR_CONTINUING (SDD §20.2): what follows a failed task, and tasks that can never run.

Owns ``repair`` (apply the RetryPlanner to every failed task not decided on yet, then block
the pending tasks whose hard dependency ended without success), ``decide`` (one failed task:
retry, retry alone, a debug task, skip, or give up), ``debug_spec`` and ``known_fixes`` (the
DebugKnowledgeStore records a new debug task is told about). Both read only the
failed and doomed sets the TaskGraph keeps up to date, never every task.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import trio

from air.contracts.error import AirError, ErrorKind, make_air_error
from air.contracts.task import DependencyType, RetryAction, TaskSpec, TaskStatus, TaskType
from air.nursery.deadlines import disarm
from air.nursery.facts import block, create_tasks
from air.nursery.graph import TaskNode
from air.nursery.ledger import stored_task
from air.nursery.retry import debug_context, retry_spec

if TYPE_CHECKING:
    from air.contracts.artifact_records import DebugRecord
    from air.nursery.state import Ports, RunState

__all__ = ["debug_spec", "decide", "known_fixes", "repair"]


async def repair(st: RunState, io: Ports) -> None:
    """Apply the RetryPlanner to failed tasks, then block tasks whose hard deps are dead."""
    graph = st.graph
    changed = True
    while changed:
        changed = False
        for node in graph.open_failures():
            await decide(st, io, node)
            changed = True
        for node in graph.doomed_tasks():
            dead = [
                e.depends_on_task_id
                for e in graph.edges_of(node.task_id)
                if e.dependency_type == DependencyType.HARD
                and graph.hard_dep_dead(e.depends_on_task_id)
            ]
            reason = "hard dependency ended without success: " + ", ".join(dead)
            await block(io.ledger, node, reason)
            changed = True


async def decide(st: RunState, io: Ports, node: TaskNode) -> None:
    """What follows one failed task (the RetryPlanner's decision over its recorded failures)."""
    stored = stored_task(io.ledger.state().tasks[node.task_id])
    error = stored.last_error or make_air_error(
        kind=ErrorKind.TASK_FAILED, message="the task failed"
    )
    decision = io.retry.decide(node, stored.attempts, error)
    action = decision.action
    if action in (RetryAction.RETRY, RetryAction.RETRY_SERIAL):
        # the dimension the planner chose is applied, not dropped (IMPL-REVIEW-2); re-derived
        # from the same durable failures on a restart
        node.spec = retry_spec(io.retry, node, decision)
        node.status = TaskStatus.PENDING
        if action == RetryAction.RETRY_SERIAL:
            st.solo.add(node.task_id)
    elif action == RetryAction.DEBUG:
        # The debug task is the failed task's child (task.created parent_task_id); the
        # graph re-runs a task only after its debug children have ended.
        debug_id = f"{node.task_id}.debug{len(stored.attempts)}"
        if debug_id not in st.graph.tasks:
            known = await known_fixes(io, error.semantic_signature)
            spec = debug_spec(node.spec, debug_id, error, known)
            await create_tasks(io.ledger, [spec], parent_task_id=node.task_id)
            st.graph.add_task(spec, parent_task_id=node.task_id)
        node.status = TaskStatus.PENDING
    elif action == RetryAction.SKIP:
        node.skipped = True
        node.final = True
    else:
        node.final = True
    if node.final:
        disarm(st, node.task_id)


async def known_fixes(io: Ports, signature: str | None) -> list[DebugRecord]:
    """The project's DebugKnowledgeStore records with ``signature``, fixed and newest first
    (none when the project has no ``.air/local``): what a new debug task is told about."""
    if not signature:
        return []
    from air.session.knowledge import KnowledgeService  # the knowledge stores, only now

    def lookup() -> list[DebugRecord]:
        service = KnowledgeService.for_project(io.ledger, io.project_root)
        try:
            return service.known_fixes(signature)
        finally:
            service.close()

    return await trio.to_thread.run_sync(lookup)


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
