"""The fold's steps for the task graph: tasks, their dependencies and attempts, compaction tasks.

Owns the steps of ``task.*``, ``task.dependency.added`` and ``context.compaction.*`` over
``SessionState`` (``TASK_STEPS``, which ``air.events.fold.apply`` dispatches to): a task's
status moves only along ``air.events.transitions.TASK_FROM``, its attempt ends with it, its
failures are counted for the RetryPlanner, and the scheduler tasks' per-status counts are kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from sys import intern
from typing import TYPE_CHECKING, Any

from immutables import Map

from air.contracts.error import AirError
from air.contracts.event import RuntimeEvent
from air.contracts.task import TaskSpec, TaskStatus
from air.events.fold_state import (
    AttemptFact,
    DependencyFact,
    FailureFact,
    FoldStep,
    SessionState,
    TaskFact,
    fold_error,
)
from air.events.packed import pack, pack_result, unpack_result
from air.events.transitions import TASK_FROM

if TYPE_CHECKING:
    from air.contracts.worker_result import WorkerResult
    from air.events.payloads.ends import (
        TaskBlockedPayload,
        TaskCancelledPayload,
        TaskCompletedPayload,
        TaskFailedPayload,
        TaskInterruptedPayload,
    )
    from air.events.payloads.knowledge import (
        CompactionCompletedPayload,
        CompactionFailedPayload,
        CompactionRequestedPayload,
        CompactionStartedPayload,
    )
    from air.events.payloads.start import (
        DependencyPayload,
        TaskCreatedPayload,
        TaskDependencyAddedPayload,
        TaskStartedPayload,
    )

__all__ = ["TASK_STEPS"]


def _task(state: SessionState, event: RuntimeEvent, task_id: str) -> TaskFact:
    task = state.tasks.get(task_id)
    if task is None:
        raise fold_error(event, f"task {task_id} does not exist")
    allowed = TASK_FROM.get(event.type)
    if allowed is not None and task.status.value not in allowed:
        raise fold_error(
            event, f"task {task_id} is {task.status.value}, expected one of {', '.join(allowed)}"
        )
    return task


def _put_task(state: SessionState, old: TaskFact | None, new: TaskFact) -> SessionState:
    counts = state.counts
    if not new.compaction:
        if old is not None:
            counts = counts.set(old.status.value, counts.get(old.status.value, 0) - 1)
        counts = counts.set(new.status.value, counts.get(new.status.value, 0) + 1)
    return state._replace(tasks=state.tasks.set(new.task_id, new), counts=counts)


def _packed_result(task: TaskFact, result: WorkerResult | None) -> str | None:
    """The text a task ended by its agent of record keeps of ``result`` (IMPL-RSS-1)."""
    return None if result is None else pack_result(result, task.task_id, task.agent_id)


def _run_by(task: TaskFact, agent_id: str | None) -> TaskFact:
    """``task`` with ``agent_id`` its agent of record: a result kept without its agent's id
    (``pack_result``) takes it back first, as the id it is read with changes."""
    text = task.result_text
    if agent_id != task.agent_id:
        result = unpack_result(text, task.task_id, task.agent_id)
        text = None if result is None else pack(result)
    return task._replace(agent_id=agent_id, result_text=text)


def _end_attempt(
    event: RuntimeEvent,
    task: TaskFact,
    attempt_index: int | None,
    status: str,
    error: AirError | None = None,
) -> tuple[AttemptFact, ...]:
    attempts = task.attempts
    if attempt_index is not None:
        pos = attempt_index - 1
        if not 0 <= pos < len(attempts):
            raise fold_error(
                event, f"attempt {attempt_index} of task {task.task_id} does not exist"
            )
    else:
        pos = len(attempts) - 1
    if pos < 0 or attempts[pos].status != "running":
        return attempts
    ended = attempts[pos]._replace(status=status, error=error)
    return (*attempts[:pos], ended, *attempts[pos + 1 :])


def _add_edge(
    state: SessionState, event: RuntimeEvent, edge: DependencyFact
) -> Map[str, tuple[DependencyFact, ...]]:
    edges = state.dependencies.get(edge.task_id, ())
    if any(e.depends_on_task_id == edge.depends_on_task_id for e in edges):
        raise fold_error(event, f"dependency {edge.task_id} -> {edge.depends_on_task_id} exists")
    return state.dependencies.set(edge.task_id, (*edges, edge))


def _dep(task_id: str, d: DependencyPayload) -> DependencyFact:
    return DependencyFact(
        task_id=task_id,
        depends_on_task_id=d.depends_on_task_id,
        dependency_type=d.dependency_type,
        reason=d.reason,
        source=d.source,
    )


def _new_task(
    state: SessionState,
    event: RuntimeEvent,
    spec: TaskSpec,
    deps: Sequence[DependencyPayload],
    *,
    compaction: bool = False,
    origin_message_id: str | None = None,
    parent_task_id: str | None = None,
) -> SessionState:
    if spec.id in state.tasks:
        raise fold_error(event, f"task {spec.id} already exists")
    task = TaskFact(
        task_id=intern(spec.id),  # one string for the key, the agents' facts and graph nodes
        spec_text=pack(spec),
        status=TaskStatus.PENDING,
        order=len(state.tasks),
        compaction=compaction,
        parent_task_id=parent_task_id,
        origin_message_id=origin_message_id,
    )
    state = _put_task(state, None, task)
    for d in deps:
        state = state._replace(dependencies=_add_edge(state, event, _dep(spec.id, d)))
    return state


def _task_created(state: SessionState, event: RuntimeEvent, x: TaskCreatedPayload) -> SessionState:
    from air.events.payloads.start import DependencyPayload  # loaded: x is one of its

    deps = x.dependencies or [DependencyPayload.from_spec(d) for d in x.task_spec.dependencies]
    return _new_task(
        state,
        event,
        x.task_spec,
        deps,
        origin_message_id=x.origin_message_id,
        parent_task_id=x.parent_task_id,
    )


def _dependency_added(
    state: SessionState, event: RuntimeEvent, x: TaskDependencyAddedPayload
) -> SessionState:
    for task_id in (x.task_id, x.depends_on_task_id):
        if task_id not in state.tasks:
            raise fold_error(event, f"dependency names unknown task {task_id}")
    return state._replace(dependencies=_add_edge(state, event, _dep(x.task_id, x)))


def _task_started(state: SessionState, event: RuntimeEvent, x: TaskStartedPayload) -> SessionState:
    task = _task(state, event, x.task_id)
    expected = len(task.attempts) + 1
    if x.attempt_index != expected:
        raise fold_error(
            event, f"attempt_index {x.attempt_index} for {x.task_id}, expected {expected}"
        )
    # the ids are interned: the agent's fact, its map key and the workspace's share them
    agent_id = intern(x.agent_id)
    workspace_id = None if x.workspace_id is None else intern(x.workspace_id)
    attempt = AttemptFact(
        attempt_index=x.attempt_index,
        agent_id=agent_id,
        agent_type=x.agent_type,
        workspace_id=workspace_id,
    )
    new = _run_by(task, agent_id)._replace(
        status=TaskStatus.RUNNING,
        workspace_id=workspace_id,
        attempts=(*task.attempts, attempt),
        blocked_reason=None,
        last_error=None,
    )
    return _put_task(state, task, new)


def _end_task(
    state: SessionState,
    event: RuntimeEvent,
    task_id: str,
    attempt_index: int | None,
    status: TaskStatus,
    error: AirError | None = None,
    **changes: Any,
) -> SessionState:
    """A task-ending event: the task takes ``status`` (and ``changes``), its attempt ends too."""
    task = _task(state, event, task_id)
    attempts = _end_attempt(event, task, attempt_index, status.value, error)
    new = task._replace(status=status, attempts=attempts, **changes)
    return _put_task(state, task, new)


def _task_completed(
    state: SessionState, event: RuntimeEvent, x: TaskCompletedPayload
) -> SessionState:
    task = _task(state, event, x.task_id)
    return _end_task(
        state,
        event,
        x.task_id,
        x.attempt_index,
        TaskStatus.COMPLETED,
        result_text=_packed_result(task, x.worker_result),
    )


def _task_blocked(state: SessionState, event: RuntimeEvent, x: TaskBlockedPayload) -> SessionState:
    task = _task(state, event, x.task_id)
    return _end_task(
        state,
        event,
        x.task_id,
        x.attempt_index,
        TaskStatus.BLOCKED,
        blocked_reason=x.reason,
        result_text=_packed_result(task, x.worker_result),
    )


def _task_failed(state: SessionState, event: RuntimeEvent, x: TaskFailedPayload) -> SessionState:
    task = _task(state, event, x.task_id)
    failure = FailureFact(
        attempt_index=x.attempt_index or len(task.attempts),
        failure_signature=x.error.semantic_signature,
        failure_kind=x.error.kind.value,
    )
    return _end_task(
        state,
        event,
        x.task_id,
        x.attempt_index,
        TaskStatus.FAILED,
        x.error,
        last_error=x.error,
        result_text=_packed_result(task, x.worker_result),
        failures=(*task.failures, failure),
    )


def _task_cancelled(
    state: SessionState, event: RuntimeEvent, x: TaskCancelledPayload
) -> SessionState:
    return _end_task(
        state, event, x.task_id, x.attempt_index, TaskStatus.CANCELLED, blocked_reason=x.reason
    )


def _task_interrupted(
    state: SessionState, event: RuntimeEvent, x: TaskInterruptedPayload
) -> SessionState:
    return _end_task(state, event, x.task_id, x.attempt_index, TaskStatus.INTERRUPTED)


def _compaction_requested(
    state: SessionState, event: RuntimeEvent, x: CompactionRequestedPayload
) -> SessionState:
    if not x.accepted or x.task_spec is None:
        return state
    if x.task_spec.type.value != "compact":
        raise fold_error(
            event, f"compaction task {x.task_spec.id} has type {x.task_spec.type.value}"
        )
    return _new_task(state, event, x.task_spec, [], compaction=True)


def _compaction_started(
    state: SessionState, event: RuntimeEvent, x: CompactionStartedPayload
) -> SessionState:
    task = _task(state, event, x.task_id)
    new = _run_by(task, x.agent_id)._replace(status=TaskStatus.RUNNING)
    return _put_task(state, task, new)


def _compaction_completed(
    state: SessionState, event: RuntimeEvent, x: CompactionCompletedPayload
) -> SessionState:
    task = _task(state, event, x.task_id)
    new = task._replace(status=TaskStatus.COMPLETED, summary_id=x.summary_id)
    return _put_task(state, task, new)


def _compaction_failed(
    state: SessionState, event: RuntimeEvent, x: CompactionFailedPayload
) -> SessionState:
    task = _task(state, event, x.task_id)
    status = TaskStatus.BLOCKED if x.blocked else TaskStatus.FAILED
    return _put_task(state, task, task._replace(status=status, last_error=x.error))


TASK_STEPS: dict[str, FoldStep] = {
    "task.created": _task_created,
    "task.dependency.added": _dependency_added,
    "task.started": _task_started,
    "task.completed": _task_completed,
    "task.blocked": _task_blocked,
    "task.failed": _task_failed,
    "task.cancelled": _task_cancelled,
    "task.interrupted": _task_interrupted,
    "context.compaction.requested": _compaction_requested,
    "context.compaction.started": _compaction_started,
    "context.compaction.completed": _compaction_completed,
    "context.compaction.failed": _compaction_failed,
}
"""The task graph's step per event type."""
