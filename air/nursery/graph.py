"""The in-memory TaskGraph the Scheduler plans from (SDD §7.2).

Owns: ``TaskNode``, ``DependencyEdge``, ``TaskGraph`` (runnable tasks, terminal marking,
dependents, reference and cycle validation) and ``write_areas_overlap``, the conservative
overlap test of ``TaskScope.write_area`` globs. Pure code: the graph is rebuilt from SQLite by
the Scheduler and never persisted from here.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from air.contracts import (
    DependencySource,
    DependencyType,
    TaskSpec,
    TaskStatus,
    TaskType,
)

__all__ = [
    "DependencyEdge",
    "OrphanReport",
    "TaskGraph",
    "TaskNode",
    "find_cycle",
    "write_areas_overlap",
]

_GLOB_CHARS = "*?["

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


@dataclass(frozen=True)
class DependencyEdge:
    """One row of ``task_dependencies``: ``task_id`` depends on ``depends_on_task_id``."""

    task_id: str
    depends_on_task_id: str
    dependency_type: DependencyType
    reason: str | None = None
    source: DependencySource | None = None


@dataclass
class TaskNode:
    """A task as the Scheduler sees it: its spec, status and attempt history summary."""

    spec: TaskSpec
    status: TaskStatus = TaskStatus.PENDING
    attempts: int = 0
    order: int = 0
    """Creation order; ties in planning are broken by it."""
    skipped: bool = False
    """A failed task whose failure the RetryPlanner allowed to skip (dependents may run)."""
    final: bool = False
    """Ended for good: no retry will be made (set by the Scheduler)."""
    parent_task_id: str | None = None
    """The task this one was created for (a debug task's failed task)."""

    @property
    def task_id(self) -> str:
        return self.spec.id

    @property
    def write_area(self) -> list[str] | None:
        """The globs the task may write; ``[]`` for read-only roles (reviewers)."""
        if self.spec.type in (TaskType.REVIEW, TaskType.MINE_EXPERIENCE, TaskType.COMPACT):
            return []
        return self.spec.scope.write_area


@dataclass(frozen=True)
class OrphanReport:
    """References that point nowhere, and dependency cycles (SDD §18.3 for the graph)."""

    missing: list[DependencyEdge] = field(default_factory=list)
    cycle: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.missing and not self.cycle


def _literal_prefix(pattern: str) -> str:
    cut = len(pattern)
    for ch in _GLOB_CHARS:
        pos = pattern.find(ch)
        if pos != -1:
            cut = min(cut, pos)
    return pattern[:cut]


def _dir_prefix(pattern: str) -> str:
    literal = _literal_prefix(pattern)
    return literal.rsplit("/", 1)[0] if "/" in literal else ""


def _norm(pattern: str) -> str:
    text = pattern.strip().replace("\\", "/")
    while text.startswith("./"):
        text = text[2:]
    return text.strip("/") if text not in ("", "/") else ""


def _segment_prefix(a: str, b: str) -> bool:
    """True when path ``a`` is ``b`` or a directory above it (segment-wise)."""
    if a == "" or a == b:
        return True
    return b.startswith(a.rstrip("/") + "/")


def _glob_match(path: str, pattern: str) -> bool:
    if fnmatch.fnmatchcase(path, pattern):
        return True
    # ``dir/**`` also matches ``dir`` itself and everything below it.
    if pattern.endswith("/**") and _segment_prefix(pattern[:-3], path):
        return True
    return False


def _pair_overlaps(a: str, b: str) -> bool:
    a, b = _norm(a), _norm(b)
    a_glob = any(ch in a for ch in _GLOB_CHARS)
    b_glob = any(ch in b for ch in _GLOB_CHARS)
    if not a_glob and not b_glob:
        return _segment_prefix(a, b) or _segment_prefix(b, a)
    if not a_glob:
        if _glob_match(a, b):
            return True
        if "." in a.rsplit("/", 1)[-1]:
            return False  # a single file that the glob does not match
        # ``a`` may be a directory: uncertain unless the glob lives elsewhere.
        return _segment_prefix(a, _dir_prefix(b)) or _segment_prefix(_dir_prefix(b), a)
    if not b_glob:
        return _pair_overlaps(b, a)
    # Both globs: overlap is uncertain unless their literal directory prefixes diverge.
    pa, pb = _dir_prefix(a), _dir_prefix(b)
    return _segment_prefix(pa, pb) or _segment_prefix(pb, pa)


def write_areas_overlap(a: Sequence[str] | None, b: Sequence[str] | None) -> bool:
    """Whether two write areas may touch the same file.

    ``None`` is the whole project and overlaps every area except the empty (read-only) one.
    Globs whose literal directory prefixes diverge (``src/a/**`` vs ``src/b/**``) do not
    overlap; any uncertain pair does (an uncertain overlap is serialized, SDD §7.3).

    Args:
        a: the first task's ``TaskScope.write_area`` (or ``[]`` for read-only tasks).
        b: the second task's.

    Returns:
        True when the two tasks must not run concurrently.
    """
    if a is not None and len(a) == 0:
        return False
    if b is not None and len(b) == 0:
        return False
    if a is None or b is None:
        return True
    return any(_pair_overlaps(x, y) for x in a for y in b)


def find_cycle(edges: Iterable[tuple[str, str]]) -> list[str]:
    """Return one cycle (as a list of task ids, first repeated at the end) or ``[]``."""
    adjacency: dict[str, list[str]] = {}
    for task_id, dep in edges:
        adjacency.setdefault(task_id, []).append(dep)
        adjacency.setdefault(dep, [])
    white, grey, black = 0, 1, 2
    color = dict.fromkeys(adjacency, white)
    for root in sorted(adjacency):
        if color[root] != white:
            continue
        stack: list[tuple[str, int]] = [(root, 0)]
        path: list[str] = [root]
        color[root] = grey
        while stack:
            node, idx = stack[-1]
            nexts = adjacency[node]
            if idx < len(nexts):
                stack[-1] = (node, idx + 1)
                nxt = nexts[idx]
                if color[nxt] == grey:
                    return [*path[path.index(nxt) :], nxt]
                if color[nxt] == white:
                    color[nxt] = grey
                    stack.append((nxt, 0))
                    path.append(nxt)
            else:
                color[node] = black
                stack.pop()
                path.pop()
    return []


class TaskGraph:
    """Tasks and their dependency edges for one session (SDD §7.2)."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.tasks: dict[str, TaskNode] = {}
        self.dependencies: list[DependencyEdge] = []

    # -- building -------------------------------------------------------------------------
    def add_task(
        self,
        spec: TaskSpec,
        status: TaskStatus = TaskStatus.PENDING,
        attempts: int = 0,
        parent_task_id: str | None = None,
    ) -> TaskNode:
        node = TaskNode(
            spec=spec,
            status=status,
            attempts=attempts,
            order=len(self.tasks),
            parent_task_id=parent_task_id,
        )
        self.tasks[spec.id] = node
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
        for existing in self.dependencies:
            if (
                existing.task_id == edge.task_id
                and existing.depends_on_task_id == edge.depends_on_task_id
                and existing.dependency_type == edge.dependency_type
            ):
                return False
        self.dependencies.append(edge)
        return True

    # -- queries --------------------------------------------------------------------------
    def edges_of(self, task_id: str) -> list[DependencyEdge]:
        return [e for e in self.dependencies if e.task_id == task_id]

    def dependents_of(self, task_id: str) -> list[TaskNode]:
        ids = {e.task_id for e in self.dependencies if e.depends_on_task_id == task_id}
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
        for child in self.tasks.values():
            if (
                child.parent_task_id == node.task_id
                and child.spec.type == TaskType.DEBUG
                and not (child.status in _ENDED and child.final)
            ):
                waiting.append(child.task_id)
        return waiting

    def conflicts_with(self, a: TaskNode, b: TaskNode) -> bool:
        """Whether two tasks must not run at the same time (conflict edge or write overlap)."""
        for edge in self.dependencies:
            if edge.dependency_type not in (DependencyType.CONFLICT, DependencyType.SERIALIZATION):
                continue
            if {edge.task_id, edge.depends_on_task_id} == {a.task_id, b.task_id}:
                return True
        return write_areas_overlap(a.write_area, b.write_area)

    def running(self) -> list[TaskNode]:
        return [n for n in self.tasks.values() if n.status == TaskStatus.RUNNING]

    def get_runnable_tasks(self) -> list[TaskNode]:
        """Pending tasks whose gating dependencies are met and that conflict with no running task.

        Ordered by soft-dependency priority (a task whose soft dependencies have not ended
        comes after those that have), then creation order.
        """
        running = self.running()
        out: list[TaskNode] = []
        for node in self.tasks.values():
            if node.status != TaskStatus.PENDING:
                continue
            if self.waiting_on(node):
                continue
            if any(self.conflicts_with(node, r) for r in running):
                continue
            out.append(node)
        return sorted(out, key=lambda n: (self._soft_rank(n), n.order))

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
        return [
            n
            for n in self.tasks.values()
            if n.status == TaskStatus.PENDING
            and any(
                e.dependency_type == DependencyType.HARD
                and self.hard_dep_dead(e.depends_on_task_id)
                for e in self.edges_of(n.task_id)
            )
        ]

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
