"""REVIEWING_WAVE and debug knowledge (SDD §7.1, §7.3, §19.5): what follows a success.

Owns the review loop (IMPL-REVIEW-1): ``change_diff`` (the diff of a change, read by the parent
from the task's workspace before it merges), ``gate_on_review`` (under ``review: wave`` a
completed code change gets its review task, carrying the spec, the diff and — through its
dependency — the evidence, and every dependent waits for that review), ``route_verdict`` (the
reviewer's verdict decides: ``approved`` lets the dependents run, ``changes_requested`` creates
a repair task carrying the findings, reviewed again, at most ``MAX_REVIEW_ROUNDS`` times,
``blocked`` blocks with the reviewer's reason) and ``schedule_reviews`` (the same review for a
wave's completed changes that have none yet). The outcome pipeline (``outcomes``) calls them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import trio
from pydantic import ValidationError

from air.contracts.error import AirException
from air.contracts.task import (
    DependencySource,
    DependencyType,
    TaskConstraints,
    TaskDependencySpec,
    TaskScope,
    TaskSpec,
    TaskStatus,
    TaskType,
    WorkspaceRef,
    WorkspaceStrategy,
)
from air.contracts.worker_result import ReviewerResult
from air.nursery.facts import add_dependency, create_tasks
from air.nursery.graph import TaskNode
from air.security.redact import SecretRedactor
from air.supervision.task_outcome import TaskOutcome
from air.tools.safefs import read_beneath
from air.workspace.file_diff import unified_diff

if TYPE_CHECKING:
    from air.nursery.state import Ports, RunState

__all__ = [
    "MAX_DIFF_CHARS",
    "MAX_REVIEW_ROUNDS",
    "change_diff",
    "gate_on_review",
    "repair_spec",
    "review_spec",
    "route_verdict",
    "schedule_reviews",
]

MAX_REVIEW_ROUNDS = 2
"""Repair rounds one change may get from its reviews; one more ``changes_requested`` blocks."""
MAX_DIFF_CHARS = 24_000
"""At most this much diff goes into a review task (the rest is named, not shown)."""
_REVIEWED = (TaskType.EXECUTE, TaskType.DOCS)
_REPAIR = re.compile(r"\.repair(\d+)$")


async def schedule_reviews(st: RunState, io: Ports, completed: Sequence[str]) -> None:
    """A review task for every completed execute/docs task of a wave that has none yet (a
    change completed before a restart); ``gate_on_review`` makes it at completion."""
    for task_id in completed:
        node = st.graph.tasks[task_id]
        if node.spec.type in _REVIEWED:
            await gate_on_review(st, io, node, None)


async def change_diff(io: Ports, workspace: WorkspaceRef) -> str | None:
    """The unified diff of a workspace against the project, read by the parent before the
    merge (the reviewer is read-only and never sees the workspace). ``None`` for the shared
    ``main`` workspace (the change is already in the project). Files are read beneath their
    roots without following symlinks: a worker cannot make the parent read (and send to a
    model) a file outside the workspace; the run's SecretRedactor is applied to the text."""
    if io.workspaces is None or workspace.strategy == WorkspaceStrategy.MAIN:
        return None
    try:
        names = await io.workspaces.changed_files(workspace.workspace_id)
    except AirException:
        return None  # the merge that follows reports the workspace's trouble
    root, path = io.project_root, workspace.path
    # worker-written text becomes a durable spec and a model request: the run's redactor
    # (the WorkerManager's, applied to everything else a worker produces) applies here too,
    # to each file's diff whole (as a diff: a hunk inside a key block), then cut
    found = getattr(io.runner, "redactor", None)
    redactor = found if isinstance(found, SecretRedactor) else None
    said = redactor.redact if redactor is not None else str
    parts: list[str] = []
    size = 0
    for name in names:
        if size > MAX_DIFF_CHARS:
            parts.append(said(f"(diff cut: {name} and later files changed too)"))
            break
        old, new = await trio.to_thread.run_sync(_sides, root, path, name)
        if old is None and new is None:
            parts.append(said(f"{name}: changed (not a readable regular file)"))
            continue
        diff = await unified_diff(old, new, name)  # bounded whatever the text (IMPL-DIFF-1)
        keep = max(0, MAX_DIFF_CHARS - size)
        if redactor is None:
            parts.append(diff[:keep])
        else:
            parts.append(await trio.to_thread.run_sync(redactor.redact_diff, diff, keep))
        size += len(diff)
    return "\n".join(parts)


def _sides(root: str, path: str, name: str) -> tuple[str | None, str | None]:
    """``name`` in the project and in the workspace (None: not a readable regular file)."""
    return _text_beneath(root, name), _text_beneath(path, name)


def _text_beneath(root: str, name: str) -> str | None:
    try:
        data = read_beneath(root, name)
    except (AirException, OSError):  # an escape, a symlink, a FIFO: named, never read
        return None
    return data.decode("utf-8", "replace") if data is not None else None


def review_spec(node: TaskNode, diff: str | None) -> TaskSpec:
    """The review task of a completed change: its spec, criteria and diff in the description;
    its evidence reaches the reviewer as the evidence of a dependency (L6)."""
    spec = node.spec
    task_id = spec.id
    if diff is None:
        change = "The change was made in place in the project; read the files it touched."
    elif diff.strip():
        change = f"The diff of the change (against the project before):\n```diff\n{diff}```"
    else:
        change = "The change left no file different from the project."
    return TaskSpec(
        id=f"{task_id}.review",
        type=TaskType.REVIEW,
        title=f"Review: {spec.title}",
        description=(
            f"Review the change made by task {task_id}: {spec.description}\n\n{change}\n\n"
            "Answer with verdict approved, changes_requested (findings: what must change) "
            "or blocked (findings: why it cannot go on)."
        ),
        acceptance_criteria=spec.acceptance_criteria,
        scope=TaskScope(write_area=[]),
        dependencies=[TaskDependencySpec(depends_on_task_id=task_id)],
        constraints=TaskConstraints(
            max_turns=spec.constraints.max_turns,
            soft_timeout_ms=spec.constraints.soft_timeout_ms,
            hard_timeout_ms=spec.constraints.hard_timeout_ms,
            retry_budget=0,
            model_id=spec.constraints.model_id,
        ),
        output_contract="ReviewerResult",
    )


async def gate_on_review(st: RunState, io: Ports, node: TaskNode, diff: str | None) -> None:
    """Under ``review: wave``, before a completed change is recorded: its review task, and a
    hard edge from each of its dependents to that review, so none of them runs before the
    verdict (durable: ``task.created``, ``task.dependency.added``)."""
    if io.options.review != "wave" or node.spec.type not in _REVIEWED:
        return
    review_id = f"{node.task_id}.review"
    if review_id not in st.graph.tasks:
        spec = review_spec(node, diff)
        await create_tasks(io.ledger, [spec])
        st.graph.add_task(spec)
    await _wait_for(st, io, node.task_id, review_id, f"waits for the review of {node.task_id}")


async def _wait_for(st: RunState, io: Ports, after: str, gate: str, reason: str) -> None:
    """Every dependent of ``after`` (but ``gate`` itself) also waits for ``gate``."""
    graph = st.graph
    for dependent in graph.dependents_of(after):
        if dependent.task_id == gate or dependent.status != TaskStatus.PENDING:
            continue
        if any(
            e.depends_on_task_id == gate and e.dependency_type == DependencyType.HARD
            for e in graph.edges_of(dependent.task_id)
        ):
            continue
        await add_dependency(
            io.ledger,
            graph,
            dependent.task_id,
            TaskDependencySpec(
                depends_on_task_id=gate,
                dependency_type=DependencyType.HARD,
                reason=reason,
                source=DependencySource.SCHEDULER,
            ),
        )


def _reviewed(st: RunState, review: TaskNode) -> TaskNode | None:
    """The change a review task reviews: its first hard dependency of type execute/docs."""
    for edge in st.graph.edges_of(review.task_id):
        dep = st.graph.tasks.get(edge.depends_on_task_id)
        if edge.dependency_type == DependencyType.HARD and dep is not None:
            if dep.spec.type in _REVIEWED:
                return dep
    return None


def repair_spec(reviewed: TaskSpec, review_id: str, findings: Sequence[str]) -> TaskSpec:
    """The repair task of a change a reviewer sent back: the change's own spec, with the
    findings in its description, after the review (``<root>.repair<n>``)."""
    match = _REPAIR.search(reviewed.id)
    root = reviewed.id[: match.start()] if match else reviewed.id
    round_ = int(match.group(1)) + 1 if match else 1
    listed = "\n".join(f"- {f}" for f in findings) or "- (the reviewer listed no findings)"
    return reviewed.model_copy(
        update={
            "id": f"{root}.repair{round_}",
            "title": f"Repair ({round_}): {reviewed.title}",
            "description": (
                f"{reviewed.description}\n\nThe reviewer of task {reviewed.id} requested "
                f"changes. Address every finding:\n{listed}"
            ),
            "dependencies": [TaskDependencySpec(depends_on_task_id=review_id)],
        }
    )


def review_round(task_id: str) -> int:
    """How many repair rounds a change has had (``x.repair2`` → 2)."""
    match = _REPAIR.search(task_id)
    return int(match.group(1)) if match else 0


async def route_verdict(
    st: RunState, io: Ports, node: TaskNode, outcome: TaskOutcome
) -> str | None:
    """Act on a completed review's verdict, before its end is recorded.

    Returns:
        ``None`` when the review completes (``approved``, or ``changes_requested`` with a
        repair task made and the review's dependents waiting for that repair); otherwise the
        reason the review ends ``blocked`` (a ``blocked`` verdict, or changes still requested
        after ``MAX_REVIEW_ROUNDS`` repairs) — its dependents are then blocked too.
    """
    if node.spec.type != TaskType.REVIEW or outcome.result is None:
        return None
    try:
        verdict = ReviewerResult.model_validate(outcome.result.result or {})
    except ValidationError:
        return None  # not a verdict (the worker's own check already judged the result)
    findings = "; ".join(verdict.findings) or outcome.result.summary or "no reason given"
    if verdict.verdict == "approved":
        return None
    if verdict.verdict == "blocked":
        return f"the reviewer blocked: {findings}"
    reviewed = _reviewed(st, node)
    if reviewed is None:
        return None  # a review of no change (e.g. of a document): its findings are its result
    if review_round(reviewed.task_id) >= MAX_REVIEW_ROUNDS:
        return f"changes still requested after {MAX_REVIEW_ROUNDS} repair rounds: {findings}"
    spec = repair_spec(reviewed.spec, node.task_id, verdict.findings)
    if spec.id not in st.graph.tasks:
        await create_tasks(io.ledger, [spec], parent_task_id=reviewed.task_id)
        st.graph.add_task(spec, parent_task_id=reviewed.task_id)
    repaired = f"waits for the repair of {reviewed.task_id}"
    await _wait_for(st, io, node.task_id, spec.id, repaired)
    return None
