"""The Scheduler: runs a session's task graph until nothing more can run (SDD §7.1, §20.2,
ARCHITECTURE §2).

Owns: ``Scheduler`` (``create_tasks``, ``add_dependency``, ``load_graph``, ``run_until_idle``,
``cancel_task``, ``cancel``); ``SchedulerOptions`` and ``AGENT_TYPE_FOR_TASK`` are public from
here too. The Scheduler builds the run's state record and ports (``air.nursery.state``) and
hands them to its helpers, which never see the Scheduler: the next wave in ``dispatch``, one
attempt in ``attempt``, its outcome pipeline in ``outcomes``, retries in ``repair``, reviews
in ``reviews``, the durable facts in ``facts``.

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
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import trio

from air.contracts.ids import IdGenerator, UlidGenerator
from air.contracts.task import (
    AGENT_TYPE_FOR_TASK,
    SchedulerState,
    TaskDependencySpec,
    TaskSpec,
    TaskStatus,
)
from air.nursery import deadlines, facts
from air.nursery.dispatch import plan_next, run_wave
from air.nursery.graph import TaskGraph
from air.nursery.ledger import Ledger
from air.nursery.loading import graph_from_state, invalid_refs, run_result
from air.nursery.planner import WavePlanner
from air.nursery.recovery import Reaper, recover_session
from air.nursery.repair import repair
from air.nursery.retry import RetryPlanner
from air.nursery.state import Ports, RunState, SchedulerOptions
from air.supervision.monitor import AgentMonitor, WatchedAgent
from air.supervision.seams import TaskRunner
from air.workspace.manager import WorkspaceManager

if TYPE_CHECKING:
    from air.contracts.task_results import SchedulerRunResult
    from air.nursery.architecture_gate import ArchitectureGate

__all__ = ["AGENT_TYPE_FOR_TASK", "Scheduler", "SchedulerOptions"]

log = logging.getLogger(__name__)


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
        architecture_gate: holds a completed result before it is merged (SDD §19.4).
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
        architecture_gate: ArchitectureGate | None = None,
    ) -> None:
        self.io = Ports(
            ledger=ledger,
            runner=runner,
            project_root=project_root,
            workspaces=workspaces,
            planner=planner or WavePlanner(),
            retry=retry or RetryPlanner(),
            monitor=monitor,
            ids=ids or UlidGenerator(),
            options=options or SchedulerOptions(),
            architecture_gate=architecture_gate,
            on_state=on_state,
        )
        """The ports every helper calls out to."""
        self.st = RunState(graph=TaskGraph(ledger.session_id, project_root=project_root))
        """The run's state record every helper reads and changes."""
        self.reap = reap
        self._run_scope: trio.CancelScope | None = None

    # -- the state and ports, by name -------------------------------------------------------
    @property
    def ledger(self) -> Ledger:
        return self.io.ledger

    @property
    def runner(self) -> TaskRunner:
        return self.io.runner

    @property
    def workspaces(self) -> WorkspaceManager | None:
        return self.io.workspaces

    @property
    def monitor(self) -> AgentMonitor | None:
        return self.io.monitor

    @property
    def retry(self) -> RetryPlanner:
        return self.io.retry

    @property
    def options(self) -> SchedulerOptions:
        return self.io.options

    @property
    def architecture_gate(self) -> ArchitectureGate | None:
        return self.io.architecture_gate

    @architecture_gate.setter
    def architecture_gate(self, gate: ArchitectureGate | None) -> None:
        self.io.architecture_gate = gate

    @property
    def graph(self) -> TaskGraph:
        return self.st.graph

    @property
    def state(self) -> SchedulerState:
        return self.st.phase

    @property
    def waves(self) -> int:
        return self.st.waves

    @property
    def cancel_reason(self) -> str | None:
        """Why the run was cancelled (None: it was not)."""
        return self.st.cancel_reason

    # -- commands ---------------------------------------------------------------------------
    async def create_tasks(
        self, specs: Sequence[TaskSpec], *, parent_task_id: str | None = None
    ) -> list[str]:
        """Record ``task.created`` for every spec not already in the session (idempotent).

        Returns:
            The ids created now (already-known ids are skipped, so re-submitting the same
            batch on resume runs nothing twice).
        """
        return await facts.create_tasks(self.ledger, specs, parent_task_id=parent_task_id)

    async def add_dependency(self, task_id: str, dependency: TaskDependencySpec) -> None:
        """Persist one dependency edge (``task.dependency.added``) and add it to the graph.

        Raises:
            AirException: ``system_error`` when the event registry has no such event.
        """
        await facts.add_dependency(self.ledger, self.st.graph, task_id, dependency)

    def load_graph(self) -> TaskGraph:
        """Rebuild the TaskGraph from the ledger's fold (interrupted tasks become pending)."""
        self.st.graph = graph_from_state(
            self.ledger.state(), self.ledger.session_id, project_root=self.io.project_root
        )
        return self.st.graph

    async def cancel_task(self, task_id: str, reason: str = "cancelled by request") -> None:
        """Cancel one task: a running one through its own scope, a pending one at once."""
        st = self.st
        scope = st.scopes.get(task_id)
        if scope is not None:
            st.cancel_reasons[task_id] = reason
            scope.cancel(reason=reason)
            return
        node = st.graph.tasks.get(task_id)
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
        # it meanwhile must see that it is no longer pending (see ``attempt.run_task``)
        node.status = TaskStatus.CANCELLED
        node.final = True
        await facts.record_end(self.ledger, node, "task.cancelled", {"reason": reason})
        st.wake()

    def cancel(self, reason: str = "run cancelled") -> None:
        """Cancel the whole run cooperatively (running tasks end ``interrupted``)."""
        self.st.cancel_reason = reason
        if self._run_scope is not None:
            self._run_scope.cancel(reason=reason)

    # -- the run ----------------------------------------------------------------------------
    async def run_until_idle(self) -> SchedulerRunResult:
        """Run waves until every task is terminal, the graph is blocked, or the run is cancelled.

        Returns:
            The SchedulerRunResult; ``status="cancelled"`` after ``cancel()``.
        """
        self.io.enter(self.st, SchedulerState.LOADING_GRAPH)
        # detect orphaned agents → agent.lost, running tasks → interrupted (SDD §16.3 2-3)
        if self.options.recover and (await recover_session(self.ledger, reap=self.reap)).changed:
            log.info("recovered an interrupted run of session %s", self.ledger.session_id)
        self.load_graph()
        resumed = [
            t
            for t, task in self.ledger.state().tasks.items()
            if task.status == TaskStatus.INTERRUPTED
        ]
        # before any planning: queueing counts (IMPL-DEADLINE-1)
        deadlines.arm_all(self.st, resumed)
        await self._block_invalid()
        self._run_scope = trio.CancelScope()
        if self.st.cancel_reason is not None:
            self._run_scope.cancel(reason=self.st.cancel_reason)
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
                await self._collect_returned()
                await self._loop()
                services.cancel_scope.cancel(reason="scheduler idle")
        return self._result()

    async def _loop(self) -> None:
        """Plan and dispatch whenever a slot may be free, until nothing runs or can run."""
        st, io = self.st, self.io
        async with trio.open_nursery() as waves:
            while True:
                st.wake_event = trio.Event()  # before deciding: a later change wakes us again
                await deadlines.expire_queued(st, io)
                io.enter(st, SchedulerState.REPAIRING_OR_CONTINUING)
                await repair(st, io)
                io.enter(st, SchedulerState.PLANNING_WAVE)
                entries = await plan_next(st, io)
                if entries:
                    io.enter(st, SchedulerState.DISPATCHING)
                    await waves.start(run_wave, st, io, entries)
                    continue
                if st.open_waves == 0:
                    done = self._all_done()
                    io.enter(st, SchedulerState.COMPLETED if done else SchedulerState.BLOCKED)
                    return
                with trio.move_on_at(deadlines.next_at(st)):  # a queued task's deadline
                    await st.wake_event.wait()

    async def _collect_returned(self) -> None:
        """A task still running when the run starts had its worker's result when the last
        runtime stopped (recovery left it so): its outcome is collected before any planning,
        so its dependents see it end first (``outcomes.collect_returned``)."""
        running = [n for n in self.st.graph.tasks.values() if n.status == TaskStatus.RUNNING]
        if running:
            from air.nursery.outcomes import collect_returned  # after a crash only

            for node in running:
                await collect_returned(self.st, self.io, node)
                if node.final:
                    deadlines.disarm(self.st, node.task_id)

    def _all_done(self) -> bool:
        return all(
            n.status == TaskStatus.COMPLETED or (n.status == TaskStatus.FAILED and n.skipped)
            for n in self.st.graph.tasks.values()
        )

    async def _block_invalid(self) -> None:
        for task_id, reason in invalid_refs(self.st.graph).items():
            node = self.st.graph.tasks[task_id]
            if node.status == TaskStatus.PENDING:
                await facts.block(self.ledger, node, reason)

    # -- monitor callbacks ------------------------------------------------------------------
    async def _on_lost(self, lost: Any) -> None:
        await self.cancel_task(lost.task_id, f"agent lost: {lost.reason}")

    async def on_overdue(self, agent: WatchedAgent) -> None:
        if agent.task_id is not None:
            await self.cancel_task(agent.task_id, "hard timeout passed without an outcome")

    # -- result -----------------------------------------------------------------------------
    def _result(self) -> SchedulerRunResult:
        status: Literal["completed", "blocked", "cancelled"]
        if self.st.cancel_reason is not None:
            self.io.enter(self.st, SchedulerState.CANCELLED)
            status = "cancelled"
        elif self.st.phase == SchedulerState.COMPLETED:
            status = "completed"
        else:
            status = "blocked"
        return run_result(self.st.graph, self.ledger.session_id, status, self.st.waves)
