"""WavePlanner: which runnable tasks go into the next wave, where they run, and on which model
(SDD §7.3).

Owns: ``ResourceSnapshot``, ``WaveDecision``, ``WavePlanner`` and ``default_max_workers``.
Rules: hard dependencies gate, soft dependencies order, conflict/serialization edges and
overlapping write areas never run together (an uncertain overlap is serialized and the edge
is returned so the Scheduler persists it), reviewers are read-only and run concurrently, and
the machine's resources cap the wave. Pure code.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from contextlib import closing
from typing import Literal, NamedTuple

from air.contracts.task import (
    DependencySource,
    DependencyType,
    SchedulerWavePlan,
    TaskType,
    WavePlanEntry,
    WorkspacePlan,
    WorkspaceStrategy,
)
from air.nursery.graph import DependencyEdge, TaskGraph, TaskNode
from air.nursery.write_areas import narrows_project

__all__ = [
    "IsolationPolicy",
    "ResourceSnapshot",
    "WaveDecision",
    "WavePlanner",
    "default_max_workers",
]

IsolationPolicy = Literal["auto", "main", "worktree", "isolated_copy"]


def default_max_workers() -> int:
    """Default cap on concurrent workers: the CPUs this process may use, at least 1, at most 16."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(16, cpus))


class ResourceSnapshot(NamedTuple):
    """What the machine allows now: the worker cap and how many workers already run."""

    max_workers: int
    running: int = 0

    @property
    def free_slots(self) -> int:
        return max(0, self.max_workers - self.running)


class WaveDecision(NamedTuple):
    """A wave plan plus the conflict edges inferred while planning it (to persist); a read-only
    record, so a NamedTuple (IMPL-BOOT-14)."""

    plan: SchedulerWavePlan
    inferred_edges: list[DependencyEdge]


class WavePlanner:
    """Plans one wave at a time from a TaskGraph (SDD §7.3)."""

    def __init__(
        self,
        *,
        isolation: IsolationPolicy = "auto",
        git_repo: bool = False,
        default_model_id: str | None = None,
    ) -> None:
        self.isolation: IsolationPolicy = isolation
        self.git_repo = git_repo
        self.default_model_id = default_model_id

    def plan(
        self,
        graph: TaskGraph,
        resources: ResourceSnapshot,
        *,
        wave_index: int,
        planned_at: str,
    ) -> WaveDecision:
        """Choose the next wave.

        Args:
            graph: the current graph (running tasks count as occupying their write areas).
            resources: the worker cap and the number of workers running now.
            wave_index: the index recorded in the plan.
            planned_at: ISO time recorded in the plan.

        Returns:
            The plan (possibly with no entries) and the conflict edges inferred for it.
        """
        with closing(graph.runnable()) as candidates:
            selected, serialized, edges = self.serialize_write_conflicts(
                graph, candidates, resources.free_slots
            )
        writers = [n for n in selected if n.write_area != []]
        entries = [
            WavePlanEntry(
                task_id=n.task_id,
                workspace=self.assign_workspace(n, concurrent_writers=len(writers)),
                model_id=self.assign_model(n),
            )
            for n in selected
        ]
        plan = SchedulerWavePlan(
            session_id=graph.session_id,
            wave_index=wave_index,
            entries=entries,
            serialized_task_ids=[n.task_id for n in serialized],
            planned_at=planned_at,
        )
        return WaveDecision(plan=plan, inferred_edges=edges)

    def serialize_write_conflicts(
        self, graph: TaskGraph, candidates: Iterable[TaskNode], slots: int
    ) -> tuple[list[TaskNode], list[TaskNode], list[DependencyEdge]]:
        """Split candidates into (runnable now, held back for a conflict, inferred edges).

        Candidates are taken in order until the free slots are filled; the rest are not
        looked at (they simply wait), so planning costs O(slots + conflicts), not O(tasks).
        """
        selected: list[TaskNode] = []
        serialized: list[TaskNode] = []
        edges: list[DependencyEdge] = []
        for node in candidates:
            if len(selected) >= slots:
                break
            blocker = next((s for s in selected if graph.conflicts_with(node, s)), None)
            if blocker is None:
                selected.append(node)
                continue
            serialized.append(node)
            # one stored edge per (task, depends_on) pair: a soft edge in the same direction
            # already holds the pair, and the overlap is re-inferred each wave
            if graph.areas_overlap(node, blocker) and not graph.has_edge_between(
                node.task_id, blocker.task_id
            ):
                edges.append(
                    DependencyEdge(
                        task_id=node.task_id,
                        depends_on_task_id=blocker.task_id,
                        dependency_type=DependencyType.CONFLICT,
                        reason="write areas overlap: "
                        f"{_area_text(node.write_area)} / {_area_text(blocker.write_area)}",
                        source=DependencySource.SCHEDULER,
                    )
                )
        return selected, serialized, edges

    def assign_workspace(self, node: TaskNode, *, concurrent_writers: int) -> WorkspacePlan:
        """Where the task runs. Read-only roles use the project root (``main``). Under ``auto``
        every writer in a git project gets a worktree (its work lands as a merge commit);
        outside git, concurrent writers get isolated copies, and so does a lone writer whose
        scope narrows the project (a write area, ``allowed_paths``, ``denied_paths``): only a
        merge checks what its commands wrote (a build's own writes, which no analysis of a
        command sees); a lone writer of the whole project uses ``main``.
        """
        strategy: WorkspaceStrategy
        if node.write_area == [] or node.type == TaskType.REVIEW:
            strategy = WorkspaceStrategy.MAIN
        elif self.isolation == "main":
            strategy = WorkspaceStrategy.MAIN
        elif self.isolation == "worktree":
            strategy = (
                WorkspaceStrategy.WORKTREE if self.git_repo else WorkspaceStrategy.ISOLATED_COPY
            )
        elif self.isolation == "isolated_copy":
            strategy = WorkspaceStrategy.ISOLATED_COPY
        elif self.git_repo:
            strategy = WorkspaceStrategy.WORKTREE
        elif concurrent_writers > 1 or narrows_project(node.spec.scope):
            strategy = WorkspaceStrategy.ISOLATED_COPY
        else:
            strategy = WorkspaceStrategy.MAIN
        return WorkspacePlan(task_id=node.task_id, strategy=strategy)

    def assign_model(self, node: TaskNode) -> str | None:
        return node.spec.constraints.model_id or self.default_model_id


def _area_text(area: list[str] | None) -> str:
    if area is None:
        return "<whole project>"
    return ",".join(area) or "<read-only>"
