"""The in-memory TaskGraph the Scheduler plans from (SDD §7.2).

Owns: ``TaskNode``, ``DependencyEdge``, ``TaskGraph`` (runnable tasks kept as a set and a heap
updated per change, doomed and open-failed tasks, dependents, reference and cycle validation);
re-exports ``write_areas_overlap`` and ``find_cycle`` from ``air.nursery.write_areas``. Pure
code: the graph is rebuilt from the ledger's fold by the Scheduler and never persisted from
here.
"""

from __future__ import annotations

import heapq
from collections.abc import Generator
from contextlib import closing
from sys import intern
from typing import NamedTuple

from air.contracts.task import DependencySource, DependencyType, TaskSpec, TaskStatus, TaskType
from air.events.packed import pack, unpack_spec
from air.nursery.write_areas import find_cycle, write_areas_overlap

__all__ = [
    "DependencyEdge",
    "OrphanReport",
    "TaskGraph",
    "TaskNode",
    "find_cycle",
    "write_areas_overlap",
]

# Statuses after which a task will not run again unless the RetryPlanner re-queues it.
_ENDED = frozenset(
    {
        TaskStatus.COMPLETED,
        TaskStatus.FAILED,
        TaskStatus.BLOCKED,
        TaskStatus.CANCELLED,
        TaskStatus.INTERRUPTED,
    }
)


class DependencyEdge(NamedTuple):
    """One row of ``task_dependencies``: ``task_id`` depends on ``depends_on_task_id``."""

    task_id: str
    depends_on_task_id: str
    dependency_type: DependencyType
    reason: str | None = None
    source: DependencySource | None = None


_TRACKED = frozenset({"status", "final", "skipped"})


_READ_ONLY = (TaskType.REVIEW, TaskType.MINE_EXPERIENCE, TaskType.COMPACT)


class TaskNode:
    """A task as the Scheduler sees it: its spec, status and attempt history summary.

    Setting ``status``, ``final`` or ``skipped`` tells the node's graph (when it has one), which
    re-evaluates only this task and its dependents at the next query (O(changes)).

    The spec is held as its packed JSON text and validated when read (``spec``, IMPL-PACK-1);
    what planning reads per decision (``task_id``, ``type``, ``write_area``) is kept beside it.
    """

    __slots__ = (
        "_area",
        "_spec_text",
        "attempts",
        "final",
        "graph",
        "order",
        "parent_task_id",
        "skipped",
        "status",
        "task_id",
        "type",
    )

    _spec_text: str
    _area: list[str] | None
    """The spec's write area; None for a read-only role too (``write_area`` says ``[]``)."""
    task_id: str
    """The id, interned: the fold's fact, the agents naming the task and the graph's keys
    share one string."""
    type: TaskType
    status: TaskStatus
    attempts: int
    order: int
    """Creation order; ties in planning are broken by it."""
    skipped: bool
    """A failed task whose failure the RetryPlanner allowed to skip (dependents may run)."""
    final: bool
    """Ended for good: no retry will be made (set by the Scheduler)."""
    parent_task_id: str | None
    """The task this one was created for (a debug task's failed task)."""
    graph: TaskGraph | None

    def __init__(
        self,
        spec: TaskSpec,
        status: TaskStatus = TaskStatus.PENDING,
        attempts: int = 0,
        order: int = 0,
        skipped: bool = False,
        final: bool = False,
        parent_task_id: str | None = None,
        graph: TaskGraph | None = None,
        *,
        packed: str | None = None,
    ) -> None:
        object.__setattr__(self, "graph", None)
        self._set_spec(spec, packed)
        self.status = status
        self.attempts = attempts
        self.order = order
        self.skipped = skipped
        self.final = final
        self.parent_task_id = parent_task_id
        self.graph = graph

    def __setattr__(self, name: str, value: object) -> None:
        object.__setattr__(self, name, value)
        if name in _TRACKED:
            graph = self.graph
            if graph is not None:
                graph._touch(self)

    def __repr__(self) -> str:
        return (
            f"TaskNode(task_id={self.task_id!r}, type={self.type.value!r},"
            f" status={self.status.value!r}, attempts={self.attempts}, order={self.order})"
        )

    def _set_spec(self, spec: TaskSpec, packed: str | None) -> None:
        object.__setattr__(self, "_spec_text", packed if packed is not None else pack(spec))
        object.__setattr__(self, "task_id", intern(spec.id))
        object.__setattr__(self, "type", spec.type)
        read_only = spec.type in _READ_ONLY
        object.__setattr__(self, "_area", None if read_only else spec.scope.write_area)

    @property
    def write_area(self) -> list[str] | None:
        """The globs the task may write; ``[]`` for read-only roles (reviewers)."""
        if self.type in _READ_ONLY:
            return []
        return self._area

    @property
    def spec(self) -> TaskSpec:
        return unpack_spec(self._spec_text)

    @spec.setter
    def spec(self, spec: TaskSpec) -> None:
        self._set_spec(spec, None)


class OrphanReport(NamedTuple):
    """References that point nowhere, and dependency cycles (SDD §18.3 for the graph); a
    read-only record, so a NamedTuple (IMPL-BOOT-14)."""

    missing: list[DependencyEdge]
    cycle: list[str]

    @property
    def ok(self) -> bool:
        return not self.missing and not self.cycle


class TaskGraph:
    """Tasks and their dependency edges for one session (SDD §7.2), indexed for O(changes).

    Every edge is indexed by both ends; the runnable tasks (pending, gating dependencies met)
    are kept as a set plus a heap ordered by (unmet soft dependencies, creation order), and
    the doomed and open-failed tasks as sets. A status change marks the task dirty; the next
    query re-evaluates it and its dependents only, never every task.
    """

    def __init__(self, session_id: str, *, project_root: str | None = None) -> None:
        self.session_id = session_id
        self.project_root = project_root
        """Where the tasks' write areas are: an absolute entry inside it names the relative one."""
        self.tasks: dict[str, TaskNode] = {}
        self.dependencies: list[DependencyEdge] = []
        self._keys: set[tuple[str, str, DependencyType]] = set()
        self._out: dict[str, list[DependencyEdge]] = {}
        self._in: dict[str, list[DependencyEdge]] = {}
        self._pairs: set[frozenset[str]] = set()
        self._debug_children: dict[str, set[str]] = {}
        self._dirty: set[str] = set()
        self._ready: set[str] = set()
        self._rank: dict[str, tuple[int, int]] = {}
        self._rank_peak = 0
        """The most ranks held since ``_rank`` was last copied (``_unready``)."""
        self._heap: list[tuple[int, int, str]] = []
        self._doomed: set[str] = set()
        self._failed_open: set[str] = set()
        self._running: dict[str, TaskNode] = {}
        self.evaluations = 0
        """How many times a task's readiness was re-evaluated (O(changes): tests count it)."""
        self.heap_pops = 0
        """How many runnable-heap entries planning looked at."""

    # -- building -------------------------------------------------------------------------
    def add_task(
        self,
        spec: TaskSpec,
        status: TaskStatus = TaskStatus.PENDING,
        attempts: int = 0,
        parent_task_id: str | None = None,
        *,
        packed: str | None = None,
    ) -> TaskNode:
        """Add a task (``packed``: ``pack(spec)`` when the caller holds it already)."""
        node = TaskNode(
            spec=spec,
            status=status,
            attempts=attempts,
            order=len(self.tasks),
            parent_task_id=parent_task_id,
            packed=packed,
        )
        self.tasks[node.task_id] = node
        node.graph = self
        self._touch(node)
        if parent_task_id is not None and spec.type == TaskType.DEBUG:
            self._debug_children.setdefault(parent_task_id, set()).add(node.task_id)
            self._dirty.add(parent_task_id)
        for dep in spec.dependencies:
            self.add_edge(
                DependencyEdge(
                    task_id=spec.id,
                    depends_on_task_id=dep.depends_on_task_id,
                    dependency_type=dep.dependency_type,
                    reason=dep.reason,
                    source=dep.source,
                )
            )
        return node

    def add_edge(self, edge: DependencyEdge) -> bool:
        """Add an edge unless the same (task, depends_on, type) exists. Returns True if added."""
        key = (edge.task_id, edge.depends_on_task_id, edge.dependency_type)
        if key in self._keys:
            return False
        self._keys.add(key)
        self.dependencies.append(edge)
        self._out.setdefault(edge.task_id, []).append(edge)
        self._in.setdefault(edge.depends_on_task_id, []).append(edge)
        if edge.dependency_type in (DependencyType.CONFLICT, DependencyType.SERIALIZATION):
            self._pairs.add(frozenset((edge.task_id, edge.depends_on_task_id)))
        self._dirty.add(edge.task_id)
        return True

    def has_edge_between(self, task_id: str, depends_on_task_id: str) -> bool:
        """Whether a stored edge holds the pair: any edge ``task_id -> depends_on_task_id``,
        or a conflict/serialization edge in either direction."""
        if frozenset((task_id, depends_on_task_id)) in self._pairs:
            return True
        return any(e.depends_on_task_id == depends_on_task_id for e in self.edges_of(task_id))

    # -- change tracking ------------------------------------------------------------------
    def _touch(self, node: TaskNode) -> None:
        task_id = node.task_id
        self._dirty.add(task_id)
        if node.status == TaskStatus.RUNNING:
            self._running[task_id] = node
        else:
            self._running.pop(task_id, None)
        if node.status == TaskStatus.FAILED and not node.final:
            self._failed_open.add(task_id)
        else:
            self._failed_open.discard(task_id)

    def _refresh(self) -> None:
        """Re-evaluate the dirty tasks and the tasks that wait on them."""
        if not self._dirty:
            return
        dirty, self._dirty = self._dirty, set()
        todo: set[str] = set()
        for task_id in dirty:
            todo.add(task_id)
            for edge in self._in.get(task_id, ()):
                todo.add(edge.task_id)
            node = self.tasks.get(task_id)
            if node is not None and node.parent_task_id and node.type == TaskType.DEBUG:
                todo.add(node.parent_task_id)
        for task_id in todo:
            self._evaluate(task_id)

    def _evaluate(self, task_id: str) -> None:
        self.evaluations += 1
        node = self.tasks.get(task_id)
        if node is None or node.status != TaskStatus.PENDING:
            self._unready(task_id)
            self._doomed.discard(task_id)
            return
        if any(
            e.dependency_type == DependencyType.HARD and self.hard_dep_dead(e.depends_on_task_id)
            for e in self.edges_of(task_id)
        ):
            self._doomed.add(task_id)
        else:
            self._doomed.discard(task_id)
        if self.waiting_on(node):
            self._unready(task_id)
            return
        rank = (self._soft_rank(node), node.order)
        if task_id not in self._ready or self._rank.get(task_id) != rank:
            self._ready.add(task_id)
            self._rank[task_id] = rank
            self._rank_peak = max(self._rank_peak, len(self._rank))
            heapq.heappush(self._heap, (rank[0], rank[1], task_id))

    def _unready(self, task_id: str) -> None:
        # its rank goes with it: a started or ended task keeps no entry (IMPL-RSS-1); a heap
        # entry left behind is stale and dropped when popped
        self._ready.discard(task_id)
        peak = self._rank_peak
        if self._rank.pop(task_id, None) is not None and peak > 64 and len(self._rank) * 4 < peak:
            # a set or dict keeps the table of its largest size (a batch ready at once): copied
            # when a quarter of it is left, amortised O(1) per task
            self._rank, self._ready = dict(self._rank), set(self._ready)
            self._rank_peak = len(self._rank)

    # -- queries --------------------------------------------------------------------------
    def edges_of(self, task_id: str) -> list[DependencyEdge]:
        return self._out.get(task_id, [])

    def dependents_of(self, task_id: str) -> list[TaskNode]:
        ids = {e.task_id for e in self._in.get(task_id, ())}
        return [self.tasks[i] for i in sorted(ids, key=self._order) if i in self.tasks]

    def _order(self, task_id: str) -> int:
        node = self.tasks.get(task_id)
        return node.order if node else 1 << 30

    def hard_dep_satisfied(self, dep_id: str) -> bool:
        dep = self.tasks.get(dep_id)
        if dep is None:
            return False
        return dep.status == TaskStatus.COMPLETED or (
            dep.status == TaskStatus.FAILED and dep.skipped
        )

    def hard_dep_dead(self, dep_id: str) -> bool:
        """True when a hard dependency has ended for good without success."""
        dep = self.tasks.get(dep_id)
        if dep is None:
            return True
        if self.hard_dep_satisfied(dep_id):
            return False
        return dep.status in _ENDED and dep.final

    def waiting_on(self, node: TaskNode) -> list[str]:
        """Unmet gating dependencies (hard not completed, serialization not ended)."""
        waiting: list[str] = []
        for edge in self.edges_of(node.task_id):
            dep = self.tasks.get(edge.depends_on_task_id)
            if edge.dependency_type == DependencyType.HARD:
                if not self.hard_dep_satisfied(edge.depends_on_task_id):
                    waiting.append(edge.depends_on_task_id)
            elif edge.dependency_type == DependencyType.SERIALIZATION:
                if dep is None or not (dep.status in _ENDED and dep.final):
                    waiting.append(edge.depends_on_task_id)
        for child_id in sorted(self._debug_children.get(node.task_id, ()), key=self._order):
            child = self.tasks[child_id]
            if not (child.status in _ENDED and child.final):
                waiting.append(child_id)
        return waiting

    def conflicts_with(self, a: TaskNode, b: TaskNode) -> bool:
        """Whether two tasks must not run at the same time (conflict edge or write overlap)."""
        if frozenset((a.task_id, b.task_id)) in self._pairs:
            return True
        return self.areas_overlap(a, b)

    def areas_overlap(self, a: TaskNode, b: TaskNode) -> bool:
        """Whether two tasks' write areas may touch one file (``write_areas_overlap``)."""
        return write_areas_overlap(a.write_area, b.write_area, root=self.project_root)

    def running(self) -> list[TaskNode]:
        return sorted(self._running.values(), key=lambda n: n.order)

    def running_count(self) -> int:
        return len(self._running)

    def ranked(self) -> int:
        """How many tasks hold a planning rank: the runnable ones only (IMPL-RSS-1)."""
        return len(self._rank)

    def is_ready(self, task_id: str) -> bool:
        """Pending with every gating dependency met (conflicts with running tasks aside)."""
        self._refresh()
        return task_id in self._ready

    def runnable(self) -> Generator[TaskNode, None, None]:
        """The runnable tasks in planning order, lazily: pending, gating dependencies met, no
        conflict with a running task; by (unmet soft dependencies, creation order).

        Consume it inside ``contextlib.closing``: closing it puts back what was not taken, so
        one planning step costs O(taken log n) plus the conflicting tasks it skipped.
        """
        self._refresh()
        running = list(self._running.values())
        seen: set[tuple[int, int, str]] = set()
        heap = self._heap
        try:
            while heap:
                entry = heapq.heappop(heap)
                self.heap_pops += 1
                task_id = entry[2]
                if task_id not in self._ready or self._rank.get(task_id) != entry[:2]:
                    continue  # stale: the task changed since this entry was pushed
                if entry in seen:
                    continue
                seen.add(entry)
                node = self.tasks[task_id]
                if any(self.conflicts_with(node, r) for r in running):
                    continue
                yield node
        finally:
            for entry in seen:
                heapq.heappush(heap, entry)

    def get_runnable_tasks(self) -> list[TaskNode]:
        """Every runnable task in planning order (see ``runnable``)."""
        with closing(self.runnable()) as it:
            return list(it)

    def _soft_rank(self, node: TaskNode) -> int:
        unmet = 0
        for edge in self.edges_of(node.task_id):
            if edge.dependency_type != DependencyType.SOFT:
                continue
            dep = self.tasks.get(edge.depends_on_task_id)
            if dep is not None and dep.status not in _ENDED:
                unmet += 1
        return unmet

    def doomed_tasks(self) -> list[TaskNode]:
        """Pending tasks that can never run because a hard dependency ended without success."""
        self._refresh()
        return sorted((self.tasks[t] for t in self._doomed), key=lambda n: n.order)

    def open_failures(self) -> list[TaskNode]:
        """Failed tasks the RetryPlanner has not decided on yet (not final)."""
        return sorted((self.tasks[t] for t in self._failed_open), key=lambda n: n.order)

    def mark_terminal(self, task_id: str, status: TaskStatus) -> None:
        node = self.tasks[task_id]
        node.status = status

    def validate_refs(self) -> OrphanReport:
        """Dependencies on unknown tasks, and one gating cycle if any (hard/serialization)."""
        missing = [e for e in self.dependencies if e.depends_on_task_id not in self.tasks]
        gating = [
            (e.task_id, e.depends_on_task_id)
            for e in self.dependencies
            if e.dependency_type in (DependencyType.HARD, DependencyType.SERIALIZATION)
            and e.depends_on_task_id in self.tasks
        ]
        return OrphanReport(missing=missing, cycle=find_cycle(gating))

    def all_ended(self) -> bool:
        return all(n.status in _ENDED and n.final for n in self.tasks.values())
