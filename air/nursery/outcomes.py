"""COLLECTING_RESULTS and MERGING (SDD §20.2): one attempt's outcome becomes its end event.

Owns ``collect`` (a TaskOutcome → ``task.completed/blocked/cancelled/failed``, after the C++
evidence gate), ``with_evidence`` (the attempt's ``evidence.created`` records) and ``merge``
(a completed change in its own workspace lands as a merge, one at a time and shielded, right
after its task ends, so a dependent never waits for the rest of the wave). A completed result
is held at the architecture gate first (``architecture_gate.hold``). Evidence is read
from the agent's own events as the ledger's fold indexes them, never from the whole log.
Review hunks (IMPL-REVIEW-1): a completed change is gated on its review before it is recorded,
and a review's verdict is routed before the review's own end; a failure keeps the worker's
summary and verification results in its error (IMPL-REVIEW-2: what an informed retry reads).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

from air.contracts.error import AirException, ErrorKind, Retryability, make_air_error
from air.contracts.task import SchedulerState, TaskStatus, TaskType, WorkspaceRef, WorkspaceStrategy
from air.contracts.worker_result import WorkerResult, WorkerStatus
from air.nursery.architecture_gate import hold
from air.nursery.compaction import record_worker_summary
from air.nursery.evidence import collect_evidence, cpp_evidence_gate
from air.nursery.graph import TaskNode
from air.nursery.reviews import change_diff, gate_on_review, learn, route_verdict
from air.nursery.seams import TaskOutcome
from air.nursery.write_areas import merge_guard

if TYPE_CHECKING:
    from air.nursery.scheduler import Scheduler

__all__ = ["MERGE_GRACE", "collect", "merge", "with_evidence"]

MERGE_GRACE = 120.0  # seconds a shielded merge may take


async def collect(
    s: Scheduler,
    node: TaskNode,
    workspace: WorkspaceRef,
    outcome: TaskOutcome,
    attempt_index: int,
    completed: list[str],
) -> None:
    """Record the end of one attempt from its outcome (``completed`` gets the task id when
    it completed)."""
    result = outcome.result
    base = {"agent_id": outcome.agent_id}
    if result is not None and result.status == WorkerStatus.COMPLETED:
        # a C++ change counts only with the parent's own passing build + ctest records
        gate = cpp_evidence_gate(
            node.spec,
            outcome.agent_id,
            s.ledger.state().events_of_agent(outcome.agent_id),
            workspace.path,
        )
        if gate is not None:
            outcome = outcome.model_copy(update={"error": gate})
            result = result.model_copy(update={"status": WorkerStatus.FAILED, "error": gate})
    if result is not None and result.status == WorkerStatus.COMPLETED:
        if not await hold(s, node, outcome.agent_id, result, attempt_index):
            return  # the architecture gate held it: blocked, not merged (SDD §19.4)
        if workspace.strategy != WorkspaceStrategy.MAIN and s.workspaces is not None:
            await merge(s, node, workspace, outcome, attempt_index, completed)
            return
        await _completed(s, node, outcome, attempt_index, completed)
        return
    if result is not None and result.status == WorkerStatus.BLOCKED:
        reason = result.summary or "the worker reported a blocker"
        await s.record_end(
            node,
            "task.blocked",
            {**base, "reason": reason, "worker_result": result.model_dump(mode="json")},
            attempt_index=attempt_index,
        )
        node.status = TaskStatus.BLOCKED
        node.final = True
        return
    if result is not None and result.status == WorkerStatus.CANCELLED:
        await s.record_end(
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
    error = error.model_copy(update=update)
    payload: dict[str, Any] = {**base, "error": error.model_dump(mode="json")}
    if result is not None:
        payload["worker_result"] = result.model_dump(mode="json")
    await _failed(s, node, payload, attempt_index, final=False)


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


async def _completed(
    s: Scheduler,
    node: TaskNode,
    outcome: TaskOutcome,
    attempt_index: int,
    completed: list[str],
    diff: str | None = None,
) -> None:
    # the review gate and the verdict act before the end is recorded: no dependent can be
    # planned between this task's completion and the edge that makes it wait
    await gate_on_review(s, node, diff)
    refusal = await route_verdict(s, node, outcome)
    if refusal is not None:
        assert outcome.result is not None
        await s.record_end(
            node,
            "task.blocked",
            {
                "agent_id": outcome.agent_id,
                "reason": refusal,
                "worker_result": outcome.result.model_dump(mode="json"),
            },
            attempt_index=attempt_index,
        )
        node.status = TaskStatus.BLOCKED
        node.final = True
        return
    worker_result = await with_evidence(s, node, outcome)
    if node.spec.type == TaskType.COMPACT:  # the summaries row, under the runtime's id
        worker_result = await record_worker_summary(s.ledger, node.task_id, worker_result)
    await s.record_end(
        node,
        "task.completed",
        {"agent_id": outcome.agent_id, "worker_result": worker_result},
        attempt_index=attempt_index,
    )
    await learn(s, node, outcome)
    node.status = TaskStatus.COMPLETED
    node.final = True
    completed.append(node.task_id)


async def with_evidence(s: Scheduler, node: TaskNode, outcome: TaskOutcome) -> dict[str, Any]:
    """Record the attempt's evidence (``evidence.created``) and return the worker result
    with those refs attached, ready for ``task.completed``."""
    assert outcome.result is not None
    found = collect_evidence(
        node.spec, outcome.agent_id, s.ledger.state().events_of_agent(outcome.agent_id)
    )
    for _ref, payload in found:
        await s.ledger.record("evidence.created", payload)
    result = outcome.result
    if found:
        known = {e.evidence_ref_id for e in result.evidence_refs}
        extra = [ref for ref, _ in found if ref.evidence_ref_id not in known]
        result = result.model_copy(update={"evidence_refs": [*result.evidence_refs, *extra]})
    return result.model_dump(mode="json")


async def merge(
    s: Scheduler,
    node: TaskNode,
    workspace: WorkspaceRef,
    outcome: TaskOutcome,
    attempt_index: int,
    completed: list[str],
) -> None:
    """Merge a completed attempt's workspace (one merge at a time), then record the end."""
    assert s.workspaces is not None
    with trio.move_on_after(MERGE_GRACE, shield=True):
        # why shielded: a half-done git merge must not be left behind by a cancel
        diff = await change_diff(s, workspace) if s.options.review == "wave" else None
        async with s.merge_lock:
            s.enter(SchedulerState.MERGING)
            try:
                merged = await s.workspaces.merge_workspace(
                    workspace.workspace_id,
                    guard=merge_guard(node.spec.scope.write_area, s.project_root),
                )
            except AirException as exc:
                if exc.kind not in (ErrorKind.WORKSPACE_ERROR, ErrorKind.WRITE_AREA_VIOLATION):
                    raise
                await _workspace_failed(s, node, workspace, outcome, exc, attempt_index)
                return
            if merged.status != "conflicted":
                await _completed(s, node, outcome, attempt_index, completed, diff)
                return
            error = make_air_error(
                kind=ErrorKind.MERGE_CONFLICT,
                message=f"merge conflict in {', '.join(merged.conflicted_paths)}",
                retryability=Retryability.AFTER_CHANGE,
                metadata={"kept_branch": merged.kept_branch, "outcome": "merge_conflict"},
            )
            await s.workspaces.abandon_workspace(workspace.workspace_id, "merge conflict")
            payload = {"agent_id": outcome.agent_id, "error": error.model_dump(mode="json")}
            await _failed(s, node, payload, attempt_index, final=False)
            s.solo.add(node.task_id)


async def _workspace_failed(
    s: Scheduler,
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
    await _failed(s, node, payload, attempt_index, final=True)


async def _failed(
    s: Scheduler, node: TaskNode, payload: dict[str, Any], attempt_index: int, *, final: bool
) -> None:
    """Record ``task.failed`` and mark the node failed; ``final``: no retry will follow."""
    await s.record_end(node, "task.failed", payload, attempt_index=attempt_index)
    node.status = TaskStatus.FAILED
    node.final = final
