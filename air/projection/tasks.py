"""The task part of the console's projection, read from the one fold (``air.events.fold``).

Owns ``TaskView``: task status, attempts, agent, dependencies, worker result and errors come
from the fold's ``SessionState`` (the same transition rules as the Scheduler and the SQL
projection); this module adds only what a screen needs on top: when the current attempt
started and ended (event timestamps), turns summed over finished attempts from
``worker_result.usage`` plus the running attempt's last heartbeat, tokens and cost from the
usage ledger (``air.events.usage_ledger``: every model call of the task, live, IMPL-USAGE-1),
the last progress line, the wave (dependency depth) and what git ignores that the task left
unmerged (``workspace.merge.completed``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from air.contracts.event import RuntimeEvent
from air.contracts.ui import TaskProjection
from air.events.fold_state import SessionState, TaskFact
from air.events.transitions import TASK_ENDS
from air.events.usage_ledger import UsageLedger

__all__ = ["TaskView"]

_ENDS = frozenset({*TASK_ENDS, "context.compaction.completed", "context.compaction.failed"})
_STARTS = frozenset({"task.started", "context.compaction.started"})


@dataclass
class _Extra:
    started_at: str | None = None
    ended_at: str | None = None
    done_turns: int = 0
    live_turns: int = 0
    progress: str | None = None
    left_out: list[str] = field(default_factory=list)
    left_out_count: int = 0


class TaskView:
    """Screen-side extras per task, kept next to the fold's state."""

    def __init__(self) -> None:
        self._extra: dict[str, _Extra] = {}

    def dump(self) -> dict[str, dict[str, Any]]:
        """The extras as plain JSON values (``load`` takes them back; the view's snapshot)."""
        return {task_id: asdict(extra) for task_id, extra in self._extra.items()}

    def load(self, data: dict[str, dict[str, Any]]) -> None:
        """Replace the extras with what ``dump`` gave."""
        self._extra = {task_id: _Extra(**extra) for task_id, extra in data.items()}

    def after_fold(self, event: RuntimeEvent, state: SessionState) -> None:
        """Record the timing and usage of a task event the fold has just accepted."""
        task_id = event.payload.get("task_id")
        if event.type == "task.created" or event.type == "context.compaction.requested":
            spec = event.payload.get("task_spec") or {}
            task_id = spec.get("id") if isinstance(spec, dict) else None
        if not isinstance(task_id, str) or task_id not in state.tasks:
            return
        extra = self._extra.setdefault(task_id, _Extra())
        if event.type in _STARTS:
            extra.started_at = event.timestamp
            extra.ended_at = None
            extra.live_turns = 0
        elif event.type in _ENDS:
            extra.ended_at = event.timestamp
            extra.progress = None
            result = state.tasks[task_id].worker_result
            usage = (result.usage if result is not None else None) or {}
            extra.done_turns += int(usage.get("turns") or extra.live_turns)
            extra.live_turns = 0

    def merged(self, payload: Mapping[str, Any], state: SessionState) -> bool:
        """A task's workspace merged (``workspace.merge.completed``): keep what git ignores
        that the task left and nothing merged. False when it left nothing such."""
        count = int(payload.get("left_out_count") or 0)
        workspace = state.workspaces.get(str(payload.get("workspace_id")))
        if not count or workspace is None or workspace.task_id not in state.tasks:
            return False
        extra = self._extra.setdefault(str(workspace.task_id), _Extra())
        extra.left_out, extra.left_out_count = list(payload.get("left_out") or []), count
        return True

    def progress(self, task_id: str, message: str, state: SessionState) -> bool:
        if task_id not in state.tasks:
            return False
        self._extra.setdefault(task_id, _Extra()).progress = message
        return True

    def live_usage(self, task_id: str, turns: int, state: SessionState) -> bool:
        """A running attempt's heartbeat turn counter (its tokens are the ledger's)."""
        task = state.tasks.get(task_id)
        if task is None or task.status.value != "running":
            return False
        extra = self._extra.setdefault(task_id, _Extra())
        extra.live_turns = turns
        return True

    def projections(self, state: SessionState, usage: UsageLedger) -> list[TaskProjection]:
        """Every task in creation order, with its wave and what its model calls used."""
        tasks = sorted(state.tasks.values(), key=lambda t: t.order)
        memo: dict[str, int] = {}

        def depth(task_id: str, seen: frozenset[str]) -> int:
            if task_id in memo:
                return memo[task_id]
            if task_id not in state.tasks or task_id in seen:
                return -1
            deps = [e.depends_on_task_id for e in state.edges_of(task_id)]
            memo[task_id] = 1 + max((depth(d, seen | {task_id}) for d in deps), default=-1)
            return memo[task_id]

        return [self._row(t, max(0, depth(t.task_id, frozenset())), state, usage) for t in tasks]

    def _row(
        self, task: TaskFact, wave: int, state: SessionState, usage: UsageLedger
    ) -> TaskProjection:
        extra = self._extra.get(task.task_id) or _Extra()
        spent = usage.task(task.task_id)
        result = task.worker_result
        error = task.last_error.message if task.last_error is not None else task.blocked_reason
        return TaskProjection(
            task_id=task.task_id,
            title=task.spec.title,
            type=task.spec.type.value,
            status=task.status.value,
            agent_id=task.agent_id,
            wave=wave,
            depends_on=[e.depends_on_task_id for e in state.edges_of(task.task_id)],
            parent_task_id=task.parent_task_id,
            attempt=task.attempt_count,
            started_at=extra.started_at,
            ended_at=extra.ended_at,
            turns=extra.done_turns + extra.live_turns,
            tokens=spent.tokens,
            cost_usd=spent.cost_usd,
            progress=extra.progress,
            summary=(result.summary or None) if result is not None else None,
            error=error,
            changed_files=list(result.changed_files) if result is not None else [],
            left_out=extra.left_out,
            left_out_count=extra.left_out_count,
        )
