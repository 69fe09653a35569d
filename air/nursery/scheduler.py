"""The Scheduler: runs a session's task graph as waves until nothing more can run (SDD §7.1,
§20.2, ARCHITECTURE §2).

Owns: ``Scheduler`` (``create_tasks``, ``add_dependency``, ``load_graph``, ``run_until_idle``,
``cancel_task``, ``cancel``), ``SchedulerOptions`` and ``AGENT_TYPE_FOR_TASK``.

Shape: ``run_until_idle`` drives IDLE → LOADING_GRAPH → PLANNING_WAVE → DISPATCHING →
MONITORING → COLLECTING_RESULTS → MERGING → REVIEWING_WAVE → REPAIRING_OR_CONTINUING → … →
COMPLETED | BLOCKED | CANCELLED. Each wave is exactly one Trio nursery; each task of the wave
runs ``TaskRunner.supervise`` inside its own ``CancelScope`` registered for ``cancel_task``.
A task's failure is an outcome value recorded as ``task.failed`` — never an exception that
cancels its siblings. Every fact is a durable event recorded before the next step depends on
it (``task.started`` before supervise; ``task.completed/failed/blocked/cancelled/interrupted``
right after, under a bounded shield), and the graph is rebuilt from the log on every start.
Cancelling the run ends every running task ``interrupted`` (resumable) and leaves pending
tasks pending; ``cancel_task`` ends one task ``cancelled``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

import trio

from air.artifacts.knowledge import DebugKnowledgeStore
from air.contracts import (
    AGENT_TYPE_FOR_TASK,
    AirError,
    AirException,
    DebugRecord,
    DependencySource,
    DependencyType,
    ErrorKind,
    IdGenerator,
    Retryability,
    RetryAction,
    SchedulerRunResult,
    SchedulerState,
    TaskConstraints,
    TaskDependencySpec,
    TaskScope,
    TaskSpec,
    TaskStatus,
    TaskType,
    UlidGenerator,
    WavePlanEntry,
    WorkerStatus,
    WorkspaceRef,
    WorkspaceStrategy,
    make_air_error,
    new_id,
    utc_now_iso,
)
from air.nursery.evidence import collect_evidence, cpp_evidence_gate
from air.nursery.graph import DependencyEdge, TaskGraph, TaskNode
from air.nursery.ledger import Ledger, fold_history
from air.nursery.monitor import AgentMonitor, WatchedAgent
from air.nursery.planner import ResourceSnapshot, WavePlanner, default_max_workers
from air.nursery.recovery import Reaper, recover_session
from air.nursery.retry import RetryPlanner, debug_context
from air.nursery.seams import SuperviseRequest, TaskOutcome, TaskRunner
from air.workspace.manager import WorkspaceManager

__all__ = ["AGENT_TYPE_FOR_TASK", "Scheduler", "SchedulerOptions"]

log = logging.getLogger(__name__)

_RECORD_GRACE = 10.0  # seconds a shielded outcome write may take before we give up on it
_MERGE_GRACE = 120.0  # seconds a shielded merge may take


@dataclass
class SchedulerOptions:
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
        self._scopes: dict[str, trio.CancelScope] = {}
        self._run_scope: trio.CancelScope | None = None
        self._cancel_reason: str | None = None
        self._main_workspace: WorkspaceRef | None = None
        self._pending_merges: list[tuple[TaskNode, WorkspaceRef, TaskOutcome, int]] = []
        self._wave_completed: list[str] = []
        self._solo: set[str] = set()
        self._cancel_reasons: dict[str, str] = {}
        self.waves = 0

    # -- state ------------------------------------------------------------------------------
    def _enter(self, state: SchedulerState) -> None:
        self.state = state
        if self.on_state is not None:
            self.on_state(state)

    # -- commands ---------------------------------------------------------------------------
    async def create_tasks(
        self, specs: Sequence[TaskSpec], *, parent_task_id: str | None = None
    ) -> list[str]:
        """Record ``task.created`` for every spec not already in the session (idempotent).

        Returns:
            The ids created now (already-known ids are skipped, so re-submitting the same
            batch on resume runs nothing twice).
        """
        known = set(fold_history(self.ledger.history()).tasks)
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
        """Rebuild the TaskGraph from the event log (interrupted tasks become pending again)."""
        folded = fold_history(self.ledger.history())
        graph = TaskGraph(self.ledger.session_id)
        for stored in sorted(folded.tasks.values(), key=lambda t: t.order):
            status = stored.status
            if status == TaskStatus.INTERRUPTED:
                status = TaskStatus.PENDING  # interrupted ──resume──▶ pending
            node = graph.add_task(
                stored.spec,
                status=status,
                attempts=stored.started_attempts,
                parent_task_id=stored.parent_task_id,
            )
            node.final = status in (
                TaskStatus.COMPLETED,
                TaskStatus.BLOCKED,
                TaskStatus.CANCELLED,
            )
        for edge in folded.edges:
            graph.add_edge(edge)
        self.graph = graph
        self._folded = folded
        return graph

    async def cancel_task(self, task_id: str, reason: str = "cancelled by request") -> None:
        """Cancel one task: a running one through its own scope, a pending one at once."""
        scope = self._scopes.get(task_id)
        if scope is not None:
            self._cancel_reasons[task_id] = reason
            scope.cancel(reason=reason)
            return
        node = self.graph.tasks.get(task_id)
        if node is None or node.status != TaskStatus.PENDING:
            return
        stored = fold_history(self.ledger.history()).tasks.get(task_id)
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
        await self._record_end(node, "task.cancelled", {"reason": reason})

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
        self._enter(SchedulerState.LOADING_GRAPH)
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
        while True:
            self._enter(SchedulerState.REPAIRING_OR_CONTINUING)
            await self._repair()
            self._enter(SchedulerState.PLANNING_WAVE)
            decision = self.planner.plan(
                self.graph,
                ResourceSnapshot(max_workers=self._slots()),
                wave_index=self.waves,
                planned_at=utc_now_iso(),
            )
            for edge in decision.inferred_edges:
                if not self.ledger.knows("task.dependency.added"):
                    # the planner re-infers the same edge from the write areas on every start
                    self.graph.add_edge(edge)
                    continue
                await self.add_dependency(
                    edge.task_id,
                    TaskDependencySpec(
                        depends_on_task_id=edge.depends_on_task_id,
                        dependency_type=edge.dependency_type,
                        reason=edge.reason,
                        source=edge.source,
                    ),
                )
            if not decision.plan.entries:
                self._enter(
                    SchedulerState.COMPLETED if self._all_done() else SchedulerState.BLOCKED
                )
                return
            self._enter(SchedulerState.DISPATCHING)
            self._wave_completed = []
            self._pending_merges = []
            entries = decision.plan.entries
            if any(e.task_id in self._solo for e in entries):
                solo = next(e for e in entries if e.task_id in self._solo)
                entries = [solo]
                self._solo.discard(solo.task_id)
            async with trio.open_nursery() as wave:
                self._enter(SchedulerState.MONITORING)
                for entry in entries:
                    wave.start_soon(self._run_task, entry)
            self.waves += 1
            self._enter(SchedulerState.COLLECTING_RESULTS)
            if self._pending_merges:
                self._enter(SchedulerState.MERGING)
                await self._merge_all()
            if self.options.review == "wave" and self._wave_completed:
                self._enter(SchedulerState.REVIEWING_WAVE)
                await self._schedule_reviews()

    def _slots(self) -> int:
        return max(1, self.options.max_workers)

    def _all_done(self) -> bool:
        return all(
            n.status == TaskStatus.COMPLETED or (n.status == TaskStatus.FAILED and n.skipped)
            for n in self.graph.tasks.values()
        )

    # -- loading ----------------------------------------------------------------------------
    async def _block_invalid(self) -> None:
        report = self.graph.validate_refs()
        bad: dict[str, str] = {}
        for edge in report.missing:
            bad[edge.task_id] = f"depends on unknown task {edge.depends_on_task_id}"
        for task_id in report.cycle[:-1]:
            bad.setdefault(task_id, "dependency cycle: " + " -> ".join(report.cycle))
        for task_id, reason in bad.items():
            node = self.graph.tasks[task_id]
            if node.status == TaskStatus.PENDING:
                await self._block(node, reason)

    async def _block(self, node: TaskNode, reason: str) -> None:
        await self._record_end(
            node,
            "task.blocked",
            {"reason": reason},
        )
        node.status = TaskStatus.BLOCKED
        node.final = True

    # -- repairing --------------------------------------------------------------------------
    async def _repair(self) -> None:
        """Apply the RetryPlanner to failed tasks, then block tasks whose hard deps are dead."""
        changed = True
        while changed:
            changed = False
            for node in list(self.graph.tasks.values()):
                if node.status == TaskStatus.FAILED and not node.final:
                    await self._decide(node)
                    changed = True
            for node in self.graph.doomed_tasks():
                dead = [
                    e.depends_on_task_id
                    for e in self.graph.edges_of(node.task_id)
                    if e.dependency_type == DependencyType.HARD
                    and self.graph.hard_dep_dead(e.depends_on_task_id)
                ]
                await self._block(node, "hard dependency ended without success: " + ", ".join(dead))
                changed = True

    async def _decide(self, node: TaskNode) -> None:
        folded = fold_history(self.ledger.history())
        stored = folded.tasks[node.task_id]
        error = stored.last_error or _error(ErrorKind.TASK_FAILED, "the task failed")
        decision = self.retry.decide(node, stored.attempts, error)
        action = decision.action
        if action in (RetryAction.RETRY, RetryAction.RETRY_SERIAL):
            node.status = TaskStatus.PENDING
            if action == RetryAction.RETRY_SERIAL:
                self._solo.add(node.task_id)
        elif action == RetryAction.DEBUG:
            # The debug task is the failed task's child (task.created parent_task_id); the
            # graph re-runs a task only after its debug children have ended.
            debug_id = f"{node.task_id}.debug{len(stored.attempts)}"
            if debug_id not in self.graph.tasks:
                known = await self._known_fixes(error.semantic_signature)
                spec = _debug_spec(node.spec, debug_id, error, known)
                await self.create_tasks([spec], parent_task_id=node.task_id)
                self.graph.add_task(spec, parent_task_id=node.task_id)
            node.status = TaskStatus.PENDING
        elif action == RetryAction.SKIP:
            node.skipped = True
            node.final = True
        else:
            node.final = True

    # -- one task ---------------------------------------------------------------------------
    async def _workspace_for(self, entry: WavePlanEntry, agent_id: str) -> WorkspaceRef:
        strategy = WorkspaceStrategy(entry.workspace.strategy)
        if self.workspaces is not None and strategy != WorkspaceStrategy.MAIN:
            # no agent id yet: the agent row appears only when the runner records agent.started
            return await self.workspaces.create_workspace(entry.workspace)
        if self._main_workspace is None:
            main_id = f"ws_main_{self.ledger.session_id}"
            if self.workspaces is None:
                self._main_workspace = WorkspaceRef(
                    workspace_id=main_id, strategy=WorkspaceStrategy.MAIN, path=self.project_root
                )
            elif main_id in fold_history(self.ledger.history()).workspaces:
                self._main_workspace = self.workspaces.get(main_id).ref()
            else:
                self._main_workspace = await self.workspaces.create_workspace(
                    entry.workspace, workspace_id=main_id, shared=True
                )
        return self._main_workspace

    async def _run_task(self, entry: WavePlanEntry) -> None:
        node = self.graph.tasks[entry.task_id]
        if node.status != TaskStatus.PENDING:
            return  # cancelled between the wave's planning and this start: nothing to run
        spec = node.spec
        attempt_index = node.attempts + 1  # attempts are numbered from 1 (task_attempts)
        agent_id = self.ids.agent_id()
        scope = trio.CancelScope()
        self._scopes[spec.id] = scope
        node.status = TaskStatus.RUNNING
        node.attempts += 1
        try:
            with trio.move_on_after(_RECORD_GRACE, shield=True):
                # why shielded: a run cancel must not leave a workspace without its event
                try:
                    workspace = await self._workspace_for(entry, agent_id)
                except AirException as exc:
                    if exc.kind != ErrorKind.WORKSPACE_ERROR:
                        raise
                    # no workspace, no worker: the task fails, the run goes on (IMPL-GIT-2)
                    error = exc.error.model_copy(update={"retryability": Retryability.NEVER})
                    await self._record_end(
                        node, "task.failed", {"error": error.model_dump(mode="json")}
                    )
                    node.status = TaskStatus.FAILED
                    node.final = True
                    return
                await self.ledger.record(
                    "task.started",
                    {
                        "task_id": spec.id,
                        "agent_id": agent_id,
                        "agent_type": AGENT_TYPE_FOR_TASK[spec.type].value,
                        "attempt_index": attempt_index,
                        "workspace_id": workspace.workspace_id,
                    },
                )
            if self.monitor is not None:
                self.monitor.watch(
                    agent_id, spec.id, hard_timeout_s=spec.constraints.hard_timeout_ms / 1000
                )
            request = SuperviseRequest(
                session_id=self.ledger.session_id,
                project_id=self.ledger.project_id,
                project_root=self.project_root,
                task_spec=spec,
                agent_id=agent_id,
                attempt_index=attempt_index,
                workspace=workspace,
                headless=self.options.headless,
            )
            outcome: TaskOutcome | None = None
            try:
                with scope:
                    outcome = await self.runner.supervise(request)
            except* trio.Cancelled:
                # (a runner's own nursery may deliver the cancellation inside a group)
                with trio.move_on_after(_RECORD_GRACE, shield=True):
                    # why shielded: the interruption must be recorded even as the run unwinds
                    await self._record_end(
                        node,
                        "task.interrupted",
                        {"agent_id": agent_id, "reason": self._cancel_reason or "run cancelled"},
                        attempt_index=attempt_index,
                    )
                node.status = TaskStatus.INTERRUPTED
                raise
            with trio.move_on_after(_RECORD_GRACE, shield=True):
                # why shielded: a finished task's outcome is never lost to a late cancel
                if outcome is None:
                    reason = self._cancel_reasons.get(spec.id, "cancelled by request")
                    await self._record_end(
                        node,
                        "task.cancelled",
                        {"agent_id": agent_id, "reason": reason},
                        attempt_index=attempt_index,
                    )
                    node.status = TaskStatus.CANCELLED
                    node.final = True
                else:
                    await self._collect(node, workspace, outcome, attempt_index)
        finally:
            self._scopes.pop(spec.id, None)
            if self.monitor is not None:
                self.monitor.forget(agent_id)

    async def _collect(
        self, node: TaskNode, workspace: WorkspaceRef, outcome: TaskOutcome, attempt_index: int
    ) -> None:
        result = outcome.result
        base = {"agent_id": outcome.agent_id}
        if result is not None and result.status == WorkerStatus.COMPLETED:
            # a C++ change counts only with the parent's own passing build + ctest records
            gate = cpp_evidence_gate(
                node.spec, outcome.agent_id, self.ledger.history(), workspace.path
            )
            if gate is not None:
                outcome = outcome.model_copy(update={"error": gate})
                result = result.model_copy(update={"status": WorkerStatus.FAILED, "error": gate})
        if result is not None and result.status == WorkerStatus.COMPLETED:
            if workspace.strategy != WorkspaceStrategy.MAIN and self.workspaces is not None:
                self._pending_merges.append((node, workspace, outcome, attempt_index))
                return
            await self._record_end(
                node,
                "task.completed",
                {**base, "worker_result": await self._with_evidence(node, outcome)},
                attempt_index=attempt_index,
            )
            await self._learn(node, outcome)
            node.status = TaskStatus.COMPLETED
            node.final = True
            self._wave_completed.append(node.task_id)
            return
        if result is not None and result.status == WorkerStatus.BLOCKED:
            reason = result.summary or "the worker reported a blocker"
            await self._record_end(
                node,
                "task.blocked",
                {**base, "reason": reason, "worker_result": result.model_dump(mode="json")},
                attempt_index=attempt_index,
            )
            node.status = TaskStatus.BLOCKED
            node.final = True
            return
        if result is not None and result.status == WorkerStatus.CANCELLED:
            await self._record_end(
                node,
                "task.cancelled",
                {**base, "reason": result.summary or "the worker cancelled the task"},
                attempt_index=attempt_index,
            )
            node.status = TaskStatus.CANCELLED
            node.final = True
            return
        error = outcome.error or (result.error if result is not None else None)
        if error is None:
            error = _error(
                ErrorKind.TASK_FAILED,
                f"worker ended {result.status.value if result else outcome.kind}",
            )
        update: dict[str, Any] = {
            "metadata": {
                **(error.metadata or {}),
                "outcome": outcome.kind,
                "exit_code": outcome.exit_code,
                "worker_status": result.status.value if result is not None else None,
            }
        }
        if outcome.transient:
            update["retryability"] = Retryability.TRANSIENT
        error = error.model_copy(update=update)
        payload: dict[str, Any] = {**base, "error": error.model_dump(mode="json")}
        if result is not None:
            payload["worker_result"] = result.model_dump(mode="json")
        await self._record_end(node, "task.failed", payload, attempt_index=attempt_index)
        node.status = TaskStatus.FAILED
        node.final = False

    async def _with_evidence(self, node: TaskNode, outcome: TaskOutcome) -> dict[str, Any]:
        """Record the attempt's evidence (``evidence.created``) and return the worker result
        with those refs attached, ready for ``task.completed``."""
        assert outcome.result is not None
        found = collect_evidence(node.spec, outcome.agent_id, self.ledger.history())
        for _ref, payload in found:
            await self.ledger.record("evidence.created", payload)
        result = outcome.result
        if found:
            known = {e.evidence_ref_id for e in result.evidence_refs}
            extra = [ref for ref, _ in found if ref.evidence_ref_id not in known]
            result = result.model_copy(update={"evidence_refs": [*result.evidence_refs, *extra]})
        return result.model_dump(mode="json")

    # -- debug knowledge (SDD §19.5) -------------------------------------------------------
    def _knowledge_path(self) -> str | None:
        """``.air/local/debug-records.db`` of the project (None: the project has no .air/local)."""
        local = os.path.join(self.project_root, ".air", "local")
        return os.path.join(local, DebugKnowledgeStore.FILENAME) if os.path.isdir(local) else None

    async def _known_fixes(self, signature: str | None) -> list[DebugRecord]:
        """DebugKnowledgeStore records with ``signature`` (none when the project has no store)."""
        path = self._knowledge_path()
        if not signature or path is None:
            return []

        def lookup() -> list[DebugRecord]:
            store = DebugKnowledgeStore.open(path)
            try:
                return store.lookup_by_signature(signature)
            finally:
                store.close()

        return await trio.to_thread.run_sync(lookup)

    async def _learn(self, node: TaskNode, outcome: TaskOutcome) -> None:
        """A debug task's landed fix becomes a DebugKnowledgeStore record, then (outbox order:
        the store first) a ``debug.record.created`` event."""
        result = outcome.result
        if node.spec.type != TaskType.DEBUG or result is None or not node.parent_task_id:
            return
        body = result.result or {}
        parent = fold_history(self.ledger.history()).tasks.get(node.parent_task_id)
        error = parent.last_error if parent is not None else None
        signature = (error.semantic_signature if error else None) or body.get("failure_signature")
        if not body.get("fixed") or not signature:
            return
        path = self._knowledge_path()
        if path is None:
            return
        now = utc_now_iso()
        record = DebugRecord(
            debug_record_id=new_id("dbg"),
            failure_signature=str(signature),
            task_id=node.parent_task_id,
            session_id=self.ledger.session_id,
            diagnosis=str(body.get("diagnosis") or result.summary),
            root_cause=body.get("root_cause"),
            fix_summary=result.summary,
            fixed=True,
            created_at=now,
            updated_at=now,
            metadata={"debug_task_id": node.task_id, "changed_files": result.changed_files},
        )

        def insert() -> None:
            store = DebugKnowledgeStore.open(path)
            try:
                store.insert(record)
            finally:
                store.close()

        await trio.to_thread.run_sync(insert)
        await self.ledger.record(
            "debug.record.created",
            {
                "debug_record_id": record.debug_record_id,
                "failure_signature": record.failure_signature,
                "task_id": node.parent_task_id,
            },
        )

    async def _record_end(
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

    # -- merging ----------------------------------------------------------------------------
    async def _merge_all(self) -> None:
        assert self.workspaces is not None
        for node, workspace, outcome, attempt_index in self._pending_merges:
            with trio.move_on_after(_MERGE_GRACE, shield=True):
                # why shielded: a half-done git merge must not be left behind by a cancel
                try:
                    merged = await self.workspaces.merge_workspace(workspace.workspace_id)
                except AirException as exc:
                    if exc.kind != ErrorKind.WORKSPACE_ERROR:
                        raise
                    await self._workspace_failed(node, workspace, outcome, exc, attempt_index)
                    continue
                assert outcome.result is not None
                if merged.status != "conflicted":
                    await self._record_end(
                        node,
                        "task.completed",
                        {
                            "agent_id": outcome.agent_id,
                            "worker_result": await self._with_evidence(node, outcome),
                        },
                        attempt_index=attempt_index,
                    )
                    await self._learn(node, outcome)
                    node.status = TaskStatus.COMPLETED
                    node.final = True
                    self._wave_completed.append(node.task_id)
                    continue
                error = make_air_error(
                    kind=ErrorKind.MERGE_CONFLICT,
                    message=f"merge conflict in {', '.join(merged.conflicted_paths)}",
                    retryability=Retryability.AFTER_CHANGE,
                    metadata={"kept_branch": merged.kept_branch, "outcome": "merge_conflict"},
                )
                await self.workspaces.abandon_workspace(workspace.workspace_id, "merge conflict")
                await self._record_end(
                    node,
                    "task.failed",
                    {"agent_id": outcome.agent_id, "error": error.model_dump(mode="json")},
                    attempt_index=attempt_index,
                )
                node.status = TaskStatus.FAILED
                node.final = False
                self._solo.add(node.task_id)
        self._pending_merges = []

    async def _workspace_failed(
        self,
        node: TaskNode,
        workspace: WorkspaceRef,
        outcome: TaskOutcome,
        exc: AirException,
        attempt_index: int,
    ) -> None:
        """A workspace that cannot be merged (its git metadata was tampered with, or git
        failed): the task fails with that ``workspace_error`` and is not retried; the
        workspace is left exactly as it is for inspection (IMPL-GIT-2)."""
        error = exc.error.model_copy(
            update={
                "retryability": Retryability.NEVER,
                "metadata": {
                    **(exc.error.metadata or {}),
                    "outcome": "workspace_error",
                    "workspace_id": workspace.workspace_id,
                    "kept_path": workspace.path,
                },
            }
        )
        await self._record_end(
            node,
            "task.failed",
            {"agent_id": outcome.agent_id, "error": error.model_dump(mode="json")},
            attempt_index=attempt_index,
        )
        node.status = TaskStatus.FAILED
        node.final = True

    # -- reviewing --------------------------------------------------------------------------
    async def _schedule_reviews(self) -> None:
        for task_id in self._wave_completed:
            node = self.graph.tasks[task_id]
            if node.spec.type not in (TaskType.EXECUTE, TaskType.DOCS):
                continue
            review_id = f"{task_id}.review"
            if review_id in self.graph.tasks:
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
            await self.create_tasks([spec])
            self.graph.add_task(spec)
        self._wave_completed = []

    # -- monitor callbacks ------------------------------------------------------------------
    async def _on_lost(self, lost: Any) -> None:
        await self.cancel_task(lost.task_id, f"agent lost: {lost.reason}")

    async def on_overdue(self, agent: WatchedAgent) -> None:
        if agent.task_id is not None:
            await self.cancel_task(agent.task_id, "hard timeout passed without an outcome")

    # -- result -----------------------------------------------------------------------------
    def _result(self) -> SchedulerRunResult:
        tasks = list(self.graph.tasks.values())

        def ids(*statuses: TaskStatus) -> list[str]:
            return [n.task_id for n in tasks if n.status in statuses]

        cancelled = self._cancel_reason is not None
        if cancelled:
            self._enter(SchedulerState.CANCELLED)
            status: Literal["completed", "blocked", "cancelled"] = "cancelled"
        elif self.state == SchedulerState.COMPLETED:
            status = "completed"
        else:
            status = "blocked"
        return SchedulerRunResult(
            session_id=self.ledger.session_id,
            status=status,
            completed_task_ids=ids(TaskStatus.COMPLETED),
            failed_task_ids=ids(TaskStatus.FAILED),
            blocked_task_ids=ids(TaskStatus.BLOCKED),
            cancelled_task_ids=ids(TaskStatus.CANCELLED, TaskStatus.INTERRUPTED),
            waves=self.waves,
        )


def _error(kind: ErrorKind, message: str) -> AirError:
    return make_air_error(kind=kind, message=message)


def _dependency_row(dep: TaskDependencySpec) -> dict[str, Any]:
    return {
        "depends_on_task_id": dep.depends_on_task_id,
        "dependency_type": dep.dependency_type.value,
        "reason": dep.reason,
        "source": (dep.source or DependencySource.SCHEDULER).value,
    }


def _debug_spec(
    spec: TaskSpec, debug_id: str, error: AirError, known: Sequence[DebugRecord] = ()
) -> TaskSpec:
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
