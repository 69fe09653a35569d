"""The durable facts of a task's life (SDD §7.1, §20.2): each is recorded before the next step
depends on it.

Owns ``create_tasks`` (``task.created``, idempotent), ``add_dependency``
(``task.dependency.added`` and the graph's edge), ``record_end`` (a task's end event, with its
attempt index) and ``end_task`` (that event and the node's new status together), ``block``
(``task.blocked``). They take the ledger and the graph, never the Scheduler. ``RECORD_GRACE``
bounds a record written under a shield as the run unwinds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from air.contracts.task import DependencySource, TaskDependencySpec, TaskSpec, TaskStatus
from air.nursery.graph import DependencyEdge, TaskGraph, TaskNode

if TYPE_CHECKING:
    from air.nursery.ledger import Ledger

__all__ = ["RECORD_GRACE", "add_dependency", "block", "create_tasks", "end_task", "record_end"]

RECORD_GRACE = 10.0  # seconds a shielded outcome write may take before we give up on it


async def create_tasks(
    ledger: Ledger, specs: Sequence[TaskSpec], *, parent_task_id: str | None = None
) -> list[str]:
    """Record ``task.created`` for every spec not already in the session (idempotent).

    Returns:
        The ids created now (already-known ids are skipped, so re-submitting the same
        batch on resume runs nothing twice).
    """
    known = set(ledger.state().tasks)
    created: list[str] = []
    for spec in specs:
        if spec.id in known:
            continue
        await ledger.record(
            "task.created",
            {
                "task_spec": spec.model_dump(mode="json"),
                "dependencies": [_dependency_row(d) for d in spec.dependencies],
                **({"parent_task_id": parent_task_id} if parent_task_id else {}),
            },
        )
        known.add(spec.id)
        created.append(spec.id)
    return created


async def add_dependency(
    ledger: Ledger, graph: TaskGraph, task_id: str, dependency: TaskDependencySpec
) -> None:
    """Persist one dependency edge (``task.dependency.added``) and add it to the graph.

    Raises:
        AirException: ``system_error`` when the event registry has no such event.
    """
    await ledger.record(
        "task.dependency.added", {"task_id": task_id, **_dependency_row(dependency)}
    )
    graph.add_edge(
        DependencyEdge(
            task_id=task_id,
            depends_on_task_id=dependency.depends_on_task_id,
            dependency_type=dependency.dependency_type,
            reason=dependency.reason,
            source=dependency.source,
        )
    )


async def record_end(
    ledger: Ledger,
    node: TaskNode,
    event_type: str,
    payload: dict[str, Any],
    *,
    attempt_index: int | None = None,
) -> None:
    """Record a task's end event (``task.completed/failed/blocked/cancelled/interrupted``)."""
    body = {"task_id": node.task_id, **payload}
    if attempt_index is not None and attempt_index >= 1:
        body["attempt_index"] = attempt_index
    await ledger.record(event_type, body)


async def end_task(
    ledger: Ledger,
    node: TaskNode,
    event_type: str,
    payload: dict[str, Any],
    status: TaskStatus,
    *,
    final: bool = True,
    attempt_index: int | None = None,
) -> None:
    """Record the end event, then give the node its status (``final``: nothing follows)."""
    await record_end(ledger, node, event_type, payload, attempt_index=attempt_index)
    node.status = status
    node.final = final


async def block(ledger: Ledger, node: TaskNode, reason: str) -> None:
    """Record ``task.blocked`` for a task that cannot run."""
    await end_task(ledger, node, "task.blocked", {"reason": reason}, TaskStatus.BLOCKED)


def _dependency_row(dep: TaskDependencySpec) -> dict[str, Any]:
    return {
        "depends_on_task_id": dep.depends_on_task_id,
        "dependency_type": dep.dependency_type.value,
        "reason": dep.reason,
        "source": (dep.source or DependencySource.SCHEDULER).value,
    }
