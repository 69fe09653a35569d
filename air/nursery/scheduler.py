"""The Scheduler: runs a session's task graph until nothing more can run (SDD §7.1, §20.2,
ARCHITECTURE §2).

Owns: ``Scheduler`` (``create_tasks``, ``add_dependency``, ``load_graph``, ``run_until_idle``,
``cancel_task``, ``cancel``), ``SchedulerOptions`` and ``AGENT_TYPE_FOR_TASK``; one attempt
runs in ``air.nursery.attempt``, its outcome and merge in ``outcomes``, retries in ``repair``,
reviews and debug knowledge in ``reviews``.

Shape: ``run_until_idle`` drives IDLE → LOADING_GRAPH → (REPAIRING_OR_CONTINUING →
PLANNING_WAVE → DISPATCHING)* → COMPLETED | BLOCKED | CANCELLED, with MONITORING,
COLLECTING_RESULTS, MERGING and REVIEWING_WAVE inside each wave. Each wave is exactly one Trio
nursery, and waves overlap (IMPL-CORE-3): whenever a slot frees (a task of any wave ends) the
Scheduler repairs, plans again from the TaskGraph it keeps up to date and opens the next
wave's nursery for the runnable, non-conflicting tasks that fit the free slots, so a free slot
never waits for the slowest task of an earlier wave. Each task runs ``TaskRunner.supervise``
inside its own ``CancelScope`` registered for ``cancel_task``. A task's failure is an outcome
value recorded as ``task.failed`` — never an exception that cancels its siblings. Every fact is
a durable event recorded before the next step depends on it (``task.started`` before
supervise; ``task.completed/failed/blocked/cancelled/interrupted`` right after, under a bounded
shield); decisions read the ledger's fold (``air.events.fold``), kept incrementally, and the
graph is rebuilt from it on every start. Cancelling the run ends every running task
``interrupted`` (resumable) and leaves pending tasks pending; ``cancel_task`` ends one task
``cancelled``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import trio

from air.contracts.ids import IdGenerator, UlidGenerator
from air.contracts.task import (
    AGENT_TYPE_FOR_TASK,
    DependencySource,
    SchedulerState,
    TaskDependencySpec,
    TaskSpec,
    TaskStatus,
    WorkspaceRef,
)
from air.nursery.dispatch import plan_next, run_wave
from air.nursery.graph import DependencyEdge, TaskGraph, TaskNode
from air.nursery.ledger import Ledger
from air.nursery.loading import graph_from_state, invalid_refs, run_result
from air.nursery.monitor import AgentMonitor, WatchedAgent
from air.nursery.planner import WavePlanner, default_max_workers
from air.nursery.recovery import Reaper, recover_session
from air.nursery.repair import repair
from air.nursery.retry import RetryPlanner
from air.nursery.seams import TaskRunner
from air.workspace.manager import WorkspaceManager

if TYPE_CHECKING:
    from air.contracts.task_results import SchedulerRunResult
    from air.nursery.architecture_gate import ArchitectureGate

__all__ = ["AGENT_TYPE_FOR_TASK", "Scheduler", "SchedulerOptions"]

log = logging.getLogger(__name__)


@dataclass(eq=False)
class SchedulerOptions:
    """How the Scheduler runs a session: parallelism, reviews, headless, recovery."""

    max_workers: int = field(default_factory=default_max_workers)
    review: Literal["none", "wave"] = "none"
    """``wave``: every completed code change gets a review task (REVIEWING_WAVE)."""
    headless: bool = True
    monitor_period: float = 1.0
    recover: bool = True  # False: the caller (open_runtime) already ran recovery, once


class Scheduler:
    """Runs the task graph of one session.

    Args:
        ledger: the session's event log (record + history).
        runner: supervises one attempt of a task (the WorkerManager, or a fake).
        project_root: the project directory (workspaces of strategy ``main`` point here).
        workspaces: materialises and merges workspaces; ``None`` runs everything in ``main``.
        planner: wave planning policy (default: ``WavePlanner()``).
        retry: retry policy (default: ``RetryPlanner()``).
        monitor: the AgentMonitor to watch running agents with (optional).
        options: worker cap, review policy.
        ids: id generator for agents.
        on_state: called with every state transition (progress display, tests).
        reap: kills a live orphan worker found while loading the graph (WorkerManager's reaper).
    """

    def __init__(
        self,
        ledger: Ledger,
        runner: TaskRunner,
        *,
        project_root: str,
        workspaces: WorkspaceManager | None = None,
        planner: WavePlanner | None = None,
        retry: RetryPlanner | None = None,
        monitor: AgentMonitor | None = None,
        options: SchedulerOptions | None = None,
        ids: IdGenerator | None = None,
        on_state: Callable[[SchedulerState], None] | None = None,
        reap: Reaper | None = None,
    ) -> None:
        self.ledger = ledger
        self.runner = runner
        self.project_root = project_root
        self.workspaces = workspaces
        self.planner = planner or WavePlanner()
        self.retry = retry or RetryPlanner()
        self.monitor = monitor
        self.options = options or SchedulerOptions()
        self.ids: IdGenerator = ids or UlidGenerator()
        self.on_state = on_state
        self.reap = reap
        self.state = SchedulerState.IDLE
        self.graph = TaskGraph(ledger.session_id)
        self.scopes: dict[str, trio.CancelScope] = {}
        """The cancel scope of every running task (``cancel_task``)."""
        self.cancel_reasons: dict[str, str] = {}
        self.main_workspace: WorkspaceRef | None = None
        self.solo: set[str] = set()
        """Tasks that must run alone (a serial retry, a retry after a merge conflict)."""
        self.merge_lock = trio.Lock()
        self.architecture_gate: ArchitectureGate | None = None
        """Holds a completed result before merge/dependents (SDD §19.4); set by the root."""
        """One merge into the project at a time."""
        self.waves = 0
        self._run_scope: trio.CancelScope | None = None
        self._cancel_reason: str | None = None
        self.solo_running: str | None = None
        """The solo task running now (nothing else is dispatched meanwhile)."""
        self.open_waves = 0
        self._wake = trio.Event()

    # -- state ------------------------------------------------------------------------------
    def enter(self, state: SchedulerState) -> None:
        self.state = state
        if self.on_state is not None:
            self.on_state(state)

    @property
    def cancel_reason(self) -> str | None:
        """Why the run was cancelled (None: it was not)."""
        return self._cancel_reason

    def slot_freed(self, task_id: str) -> None:
        """A task's attempt ended (its slot is free): wake the dispatch loop."""
        if self.solo_running == task_id:
            self.solo_running = None
        self.wake()

    def wake(self) -> None:
        """Something a plan depends on changed: the dispatch loop plans again."""
        self._wake.set()

    # -- commands ---------------------------------------------------------------------------
    async def create_tasks(
        self, specs: Sequence[TaskSpec], *, parent_task_id: str | None = None
    ) -> list[str]:
        """Record ``task.created`` for every spec not already in the session (idempotent).

        Returns:
            The ids created now (already-known ids are skipped, so re-submitting the same
            batch on resume runs nothing twice).
        """
        known = set(self.ledger.state().tasks)
        created: list[str] = []
        for spec in specs:
            if spec.id in known:
                continue
            await self.ledger.record(
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

    async def add_dependency(self, task_id: str, dependency: TaskDependencySpec) -> None:
        """Persist one dependency edge (``task.dependency.added``) and add it to the graph.

        Raises:
            AirException: ``system_error`` when the event registry has no such event.
        """
        await self.ledger.record(
            "task.dependency.added",
            {
                "task_id": task_id,
                "depends_on_task_id": dependency.depends_on_task_id,
                "dependency_type": dependency.dependency_type.value,
                "reason": dependency.reason,
                "source": (dependency.source or DependencySource.SCHEDULER).value,
            },
        )
        self.graph.add_edge(
            DependencyEdge(
                task_id=task_id,
                depends_on_task_id=dependency.depends_on_task_id,
                dependency_type=dependency.dependency_type,
                reason=dependency.reason,
                source=dependency.source,
            )
        )

    def load_graph(self) -> TaskGraph:
        """Rebuild the TaskGraph from the ledger's fold (interrupted tasks become pending)."""
        self.graph = graph_from_state(self.ledger.state(), self.ledger.session_id)
        return self.graph

    async def cancel_task(self, task_id: str, reason: str = "cancelled by request") -> None:
        """Cancel one task: a running one through its own scope, a pending one at once."""
        scope = self.scopes.get(task_id)
        if scope is not None:
            self.cancel_reasons[task_id] = reason
            scope.cancel(reason=reason)
            return
        node = self.graph.tasks.get(task_id)
        if node is None or node.status != TaskStatus.PENDING:
            return
        stored = self.ledger.state().tasks.get(task_id)
        if stored is not None and stored.status == TaskStatus.FAILED:
            # waiting for a retry: the task stays failed and is not retried (the log has no
            # failed → cancelled transition)
            node.status = TaskStatus.FAILED
            node.final = True
            return
        # the node is cancelled before the record is awaited: a wave that planned it and starts
        # it meanwhile must see that it is no longer pending (see ``_run_task``)
        node.status = TaskStatus.CANCELLED
        node.final = True
        await self.record_end(node, "task.cancelled", {"reason": reason})
        self._wake.set()

    def cancel(self, reason: str = "run cancelled") -> None:
        """Cancel the whole run cooperatively (running tasks end ``interrupted``)."""
        self._cancel_reason = reason
        if self._run_scope is not None:
            self._run_scope.cancel(reason=reason)

    # -- the run ----------------------------------------------------------------------------
    async def run_until_idle(self) -> SchedulerRunResult:
        """Run waves until every task is terminal, the graph is blocked, or the run is cancelled.

        Returns:
            The SchedulerRunResult; ``status="cancelled"`` after ``cancel()``.
        """
        self.enter(SchedulerState.LOADING_GRAPH)
        # detect orphaned agents → agent.lost, running tasks → interrupted (SDD §16.3 2-3)
        if self.options.recover and (await recover_session(self.ledger, reap=self.reap)).changed:
            log.info("recovered an interrupted run of session %s", self.ledger.session_id)
        self.load_graph()
        await self._block_invalid()
        self._run_scope = trio.CancelScope()
        if self._cancel_reason is not None:
            self._run_scope.cancel(reason=self._cancel_reason)
        with self._run_scope:
            async with trio.open_nursery() as services:
                if self.monitor is not None:
                    await services.start(
                        partial(
                            self.monitor.run,
                            self._on_lost,
                            on_overdue=self.on_overdue,
                            period=self.options.monitor_period,
                        )
                    )
                await self._loop()
                services.cancel_scope.cancel(reason="scheduler idle")
        return self._result()

    async def _loop(self) -> None:
        """Plan and dispatch whenever a slot may be free, until nothing runs or can run."""
        async with trio.open_nursery() as waves:
            while True:
                self._wake = trio.Event()  # before deciding: a later change wakes us again
                self.enter(SchedulerState.REPAIRING_OR_CONTINUING)
                await repair(self)
                self.enter(SchedulerState.PLANNING_WAVE)
                entries = await plan_next(self)
                if entries:
                    self.enter(SchedulerState.DISPATCHING)
                    await waves.start(run_wave, self, entries)
                    continue
                if self.open_waves == 0:
                    self.enter(
                        SchedulerState.COMPLETED if self._all_done() else SchedulerState.BLOCKED
                    )
                    return
                await self._wake.wait()

    def slots(self) -> int:
        return max(1, self.options.max_workers)

    def _all_done(self) -> bool:
        return all(
            n.status == TaskStatus.COMPLETED or (n.status == TaskStatus.FAILED and n.skipped)
            for n in self.graph.tasks.values()
        )

    # -- loading ----------------------------------------------------------------------------
    async def _block_invalid(self) -> None:
        for task_id, reason in invalid_refs(self.graph).items():
            node = self.graph.tasks[task_id]
            if node.status == TaskStatus.PENDING:
                await self.block(node, reason)

    async def block(self, node: TaskNode, reason: str) -> None:
        """Record ``task.blocked`` for a task that cannot run."""
        await self.record_end(
            node,
            "task.blocked",
            {"reason": reason},
        )
        node.status = TaskStatus.BLOCKED
        node.final = True

    async def record_end(
        self,
        node: TaskNode,
        event_type: str,
        payload: dict[str, Any],
        *,
        attempt_index: int | None = None,
    ) -> None:
        body = {"task_id": node.task_id, **payload}
        if attempt_index is not None and attempt_index >= 1:
            body["attempt_index"] = attempt_index
        await self.ledger.record(event_type, body)

    # -- monitor callbacks ------------------------------------------------------------------
    async def _on_lost(self, lost: Any) -> None:
        await self.cancel_task(lost.task_id, f"agent lost: {lost.reason}")

    async def on_overdue(self, agent: WatchedAgent) -> None:
        if agent.task_id is not None:
            await self.cancel_task(agent.task_id, "hard timeout passed without an outcome")

    # -- result -----------------------------------------------------------------------------
    def _result(self) -> SchedulerRunResult:
        status: Literal["completed", "blocked", "cancelled"]
        if self._cancel_reason is not None:
            self.enter(SchedulerState.CANCELLED)
            status = "cancelled"
        elif self.state == SchedulerState.COMPLETED:
            status = "completed"
        else:
            status = "blocked"
        return run_result(self.graph, self.ledger.session_id, status, self.waves)


def _dependency_row(dep: TaskDependencySpec) -> dict[str, Any]:
    return {
        "depends_on_task_id": dep.depends_on_task_id,
        "dependency_type": dep.dependency_type.value,
        "reason": dep.reason,
        "source": (dep.source or DependencySource.SCHEDULER).value,
    }
