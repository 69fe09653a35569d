"""A task's outcome, as one pipeline (SDD §20.2 COLLECTING_RESULTS, MERGING; §19.4, §18.4):
verify → gate → merge → review → record → learn, in this file, top to bottom.

Owns ``collect`` (one attempt's ``TaskOutcome`` becomes its end event) and its steps:

1. **verify** — a completed C++ change counts only with the parent's own passing build +
   ctest records (``evidence.cpp_evidence_gate``); without them the attempt failed;
2. **gate** — a completed result is held at the architecture gate (SDD §19.4): held, the task
   ends ``task.blocked``, not merged, and its dependents never run;
3. **merge** — a change made in its own workspace lands as a merge, one at a time and
   shielded, right after its task ends (so a dependent never waits for the rest of the wave);
   a conflict fails the attempt (retried alone), a tampered workspace or a change outside the
   write area fails the task for good (IMPL-GIT-2, IMPL-MERGE-1);
4. **review** — under ``review: wave`` the change gets its review task before it is recorded,
   and a review's verdict is routed before the review's own end (IMPL-REVIEW-1);
5. **record** — the attempt's evidence (``evidence.created``), a compaction's summary row, then
   ``task.completed``;
6. **learn** — a debug task's landed fix goes through the knowledge outbox (SDD §18.4): the
   DebugKnowledgeStore record, then ``debug.record.created``; it follows the record, so a fix
   is learnt only once its task is durably completed.

An attempt that did not complete ends ``blocked``, ``cancelled`` or ``failed``; a failure
keeps the worker's summary and verification results in its error (IMPL-REVIEW-2: what an
informed retry reads). Evidence is read from the agent's own events as the ledger's fold
indexes them, never from the whole log. Imported once a worker has returned (IMPL-BOOT-8).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

from air.artifacts.evidence import collect_evidence, cpp_evidence_gate
from air.context.compactor import record_worker_summary
from air.contracts.error import AirException, ErrorKind, Retryability, make_air_error
from air.contracts.task import SchedulerState, TaskStatus, TaskType, WorkspaceRef, WorkspaceStrategy
from air.contracts.worker_result import WorkerResult, WorkerStatus
from air.nursery.facts import RECORD_GRACE, end_task, record_end
from air.nursery.graph import TaskNode
from air.nursery.reviews import change_diff, gate_on_review, route_verdict
from air.nursery.write_areas import merge_guard
from air.session.knowledge import KnowledgeService
from air.session.knowledge_signature import verification_signature
from air.supervision.task_outcome import TaskOutcome

if TYPE_CHECKING:
    from air.nursery.state import Ports, RunState

__all__ = ["MERGE_GRACE", "collect", "collect_returned", "set_aside"]

MERGE_GRACE = 120.0  # seconds a shielded merge may take


async def collect(
    st: RunState,
    io: Ports,
    node: TaskNode,
    workspace: WorkspaceRef,
    outcome: TaskOutcome,
    attempt_index: int,
    completed: list[str],
) -> None:
    """Record the end of one attempt from its outcome, step by step (``completed`` gets the
    task id when it completed). Called unshielded: each step is shielded where a cancel must
    not cut it; the architecture gate (a model call, maybe the person) is work, and a cancel
    there records the task ``interrupted``."""
    outcome = verify(io, node, workspace, outcome)
    result = outcome.result
    if result is None or result.status != WorkerStatus.COMPLETED:
        with trio.move_on_after(RECORD_GRACE, shield=True):
            # why shielded: a finished attempt's end is never lost to a late cancel
            await ended_otherwise(io, node, outcome, attempt_index, workspace.path)
            await set_aside(io, workspace, f"attempt {attempt_index} did not complete")
        return
    if not await gate(io, node, outcome.agent_id, result, attempt_index):
        with trio.move_on_after(RECORD_GRACE, shield=True):
            await set_aside(io, workspace, "held at the architecture gate")
        return
    if workspace.strategy == WorkspaceStrategy.MAIN or io.workspaces is None:
        with trio.move_on_after(RECORD_GRACE, shield=True):
            # why shielded: a change made in place is kept: its end is recorded
            await land(st, io, node, outcome, attempt_index, completed, None)
        return  # made in place: nothing to merge
    merged: bool | None = None  # None until the merge decided
    with trio.CancelScope(shield=True):
        # why shielded: a half-done git merge, or a merged change without its end, must not be
        # left behind by a cancel
        diff: str | None = None
        with trio.move_on_after(MERGE_GRACE) as diffing:
            diff = await change_diff(io, workspace) if io.options.review == "wave" else None
        if not diffing.cancelled_caught:
            # the wait for other tasks' merges is not this one's grace (each has its own): the
            # last of a few long merges ending at once failed "did not end" without a try
            async with st.merge_lock:
                with trio.move_on_after(MERGE_GRACE):
                    io.enter(st, SchedulerState.MERGING)
                    merged = await merge(st, io, node, workspace, outcome, attempt_index)
                    if merged:
                        await land(st, io, node, outcome, attempt_index, completed, diff)
                        # landed: its commits are in the project's history; the worktree and
                        # its branch go now, not after the retention (IMPL-GIT-4)
                        await io.workspaces.cleanup_workspace(workspace.workspace_id)
    if merged is None:
        # the grace ran out before the merge decided (git hung): the task's end is recorded,
        # never a run that ends blocked without a word
        overran = AirException.of(
            kind=ErrorKind.WORKSPACE_ERROR,
            message=f"the merge of task {node.task_id} did not end within {MERGE_GRACE:g} s",
            user_action="Check the project's git state (git status; a merge in progress is "
            "ended with git merge --abort); the task's work is kept in its workspace.",
        )
        with trio.move_on_after(RECORD_GRACE, shield=True):
            # why shielded: the end must be recorded even as the run unwinds
            await _unmergeable(io, node, workspace, outcome, overran, attempt_index)


async def collect_returned(st: RunState, io: Ports, node: TaskNode) -> None:
    """Collect the outcome of an attempt whose worker had returned its result when the runtime
    stopped (recovery left its task running: ``air.nursery.recovery``, step 3), from where the
    pipeline had got: a change that landed goes on to review → record → learn, and its
    workspace goes; any other from verify (a merge the crash stopped was ended by recovery).
    Without that result (a log from before ``agent.completed`` kept it) the attempt is
    interrupted: the task runs again."""
    from air.nursery.recovery import returned_result  # after a crash only

    state = io.ledger.state()
    fact = state.tasks[node.task_id]
    space = state.workspaces.get(fact.workspace_id or "")
    returned = returned_result(io.ledger, node.task_id, fact.agent_id)
    attempt_index = fact.attempt_count
    if returned is None or space is None or fact.agent_id is None:
        said = {"agent_id": fact.agent_id, "reason": "its worker's result was not kept"}
        with trio.move_on_after(RECORD_GRACE, shield=True):
            # why shielded: the interruption must be recorded even as the run unwinds
            await record_end(io.ledger, node, "task.interrupted", said, attempt_index=attempt_index)
        node.status = TaskStatus.PENDING  # interrupted ──resume──▶ pending
        return
    workspace = WorkspaceRef.model_validate(
        {k: getattr(space, k) for k in WorkspaceRef.model_fields}
    )
    outcome = TaskOutcome(
        task_id=node.task_id,
        agent_id=fact.agent_id,
        kind="result",
        result=WorkerResult.model_validate(returned),
    )
    if space.status != "merged" or io.workspaces is None:
        await collect(st, io, node, workspace, outcome, attempt_index, [])
        return
    with trio.CancelScope(shield=True):
        # why shielded: as in ``collect``, a merged change is not left without its end
        async with st.merge_lock:
            with trio.move_on_after(MERGE_GRACE):
                await land(st, io, node, outcome, attempt_index, [], None)
                await io.workspaces.cleanup_workspace(workspace.workspace_id)


async def land(
    st: RunState,
    io: Ports,
    node: TaskNode,
    outcome: TaskOutcome,
    attempt_index: int,
    completed: list[str],
    diff: str | None,
) -> None:
    """review → record → learn, for a completed (and merged) change."""
    if not await review(st, io, node, outcome, attempt_index, diff):
        return
    await record(io, node, outcome, attempt_index)
    await learn(io, node, outcome)
    completed.append(node.task_id)


# -- 1. verify ------------------------------------------------------------------------------
def verify(io: Ports, node: TaskNode, workspace: WorkspaceRef, outcome: TaskOutcome) -> TaskOutcome:
    """A completed C++ change without the parent's own passing build + ctest records is a
    failed attempt (its error says which record is missing); anything else is as it came."""
    result = outcome.result
    if result is None or result.status != WorkerStatus.COMPLETED:
        return outcome
    events = io.ledger.state().events_of_agent(outcome.agent_id)
    missing = cpp_evidence_gate(node.spec, outcome.agent_id, events, workspace.path)
    if missing is None:
        return outcome
    failed = result.model_copy(update={"status": WorkerStatus.FAILED, "error": missing})
    return outcome.model_copy(update={"error": missing, "result": failed})


_AT_THE_GATE = "cancelled while its change was at the architecture gate"


# -- 2. gate --------------------------------------------------------------------------------
async def gate(
    io: Ports, node: TaskNode, agent_id: str, result: WorkerResult, attempt_index: int
) -> bool:
    """Ask the architecture gate about a completed result. False: the task was ended
    ``task.blocked`` (not merged; its dependents never run) with the gate's class and reason."""
    architecture = io.architecture_gate
    if architecture is None:
        return True
    try:
        # not under a record's grace: the designer's model call (and a confirmation the
        # person may take minutes over) ended there, and with it the task, which never ended
        decision = await architecture.review(node.spec, result)
    except* trio.Cancelled:
        with trio.move_on_after(RECORD_GRACE, shield=True):
            # why shielded: the interruption must be recorded even as the run unwinds
            said = {"agent_id": agent_id, "reason": _AT_THE_GATE}
            await record_end(io.ledger, node, "task.interrupted", said, attempt_index=attempt_index)
        node.status = TaskStatus.INTERRUPTED
        raise
    if decision.proceed:
        return True
    reason = f"architecture gate ({decision.result_class}): {decision.reason}"
    with trio.move_on_after(RECORD_GRACE, shield=True):
        await _end_blocked(io, node, agent_id, reason, result, attempt_index)
    return False


# -- 3. merge -------------------------------------------------------------------------------
async def merge(
    st: RunState,
    io: Ports,
    node: TaskNode,
    workspace: WorkspaceRef,
    outcome: TaskOutcome,
    attempt_index: int,
) -> bool:
    """Merge the attempt's workspace into the project (under the merge lock). False: it did
    not land, and the attempt's failure is recorded."""
    assert io.workspaces is not None
    try:
        merged = await io.workspaces.merge_workspace(
            workspace.workspace_id,
            guard=merge_guard(node.spec.scope, io.project_root),
            title=node.spec.title,
            summary=outcome.result.summary if outcome.result is not None else None,
            wrote=outcome.result.changed_files if outcome.result is not None else (),
        )
    except AirException as exc:
        if exc.kind not in (ErrorKind.WORKSPACE_ERROR, ErrorKind.WRITE_AREA_VIOLATION):
            raise
        await _unmergeable(io, node, workspace, outcome, exc, attempt_index)
        return False
    if merged.status != "conflicted":
        return True
    error = make_air_error(
        kind=ErrorKind.MERGE_CONFLICT,
        message=f"merge conflict in {', '.join(merged.conflicted_paths)}",
        retryability=Retryability.AFTER_CHANGE,
        metadata={"kept_branch": merged.kept_branch, "outcome": "merge_conflict"},
    )
    await io.workspaces.abandon_workspace(workspace.workspace_id, "merge conflict")
    payload = {"agent_id": outcome.agent_id, "error": error.model_dump(mode="json")}
    await _failed(io, node, payload, attempt_index, final=False)
    st.solo.add(node.task_id)  # its retry runs alone
    return False


async def _unmergeable(
    io: Ports,
    node: TaskNode,
    workspace: WorkspaceRef,
    outcome: TaskOutcome,
    exc: AirException,
    attempt_index: int,
) -> None:
    """A workspace that cannot be merged (its git metadata was tampered with, git failed, or
    it changed paths outside the task's write area): the task fails with that
    ``workspace_error`` / ``write_area_violation`` and is not retried; the workspace is left
    exactly as it is for inspection (IMPL-GIT-2, IMPL-MERGE-1)."""
    error = exc.error.model_copy(
        update={
            "retryability": Retryability.NEVER,
            "metadata": {
                **(exc.error.metadata or {}),
                "outcome": exc.kind.value,
                "workspace_id": workspace.workspace_id,
                "kept_path": workspace.path,
            },
        }
    )
    payload = {"agent_id": outcome.agent_id, "error": error.model_dump(mode="json")}
    await _failed(io, node, payload, attempt_index, final=True)


# -- 4. review ------------------------------------------------------------------------------
async def review(
    st: RunState,
    io: Ports,
    node: TaskNode,
    outcome: TaskOutcome,
    attempt_index: int,
    diff: str | None,
) -> bool:
    """The review gate and a review's verdict act before the end is recorded: no dependent can
    be planned between this task's completion and the edge that makes it wait. False: the
    verdict blocked the task (recorded)."""
    await gate_on_review(st, io, node, diff)
    refusal = await route_verdict(st, io, node, outcome)
    if refusal is None:
        return True
    assert outcome.result is not None
    await _end_blocked(io, node, outcome.agent_id, refusal, outcome.result, attempt_index)
    return False


async def _end_blocked(
    io: Ports, node: TaskNode, agent_id: str, reason: str, result: WorkerResult, attempt_index: int
) -> None:
    """End the task ``task.blocked`` with ``reason``, the worker's result kept."""
    payload = {"agent_id": agent_id, "reason": reason, "worker_result": _dump(result)}
    await end_task(
        io.ledger, node, "task.blocked", payload, TaskStatus.BLOCKED, attempt_index=attempt_index
    )


# -- 5. record ------------------------------------------------------------------------------
async def record(io: Ports, node: TaskNode, outcome: TaskOutcome, attempt_index: int) -> None:
    """The attempt's evidence, a compaction's summary row, then ``task.completed``."""
    worker_result = await with_evidence(io, node, outcome)
    if node.spec.type == TaskType.COMPACT:  # the summaries row, under the runtime's id
        worker_result = await record_worker_summary(io.ledger, node.task_id, worker_result)
    payload = {"agent_id": outcome.agent_id, "worker_result": worker_result}
    await end_task(
        io.ledger,
        node,
        "task.completed",
        payload,
        TaskStatus.COMPLETED,
        attempt_index=attempt_index,
    )


async def with_evidence(io: Ports, node: TaskNode, outcome: TaskOutcome) -> dict[str, Any]:
    """Record the attempt's evidence (``evidence.created``) and return the worker result
    with those refs attached, ready for ``task.completed``."""
    assert outcome.result is not None
    found = collect_evidence(
        node.spec, outcome.agent_id, io.ledger.state().events_of_agent(outcome.agent_id)
    )
    for _ref, payload in found:
        await io.ledger.record("evidence.created", payload)
    result = outcome.result
    if found:
        known = {e.evidence_ref_id for e in result.evidence_refs}
        extra = [ref for ref, _ in found if ref.evidence_ref_id not in known]
        result = result.model_copy(update={"evidence_refs": [*result.evidence_refs, *extra]})
    return _dump(result)


# -- 6. learn -------------------------------------------------------------------------------
async def learn(io: Ports, node: TaskNode, outcome: TaskOutcome) -> None:
    """A debug task's landed fix goes through the knowledge outbox (SDD §18.4): the
    DebugKnowledgeStore record first, then ``debug.record.created``, then mining. An
    ExperienceMiner's statements become memory candidates (IMPL-LEARN-6)."""
    if node.spec.type == TaskType.MINE_EXPERIENCE and outcome.result is not None:
        statements = (outcome.result.result or {}).get("candidates") or []
        miner = KnowledgeService.for_project(io.ledger, io.project_root)
        try:
            await miner.propose([str(s) for s in statements], task_id=node.task_id)
        finally:
            miner.close()
        return
    if node.spec.type != TaskType.DEBUG or outcome.result is None or not node.parent_task_id:
        return
    parent = io.ledger.state().tasks.get(node.parent_task_id)
    service = KnowledgeService.for_project(io.ledger, io.project_root)
    try:
        await service.learn_from_debug(
            node.task_id,
            node.parent_task_id,
            outcome.result,
            parent.last_error if parent is not None else None,
        )
    finally:
        service.close()


# -- an attempt that did not complete -------------------------------------------------------
async def set_aside(io: Ports, workspace: WorkspaceRef, reason: str) -> None:
    """An attempt's own workspace that will not be merged is set aside (abandoned: its files
    stay for the retention, 3 days; ``WorkspaceManager.set_aside``). Without this every failed
    attempt kept a whole checkout forever. No git work: this runs in the outcome's short
    shielded grace."""
    if io.workspaces is not None and workspace.strategy != WorkspaceStrategy.MAIN:
        await io.workspaces.set_aside(workspace.workspace_id, reason)


async def ended_otherwise(
    io: Ports, node: TaskNode, outcome: TaskOutcome, attempt_index: int, workspace_root: str = ""
) -> None:
    """A worker that reported a blocker or cancelled its task ends it so; anything else is a
    failed attempt (the RetryPlanner decides what follows)."""
    result = outcome.result
    base = {"agent_id": outcome.agent_id}
    if result is not None and result.status == WorkerStatus.BLOCKED:
        reason = result.summary or "the worker reported a blocker"
        await _end_blocked(io, node, outcome.agent_id, reason, result, attempt_index)
        return
    if result is not None and result.status == WorkerStatus.CANCELLED:
        payload = {**base, "reason": result.summary or "the worker cancelled the task"}
        await end_task(
            io.ledger,
            node,
            "task.cancelled",
            payload,
            TaskStatus.CANCELLED,
            attempt_index=attempt_index,
        )
        return
    error = outcome.error or (result.error if result is not None else None)
    if error is None:
        said = f": {result.summary[:200]}" if result is not None and result.summary else ""
        # the worker's own words make the signature: two different failures are not "the
        # same failure again" to the RetryPlanner (IMPL-REVIEW-2)
        error = make_air_error(
            kind=ErrorKind.TASK_FAILED,
            message=f"worker ended {result.status.value if result else outcome.kind}{said}",
        )
    update: dict[str, Any] = {
        "metadata": {
            **(error.metadata or {}),
            **_failure_evidence(result),
            "outcome": outcome.kind,
            "exit_code": outcome.exit_code,
            "worker_status": result.status.value if result is not None else None,
        }
    }
    if outcome.transient:
        update["retryability"] = Retryability.TRANSIENT
    cpp = "cpp_failure" in (error.metadata or {})  # the C++ gate names its own (ctest:...)
    if error.kind == ErrorKind.VERIFICATION_FAILED and not cpp:  # IMPL-LEARN-5
        events = io.ledger.state().events_of_agent(outcome.agent_id)
        roots = (workspace_root, io.project_root)
        found = verification_signature(events, node.spec.verification.commands or [], roots=roots)
        update["semantic_signature"] = found or error.semantic_signature
    error = error.model_copy(update=update)
    failure: dict[str, Any] = {**base, "error": error.model_dump(mode="json")}
    if result is not None:
        failure["worker_result"] = _dump(result)
    await _failed(io, node, failure, attempt_index, final=False)


def _failure_evidence(result: WorkerResult | None) -> dict[str, Any]:
    """What a failed worker said about its failure (its summary, its verification results),
    kept in the error so that the retry's L8 shows it (IMPL-REVIEW-2)."""
    if result is None:
        return {}
    found: dict[str, Any] = {}
    if result.summary:
        found["worker_summary"] = result.summary[:2000]
    checks = [v.model_dump(mode="json", exclude_none=True) for v in result.verification]
    if checks:
        found["verification"] = checks[:20]
    return found


async def _failed(
    io: Ports, node: TaskNode, payload: dict[str, Any], attempt_index: int, *, final: bool
) -> None:
    """Record ``task.failed`` and mark the node failed; ``final``: no retry will follow."""
    await end_task(
        io.ledger,
        node,
        "task.failed",
        payload,
        TaskStatus.FAILED,
        final=final,
        attempt_index=attempt_index,
    )


def _dump(result: WorkerResult) -> dict[str, Any]:
    return result.model_dump(mode="json")
