"""What a session did, per task, read back from its durable events (for reports).

Owns: ``summarise(events)`` → ``SessionSummary`` (per task: status, attempts, start/end times
and duration, the real error, the worker's summary, turns summed over attempts, tokens and cost
from the usage ledger (every model call, ``air.events.usage_ledger``, IMPL-USAGE-1; summed per
task, per wave, per Main Agent turn and per session),
the agents and workspaces, merges, command runs and how each ended (``command_outcome``),
artifacts and evidence; an interrupted task is ``interrupted``, as its event says — resumable,
not "pending") and the waves as the
Scheduler ran them (IMPL-REL-3). The JUnit writer, the ``--json`` summary record and
``air report --html`` all read this one derivation, so they never disagree. Reads only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from air.events.usage_ledger import PURPOSES, USAGE_EVENT, UsageLedger, UsageSum

_TERMINAL = ("completed", "failed", "blocked", "cancelled", "interrupted")
REPORT_TYPES = (
    "session.created",
    "user.message.created",
    "task.created",
    "task.started",
    *(f"task.{t}" for t in _TERMINAL),
    "workspace.created",
    "workspace.merge.completed",
    "workspace.merge.conflicted",
    "command.started",
    "command.completed",
    "command.failed",
    "artifact.created",
    "evidence.created",
    USAGE_EVENT,
)
"""Every event type ``summarise`` reads: a report reads these by type (an index), not the log."""


class LoggedEvent(NamedTuple):
    """What ``summarise`` reads of one stored event: no model built, the payload as stored."""

    id: str
    type: str
    timestamp: str
    session_id: str
    payload: dict[str, Any]


def read_report_events(conn: Any, session_id: str) -> list[LoggedEvent]:
    """The session's events of ``REPORT_TYPES``, oldest first, read as rows through the type
    index (``conn``: a sqlite3 connection to the session database); the same payloads a
    ``RuntimeEvent`` read back holds (``record_to_event`` decodes the same JSON), without a
    model per event (IMPL-READ-6)."""
    marks = ", ".join("?" for _ in REPORT_TYPES)
    cursor = conn.execute(
        "SELECT id, type, timestamp, session_id, payload_json FROM events "
        f"WHERE session_id = ? AND type IN ({marks}) ORDER BY seq",
        (session_id, *REPORT_TYPES),
    )
    loads = json.loads
    return [LoggedEvent(i, t, at, sid, loads(body)) for i, t, at, sid, body in cursor]


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


@dataclass
class Attempt:
    """One run of a task by one worker."""

    index: int
    agent_id: str | None
    workspace_id: str | None
    started_at: str
    wave: int
    ended_at: str | None = None
    outcome: str = "running"


@dataclass
class TaskSummary:
    task_id: str
    title: str
    status: str = "pending"
    attempts: list[Attempt] = field(default_factory=list)
    started_at: str | None = None
    ended_at: str | None = None
    error_kind: str | None = None
    error_message: str | None = None
    error_detail: str | None = None
    reason: str | None = None
    summary: str | None = None
    changed_files: list[str] = field(default_factory=list)
    tokens: int = 0
    turns: int = 0
    cost_usd: float | None = 0.0
    """``None`` when a call's model has no known price."""
    merges: list[dict[str, Any]] = field(default_factory=list)
    commands: list[dict[str, Any]] = field(default_factory=list)
    artifacts: list[dict[str, Any]] = field(default_factory=list)
    evidence: list[dict[str, Any]] = field(default_factory=list)

    @property
    def duration_s(self) -> float:
        """Wall time from the first start to the last end (0 when it never ran)."""
        if self.started_at is None or self.ended_at is None:
            return 0.0
        return max(0.0, (_time(self.ended_at) - _time(self.started_at)).total_seconds())


@dataclass
class SessionSummary:
    session_id: str | None
    started_at: str | None
    ended_at: str | None
    tasks: dict[str, TaskSummary]
    waves: int
    ledger: UsageLedger = field(default_factory=UsageLedger, compare=False)
    """Every model call of the session: tasks, Main Agent, designer, compaction (compared
    through ``usage()``: the sums are identity-compared records, IMPL-BOOT-14)."""
    by_wave: dict[int, UsageSum] = field(default_factory=dict, compare=False)
    """The calls of tasks per wave (the wave of the attempt that made them)."""
    by_turn: dict[str, UsageSum] = field(default_factory=dict, compare=False)
    """The Main Agent's calls per turn: keyed by the person's message that started it."""

    def counts(self) -> dict[str, int]:
        counts = {"tasks": len(self.tasks)}
        for status in ("completed", "failed", "blocked", "cancelled", "interrupted", "pending"):
            counts[status] = sum(1 for t in self.tasks.values() if t.status == status)
        return counts

    def usage(self) -> dict[str, Any]:
        """The session's usage (the ledger's total), with its parts per purpose; ``cost_usd``
        is ``None`` when a model's price is unknown."""
        total = self.ledger.total
        return {
            **_sum_record(total),
            "turns": sum(t.turns for t in self.tasks.values()),
            "by_purpose": {
                p: _sum_record(self.ledger.by_purpose[p])
                for p in PURPOSES
                if p in self.ledger.by_purpose
            },
            "by_wave": {str(w): _sum_record(s) for w, s in sorted(self.by_wave.items())},
            "by_turn": {m: _sum_record(s) for m, s in self.by_turn.items()},
        }

    @property
    def duration_s(self) -> float:
        if self.started_at is None or self.ended_at is None:
            return 0.0
        return max(0.0, (_time(self.ended_at) - _time(self.started_at)).total_seconds())


def summarise(events: list[Any]) -> SessionSummary:
    """Fold a session's events (``RuntimeEvent``s, oldest first) into a SessionSummary.

    Waves: a wave is a run of ``task.started`` events with no task ending in between (the
    Scheduler starts a wave's tasks together and merges them before the next wave).
    """
    tasks: dict[str, TaskSummary] = {}
    by_agent: dict[str, str] = {}
    by_workspace: dict[str, str] = {}
    by_command: dict[str, dict[str, Any]] = {}
    wave = 0
    ended_since_start = True
    session_id = None
    first = last = None
    ledger = UsageLedger()
    by_wave: dict[int, UsageSum] = {}
    by_turn: dict[str, UsageSum] = {}
    turn: str | None = None
    before_ledger: list[dict[str, Any]] = []
    for event in events:
        payload: dict[str, Any] = event.payload
        kind: str = event.type
        session_id = session_id or getattr(event, "session_id", None)
        first = first or event.timestamp
        last = event.timestamp
        if kind == "user.message.created" and not payload.get("task_id"):
            turn = str(payload.get("message_id"))
            continue
        if ledger.feed(event):
            owner = tasks.get(str(payload.get("task_id")))
            if owner is not None and owner.attempts:
                by_wave.setdefault(owner.attempts[-1].wave, UsageSum()).add(payload)
            elif payload.get("purpose") == "main_agent" and turn is not None:
                by_turn.setdefault(turn, UsageSum()).add(payload)
            continue
        if kind == "task.created":
            spec = payload["task_spec"]
            tasks[spec["id"]] = TaskSummary(task_id=spec["id"], title=spec.get("title", ""))
            continue
        task = tasks.get(str(payload.get("task_id")))
        if kind == "task.started" and task is not None:
            if ended_since_start:
                wave += 1
                ended_since_start = False
            attempt = Attempt(
                index=int(payload.get("attempt_index") or len(task.attempts) + 1),
                agent_id=payload.get("agent_id"),
                workspace_id=payload.get("workspace_id"),
                started_at=event.timestamp,
                wave=wave,
            )
            task.attempts.append(attempt)
            task.status = "running"
            task.started_at = task.started_at or event.timestamp
            if attempt.agent_id:
                by_agent[attempt.agent_id] = task.task_id
            if attempt.workspace_id:
                by_workspace[attempt.workspace_id] = task.task_id
        elif kind.startswith("task.") and kind.split(".", 1)[1] in _TERMINAL and task is not None:
            ended_since_start = True
            _end(task, kind.split(".", 1)[1], event.timestamp, payload)
            usage = (payload.get("worker_result") or {}).get("usage")
            if usage:
                before_ledger.append({**usage, "task_id": task.task_id, "purpose": "task"})
        elif kind == "workspace.created" and payload.get("task_id"):
            by_workspace[payload["workspace_id"]] = payload["task_id"]
        elif kind.startswith("workspace.merge.") and kind != "workspace.merge.started":
            owner = tasks.get(by_workspace.get(str(payload.get("workspace_id")), ""))
            if owner is not None:
                owner.merges.append(
                    {"at": event.timestamp, "outcome": kind.rsplit(".", 1)[1], **payload}
                )
        elif kind == "command.started":
            owner = tasks.get(str(payload.get("task_id")))
            record: dict[str, Any] = {
                "at": event.timestamp,
                "command": payload.get("command"),
                **payload,
            }
            by_command[str(payload.get("command_run_id"))] = record
            if owner is not None:
                owner.commands.append(record)
        elif kind in ("command.completed", "command.failed"):
            done = by_command.get(str(payload.get("command_run_id")))
            if done is not None:
                error = payload.get("error") or {}
                done.update(
                    ended="cancelled"
                    if payload.get("cancelled")
                    else "completed"
                    if kind == "command.completed"
                    else "failed",
                    exit_code=payload.get("exit_code"),
                    duration_ms=payload.get("duration_ms"),
                    error_message=error.get("message"),
                    stdout_artifact_id=payload.get("stdout_artifact_id"),
                    stderr_artifact_id=payload.get("stderr_artifact_id"),
                )
        elif kind == "artifact.created":
            owner = tasks.get(str(payload.get("task_id")))
            if owner is None and payload.get("agent_id"):
                owner = tasks.get(by_agent.get(payload["agent_id"], ""))
            if owner is not None:
                owner.artifacts.append(payload)
        elif kind == "evidence.created":
            owner = tasks.get(str(payload.get("entity_id")))
            if owner is not None:
                owner.evidence.append(payload)
    if not ledger.seen:
        # a session recorded before the usage ledger (IMPL-USAGE-1) has only its workers' own
        # totals, one per attempt: they are what it spent, never 0
        for usage in before_ledger:
            ledger.add(usage)
    for task in tasks.values():
        spent = ledger.task(task.task_id)
        task.tokens, task.cost_usd = spent.tokens, spent.cost_usd
    return SessionSummary(
        session_id=session_id,
        started_at=first,
        ended_at=last,
        tasks=tasks,
        waves=wave,
        ledger=ledger,
        by_wave=by_wave,
        by_turn=by_turn,
    )


def _sum_record(s: UsageSum) -> dict[str, Any]:
    return {
        "calls": s.calls,
        "tokens": s.tokens,
        "input_tokens": s.input_tokens,
        "output_tokens": s.output_tokens,
        "cache_read_tokens": s.cache_read_tokens,
        "cache_write_tokens": s.cache_write_tokens,
        "cost_usd": None if s.cost_usd is None else round(s.cost_usd, 6),
    }


def command_outcome(command: dict[str, Any]) -> str:
    """What became of one command run, in words: its exit code and time, or how it ended
    without one (cancelled, failed to run, or no end recorded: its task was interrupted)."""
    ended = command.get("ended")
    if ended is None:
        return "no end recorded (its task was interrupted while it ran)"
    if ended == "cancelled":
        return "cancelled"
    code, ms = command.get("exit_code"), command.get("duration_ms")
    if code is None:
        return f"failed to run: {command.get('error_message') or 'no exit code'}"
    return f"exit {code} in {ms} ms" if ms is not None else f"exit {code}"


def _end(task: TaskSummary, outcome: str, at: str, payload: dict[str, Any]) -> None:
    task.status = outcome
    task.ended_at = at
    if task.attempts and task.attempts[-1].ended_at is None:
        task.attempts[-1].ended_at = at
        task.attempts[-1].outcome = outcome
    result = payload.get("worker_result") or {}
    usage = result.get("usage") or {}
    task.turns += int(usage.get("turns") or 0)
    if result.get("summary"):
        task.summary = str(result["summary"])
    if result.get("changed_files"):
        task.changed_files = list(result["changed_files"])
    error = payload.get("error") or result.get("error")
    if outcome == "completed":
        task.error_kind = task.error_message = task.error_detail = None
    elif error:
        task.error_kind = str(error.get("kind") or "task_failed")
        task.error_message = str(error.get("message") or "")
        task.error_detail = error.get("detail")
    task.reason = payload.get("reason") or task.reason
