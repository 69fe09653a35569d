"""LOADING_GRAPH and the run's result (SDD §7.1, §16.3): the TaskGraph from the ledger's fold.

Owns ``graph_from_state`` (the TaskGraph the Scheduler plans from, rebuilt from the fold on
every start: interrupted tasks become pending again), ``invalid_refs`` (tasks that depend on
an unknown task or sit on a dependency cycle, with why) and ``run_result``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from air.contracts.task import TaskStatus
from air.events.fold_state import SessionState
from air.nursery.graph import TaskGraph
from air.nursery.ledger import edge_of

if TYPE_CHECKING:
    from air.contracts.task_results import SchedulerRunResult

__all__ = ["graph_from_state", "invalid_refs", "run_result"]

_FINAL = (TaskStatus.COMPLETED, TaskStatus.BLOCKED, TaskStatus.CANCELLED)


def graph_from_state(
    state: SessionState, session_id: str, *, project_root: str | None = None
) -> TaskGraph:
    """The TaskGraph of a session's folded tasks and edges (O(tasks + edges), once a run)."""
    graph = TaskGraph(session_id, project_root=project_root)
    tasks = state.scheduler_tasks()
    for stored in tasks:
        status = stored.status
        if status == TaskStatus.INTERRUPTED:
            status = TaskStatus.PENDING  # interrupted ──resume──▶ pending
        node = graph.add_task(
            stored.spec,
            status=status,
            attempts=stored.attempt_count,
            parent_task_id=stored.parent_task_id,
            packed=stored.spec_text,
        )
        node.final = status in _FINAL
    for stored in tasks:
        for fact in state.edges_of(stored.task_id):
            graph.add_edge(edge_of(fact))
    return graph


def invalid_refs(graph: TaskGraph) -> dict[str, str]:
    """Per task that can never run for its references: the reason it is blocked."""
    report = graph.validate_refs()
    bad: dict[str, str] = {}
    for edge in report.missing:
        bad[edge.task_id] = f"depends on unknown task {edge.depends_on_task_id}"
    for task_id in report.cycle[:-1]:
        bad.setdefault(task_id, "dependency cycle: " + " -> ".join(report.cycle))
    return bad


def run_result(
    graph: TaskGraph,
    session_id: str,
    status: Literal["completed", "blocked", "cancelled"],
    waves: int,
) -> SchedulerRunResult:
    """The SchedulerRunResult of a run that ended with ``status``."""
    from air.contracts.task_results import SchedulerRunResult

    tasks = list(graph.tasks.values())

    def ids(*statuses: TaskStatus) -> list[str]:
        return [n.task_id for n in tasks if n.status in statuses]

    return SchedulerRunResult(
        session_id=session_id,
        status=status,
        completed_task_ids=ids(TaskStatus.COMPLETED),
        failed_task_ids=ids(TaskStatus.FAILED),
        blocked_task_ids=ids(TaskStatus.BLOCKED),
        cancelled_task_ids=ids(TaskStatus.CANCELLED, TaskStatus.INTERRUPTED),
        waves=waves,
    )
