"""DISPATCHING and MONITORING of one task (SDD §7.1, §20.2): one attempt, in its own scope.

Owns ``run_task`` (the task's deadline checked → workspace → ``task.started`` →
``TaskRunner.supervise`` inside the task's own ``CancelScope`` → the end event, every record
under a bounded shield) and ``workspace_for``. ``run_task`` is started with ``nursery.start``:
it reports started once the task holds its slot (status ``running``), so the Scheduler never
plans the same task twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from air.contracts.error import AirException, ErrorKind, Retryability
from air.contracts.task import (
    AGENT_TYPE_FOR_TASK,
    TaskStatus,
    TaskType,
    WavePlanEntry,
    WorkspaceRef,
    WorkspaceStrategy,
)
from air.nursery import deadlines
from air.nursery.carried import carried_checkpoint
from air.nursery.facts import RECORD_GRACE, end_task, record_end
from air.nursery.write_areas import denied_in
from air.supervision.seams import SuperviseRequest

if TYPE_CHECKING:
    from air.nursery.graph import TaskNode
    from air.nursery.state import Ports, RunState
    from air.supervision.task_outcome import TaskOutcome

__all__ = ["run_task", "workspace_for"]


async def workspace_for(st: RunState, io: Ports, entry: WavePlanEntry) -> WorkspaceRef:
    """The workspace a planned task runs in (the session's shared ``main`` one, or its own)."""
    strategy = WorkspaceStrategy(entry.workspace.strategy)
    if io.workspaces is not None and strategy != WorkspaceStrategy.MAIN:
        # no agent id yet: the agent row appears only when the runner records agent.started
        scope = st.graph.tasks[entry.task_id].spec.scope
        leave_out = denied_in(scope, io.project_root)  # a copy holds no denied path
        return await io.workspaces.create_workspace(entry.workspace, leave_out=leave_out)
    if st.main_workspace is None:
        main_id = f"ws_main_{io.ledger.session_id}"
        if io.workspaces is None:
            st.main_workspace = WorkspaceRef(
                workspace_id=main_id, strategy=WorkspaceStrategy.MAIN, path=io.project_root
            )
        elif main_id in io.ledger.state().workspaces:
            st.main_workspace = io.workspaces.get(main_id).ref()
        else:
            st.main_workspace = await io.workspaces.create_workspace(
                entry.workspace, workspace_id=main_id, shared=True
            )
    return st.main_workspace


async def _fail_unstarted(io: Ports, node: TaskNode, exc: AirException) -> None:
    """A task that cannot start (no workspace, no snapshot) fails; the run goes on."""
    error = exc.error.model_copy(update={"retryability": Retryability.NEVER})
    payload = {"error": error.model_dump(mode="json")}
    await end_task(io.ledger, node, "task.failed", payload, TaskStatus.FAILED)


async def _snapshot_before(io: Ports, node: TaskNode, workspace: WorkspaceRef) -> None:
    """A task that may write in the project itself (``main``) gets a backup snapshot, ignored
    files included, before its worker starts: ``air restore`` can undo it (IMPL-MERGE-1)."""
    writes = node.write_area != [] and node.type != TaskType.REVIEW
    if io.workspaces is not None and workspace.strategy == WorkspaceStrategy.MAIN and writes:
        await io.workspaces.snapshot_before_task(node.task_id, workspace.workspace_id)


async def run_task(
    st: RunState,
    io: Ports,
    entry: WavePlanEntry,
    completed: list[str],
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run one attempt of a planned task and record how it ended.

    Args:
        st: the run's state record; io: its ports.
        entry: the task's plan entry (workspace strategy, model).
        completed: the wave's completed task ids (this task's is appended when it completes).
        task_status: reported started once the task is ``running`` (or found not pending).
    """
    node = st.graph.tasks[entry.task_id]
    if node.status != TaskStatus.PENDING:
        task_status.started()
        return  # cancelled between the planning and this start: nothing to run
    if deadlines.expired(st, node):
        # no time is left for this attempt: it never starts (IMPL-DEADLINE-1)
        task_status.started()
        with trio.move_on_after(RECORD_GRACE, shield=True):
            # why shielded: the end must be recorded even as the run unwinds
            await deadlines.expire(st, io, node)
        return
    deadline_at = deadlines.arm(st, node)
    spec = node.spec
    attempt_index = node.attempts + 1  # attempts are numbered from 1 (task_attempts)
    agent_id = io.ids.agent_id()
    scope = trio.CancelScope()
    st.scopes[spec.id] = scope
    node.status = TaskStatus.RUNNING
    node.attempts += 1
    task_status.started()
    try:
        with trio.CancelScope(shield=True):
            # why shielded: a run cancel must not leave a workspace without its event; why no
            # deadline: making one is work (a checkout of 100,000 files), not a record: past
            # RECORD_GRACE it left ``workspace`` unset and the run ended in UnboundLocalError
            try:
                workspace = await workspace_for(st, io, entry)
            except AirException as exc:
                if exc.kind != ErrorKind.WORKSPACE_ERROR:
                    raise
                # no workspace, no worker: the task fails, the run goes on (IMPL-GIT-2)
                await _fail_unstarted(io, node, exc)
                return
        try:
            await _snapshot_before(io, node, workspace)
        except AirException as exc:
            if exc.kind != ErrorKind.WORKSPACE_ERROR:
                raise
            with trio.move_on_after(RECORD_GRACE, shield=True):
                # why shielded: the failure must be recorded even as the run unwinds
                await _fail_unstarted(io, node, exc)
            return
        with trio.move_on_after(RECORD_GRACE, shield=True):
            # why shielded: a started worker always has its task.started
            await io.ledger.record(
                "task.started",
                {
                    "task_id": spec.id,
                    "agent_id": agent_id,
                    "agent_type": AGENT_TYPE_FOR_TASK[spec.type].value,
                    "attempt_index": attempt_index,
                    "workspace_id": workspace.workspace_id,
                },
            )
        if io.monitor is not None:
            # the safety net fires after the task's own deadline (plus its margin)
            left = max(0.0, deadline_at - trio.current_time())
            io.monitor.watch(agent_id, spec.id, hard_timeout_s=left)
        request = SuperviseRequest(
            session_id=io.ledger.session_id,
            project_id=io.ledger.project_id,
            project_root=io.project_root,
            task_spec=spec,
            agent_id=agent_id,
            attempt_index=attempt_index,
            workspace=workspace,
            headless=io.options.headless,
            deadline_at=deadline_at,
            timeout_s=deadlines.timeout_s(node),
            depth=deadlines.depth(st.graph, node),
            resume_from=carried_checkpoint(io.ledger, spec.id, attempt_index),
        )
        outcome: TaskOutcome | None = None
        try:
            with scope:
                outcome = await io.runner.supervise(request)
        except* trio.Cancelled:
            # (a runner's own nursery may deliver the cancellation inside a group)
            with trio.move_on_after(RECORD_GRACE, shield=True):
                # why shielded: the interruption must be recorded even as the run unwinds
                await record_end(
                    io.ledger,
                    node,
                    "task.interrupted",
                    {"agent_id": agent_id, "reason": st.cancel_reason or "run cancelled"},
                    attempt_index=attempt_index,
                )
            node.status = TaskStatus.INTERRUPTED
            raise
        # the outcome's checks (evidence, gates, reviews, merge) are imported once a worker
        # has returned, not before the first request (IMPL-BOOT-8)
        from air.nursery.outcomes import collect, set_aside

        if outcome is None:
            with trio.move_on_after(RECORD_GRACE, shield=True):
                # why shielded: a cancelled task's end is recorded even as the run unwinds
                reason = st.cancel_reasons.get(spec.id, "cancelled by request")
                await end_task(
                    io.ledger,
                    node,
                    "task.cancelled",
                    {"agent_id": agent_id, "reason": reason},
                    TaskStatus.CANCELLED,
                    attempt_index=attempt_index,
                )
                await set_aside(io, workspace, f"attempt {attempt_index} was cancelled")
        else:
            # not under a record's grace as a whole: its steps are work (the architecture
            # gate's model call, a merge with its own grace), each shielded as it needs
            await collect(st, io, node, workspace, outcome, attempt_index, completed)
    finally:
        st.scopes.pop(spec.id, None)
        if node.final:
            deadlines.disarm(st, spec.id)
        if io.monitor is not None:
            io.monitor.forget(agent_id)
        st.slot_freed(spec.id)
