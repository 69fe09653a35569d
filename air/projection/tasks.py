"""The task part of the console's projection: status, attempts, elapsed, usage, waves.

Owns ``TaskFold``: it folds ``task.*`` (and compaction task) events into per-task records and
hands out ``TaskProjection`` rows with their wave (dependency depth). Status changes follow
the same event → status map as the Scheduler's fold (``air.nursery.ledger``); an event for an
unknown task is ignored. Usage is summed over finished attempts from
``worker_result.usage`` (tokens, turns, cost_usd) plus the running attempt's last heartbeat.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from air.contracts.event import RuntimeEvent
from air.contracts.ui import TaskProjection

__all__ = ["STATUS_BY_EVENT", "TaskFold"]

STATUS_BY_EVENT = {
    "task.started": "running",
    "task.completed": "completed",
    "task.failed": "failed",
    "task.blocked": "blocked",
    "task.cancelled": "cancelled",
    "task.interrupted": "interrupted",
    "context.compaction.started": "running",
    "context.compaction.completed": "completed",
}
_ENDED = frozenset({"completed", "failed", "blocked", "cancelled", "interrupted"})


@dataclass
class _Task:
    task_id: str
    title: str
    type: str
    order: int
    status: str = "pending"
    depends_on: list[str] = field(default_factory=list)
    parent_task_id: str | None = None
    agent_id: str | None = None
    attempt: int = 0
    started_at: str | None = None
    ended_at: str | None = None
    done_turns: int = 0
    done_tokens: int = 0
    cost_usd: float = 0.0
    live_turns: int = 0
    live_tokens: int = 0
    progress: str | None = None
    summary: str | None = None
    error: str | None = None
    changed_files: list[str] = field(default_factory=list)


class TaskFold:
    """Per-task records kept incrementally; ``projections()`` renders them."""

    def __init__(self) -> None:
        self._tasks: dict[str, _Task] = {}

    def apply(self, event: RuntimeEvent, payload: dict[str, Any] | None = None) -> bool:
        """Fold one event in (``payload``: its normalised payload); True when a task changed."""
        p = event.payload if payload is None else payload
        kind = event.type
        if kind == "task.created" or (kind == "context.compaction.requested" and p.get("accepted")):
            return self._created(p)
        if kind == "task.dependency.added":
            task = self._tasks.get(str(p.get("task_id")))
            dep = str(p.get("depends_on_task_id"))
            if task is None or dep in task.depends_on:
                return False
            task.depends_on.append(dep)
            return True
        if kind == "task.progress":
            task = self._tasks.get(str(p.get("task_id")))
            if task is None:
                return False
            task.progress = str(p.get("message") or "")
            return True
        if kind == "context.compaction.failed":
            failed = "blocked" if p.get("blocked") else "failed"
            return self._status(event, str(p.get("task_id")), failed, p)
        status = STATUS_BY_EVENT.get(kind)
        if status is None:
            return False
        return self._status(event, str(p.get("task_id")), status, p)

    def _created(self, p: dict[str, Any]) -> bool:
        spec = p.get("task_spec")
        if not isinstance(spec, dict) or "id" not in spec:
            return False
        tid = str(spec["id"])
        if tid in self._tasks:
            return False
        deps = [str(d.get("depends_on_task_id")) for d in p.get("dependencies") or []]
        if not deps:
            deps = [str(d.get("depends_on_task_id")) for d in spec.get("dependencies") or []]
        self._tasks[tid] = _Task(
            task_id=tid,
            title=str(spec.get("title") or tid),
            type=str(spec.get("type") or "execute"),
            order=len(self._tasks),
            depends_on=deps,
            parent_task_id=p.get("parent_task_id"),
        )
        return True

    def _status(self, event: RuntimeEvent, task_id: str, status: str, p: dict[str, Any]) -> bool:
        task = self._tasks.get(task_id)
        if task is None:
            return False
        task.status = status
        if status == "running":
            task.attempt = int(p.get("attempt_index") or task.attempt + 1)
            task.agent_id = p.get("agent_id") or task.agent_id
            task.started_at = event.timestamp
            task.ended_at = None
            task.error = None
            task.live_turns = task.live_tokens = 0
            return True
        if status in _ENDED:
            task.ended_at = event.timestamp
            task.progress = None
        result = p.get("worker_result")
        if isinstance(result, dict):
            usage = result.get("usage") or {}
            task.done_turns += int(usage.get("turns") or task.live_turns)
            task.done_tokens += int(usage.get("tokens") or task.live_tokens)
            task.cost_usd += float(usage.get("cost_usd") or 0.0)
            task.summary = str(result.get("summary") or "") or task.summary
            task.changed_files = [str(f) for f in result.get("changed_files") or []]
        else:
            task.done_turns += task.live_turns
            task.done_tokens += task.live_tokens
        task.live_turns = task.live_tokens = 0
        error = p.get("error")
        if isinstance(error, dict):
            task.error = str(error.get("message") or error.get("kind"))
        elif status in ("cancelled", "interrupted", "blocked") and p.get("reason"):
            task.error = str(p["reason"])
        return True

    def live_usage(self, task_id: str, turns: int, tokens: int) -> None:
        """Record a running attempt's heartbeat counters."""
        task = self._tasks.get(task_id)
        if task is not None and task.status == "running":
            task.live_turns = turns
            task.live_tokens = tokens

    def _depth(self, task_id: str, memo: dict[str, int], seen: frozenset[str]) -> int:
        if task_id in memo:
            return memo[task_id]
        task = self._tasks.get(task_id)
        if task is None or task_id in seen:
            return -1
        inner = seen | {task_id}
        depth = 1 + max((self._depth(d, memo, inner) for d in task.depends_on), default=-1)
        memo[task_id] = depth
        return depth

    def projections(self) -> list[TaskProjection]:
        """Every task in creation order, with its wave."""
        memo: dict[str, int] = {}
        rows = []
        for task in sorted(self._tasks.values(), key=lambda t: t.order):
            rows.append(
                TaskProjection(
                    task_id=task.task_id,
                    title=task.title,
                    type=task.type,
                    status=task.status,
                    agent_id=task.agent_id,
                    wave=max(0, self._depth(task.task_id, memo, frozenset())),
                    depends_on=list(task.depends_on),
                    parent_task_id=task.parent_task_id,
                    attempt=task.attempt,
                    started_at=task.started_at,
                    ended_at=task.ended_at,
                    turns=task.done_turns + task.live_turns,
                    tokens=task.done_tokens + task.live_tokens,
                    cost_usd=task.cost_usd,
                    progress=task.progress,
                    summary=task.summary,
                    error=task.error,
                    changed_files=list(task.changed_files),
                )
            )
        return rows
