"""What a session did, per task, read back from its durable events (for reports).

Owns: ``summarise(events)`` → ``SessionSummary`` (per task: status, attempts, start/end times
and duration, the real error, the worker's summary, turns summed over attempts, tokens and cost
from the usage ledger (every model call, ``air.events.usage_ledger``, IMPL-USAGE-1; summed per
task, per wave, per Main Agent turn and per session),
the agents and workspaces, merges, command runs and how each ended (``command_outcome``),
artifacts and evidence; an interrupted task is ``interrupted``, as its event says — resumable,
not "pending") and the waves as the
Scheduler ran them (IMPL-REL-3). ``summarise`` is one ``ReportFold`` fed every event: kept
incrementally, whole (``keep=None``) or windowed (``keep``: a long task's latest commands, diffs
and evidence with counts of all, IMPL-READ-8; stored with its position by
``air.cli.report_snapshot``). The JUnit writer, the ``--json`` summary record and ``air report
--html`` all read this one derivation, so they never disagree. Reads only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from air.events.usage_ledger import PURPOSES, USAGE_EVENT, UsageLedger, UsageSum
from air.store.stored_payloads import stored_payload

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
_WANTED = frozenset(REPORT_TYPES)


class LoggedEvent(NamedTuple):
    """What ``summarise`` reads of one stored event: no model built, the payload as stored."""

    id: str
    type: str
    timestamp: str
    session_id: str
    payload: dict[str, Any]
    seq: int = 0


def read_report_events(conn: Any, session_id: str, after: int = 0) -> list[LoggedEvent]:
    """The session's events of ``REPORT_TYPES`` stored after ``after`` (a ``seq``), oldest
    first, read as rows (``conn``: a sqlite3 connection to the session database): the whole
    log through the type index, a tail by ``seq``; the same payloads a ``RuntimeEvent`` read
    back holds (``record_to_event`` decodes the same JSON), without a model per event
    (IMPL-READ-6)."""
    loads = stored_payload
    if after > 0:  # a tail: by seq, the other types' payloads never decoded
        cursor = conn.execute(
            "SELECT id, type, timestamp, session_id, payload_json, seq FROM events "
            "WHERE seq > ? AND session_id = ? ORDER BY seq",
            (after, session_id),
        )
        wanted = _WANTED
        return [
            LoggedEvent(i, t, at, sid, loads(body, seq), seq)
            for i, t, at, sid, body, seq in cursor
            if t in wanted
        ]
    marks = ", ".join("?" for _ in REPORT_TYPES)
    cursor = conn.execute(
        "SELECT id, type, timestamp, session_id, payload_json, seq FROM events "
        f"WHERE session_id = ? AND type IN ({marks}) ORDER BY seq",
        (session_id, *REPORT_TYPES),
    )
    return [
        LoggedEvent(i, t, at, sid, loads(body, seq), seq) for i, t, at, sid, body, seq in cursor
    ]


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
    """Every command run of the task, oldest first (a report's fold: its last ``keep``)."""
    unsuccessful: list[dict[str, Any]] = field(default_factory=list)
    """A report's fold: the last commands that did not succeed, by their end."""
    command_count: int = 0
    command_counts: dict[str, int] = field(default_factory=dict)
    """Commands by ``command_class``."""
    artifacts: list[dict[str, Any]] = field(default_factory=list)
    """Every artifact of the task (a report's fold: its last ``keep`` diffs)."""
    diff_count: int = 0
    evidence: list[dict[str, Any]] = field(default_factory=list)
    """Every evidence item of the task (a report's fold: its last ``keep``)."""
    evidence_count: int = 0

    def left_out(self) -> str:
        """What its merge left out because git ignores it (``left_out_text``), or ""."""
        from air.contracts.display import left_out_text

        for merge in self.merges:
            if merge.get("left_out_count"):
                return left_out_text(merge.get("left_out") or [], int(merge["left_out_count"]))
        return ""

    def shown_commands(self) -> list[dict[str, Any]]:
        """The commands a page lists: those kept, once each, in the order they started."""
        seen: dict[int, dict[str, Any]] = {}
        for command in (*self.commands, *self.unsuccessful):
            seen.setdefault(int(command["n"]), command)
        return [seen[n] for n in sorted(seen)]

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
    earlier_turns: UsageSum = field(default_factory=UsageSum, compare=False)
    """A report's fold: the calls of the turns before those in ``by_turn``."""
    earlier_turn_count: int = 0

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
            **(
                {"earlier_turns": _sum_record(self.earlier_turns)}
                if self.earlier_turn_count
                else {}
            ),
        }

    @property
    def duration_s(self) -> float:
        if self.started_at is None or self.ended_at is None:
            return 0.0
        return max(0.0, (_time(self.ended_at) - _time(self.started_at)).total_seconds())


def summarise(events: Iterable[Any], *, keep: int | None = None) -> SessionSummary:
    """Fold a session's events (``RuntimeEvent``s or ``LoggedEvent``s, oldest first) into a
    SessionSummary (``ReportFold``; ``keep``: its windows, None keeps every list whole).

    Waves: a wave is a run of ``task.started`` events with no task ending in between (the
    Scheduler starts a wave's tasks together and merges them before the next wave).
    """
    fold = ReportFold(keep=keep)
    for event in events:
        fold.feed(event)
    return fold.summary()


class ReportFold:
    """The report's fold, kept incrementally: ``feed`` one event at a time, ``summary`` at any
    point. With ``keep`` (the page's fold, IMPL-READ-8) a task keeps its last ``keep`` commands,
    its last ``keep // 2`` that did not succeed, its last ``keep`` diffs and evidence, with
    counts of all of them; the Main Agent's last ``2 * keep`` turns, the earlier summed: its
    size follows the tasks, never the events. ``keep=None`` keeps every list whole (JUnit,
    ``--json``, one task's page). Its state is plain data (``air.cli.report_snapshot`` stores
    it with its event position)."""

    def __init__(self, *, keep: int | None = None) -> None:
        self.keep = keep
        self.tasks: dict[str, TaskSummary] = {}
        self.by_agent: dict[str, str] = {}
        self.by_workspace: dict[str, str] = {}
        self.by_command: dict[str, dict[str, Any]] = {}
        """The commands of a task with no end yet: an end finds them here."""
        self.wave = 0
        self.ended_since_start = True
        self.session_id: str | None = None
        self.first: str | None = None
        self.last: str | None = None
        self.ledger = UsageLedger()
        self.ledger_used = False
        """A ``model.usage.recorded`` was fed (``ledger.seen`` is not stored)."""
        self.by_wave: dict[int, UsageSum] = {}
        self.by_turn: dict[str, UsageSum] = {}
        self.earlier_turns = UsageSum()
        self.earlier_turn_count = 0
        self.turn: str | None = None
        self.before_ledger: list[dict[str, Any]] = []

    def feed(self, event: Any) -> None:
        """Fold one event (any type; those not in ``REPORT_TYPES`` only move the span)."""
        payload: dict[str, Any] = event.payload
        kind: str = event.type
        self.session_id = self.session_id or getattr(event, "session_id", None)
        self.first = self.first or event.timestamp
        self.last = event.timestamp
        if kind == "user.message.created" and not payload.get("task_id"):
            self.turn = str(payload.get("message_id"))
            return
        if self.ledger.feed(event):
            self.ledger_used = True
            self._usage(payload)
            return
        if kind == "task.created":
            spec = payload["task_spec"]
            self.tasks[spec["id"]] = TaskSummary(task_id=spec["id"], title=spec.get("title", ""))
            return
        task = self.tasks.get(str(payload.get("task_id")))
        if kind == "task.started" and task is not None:
            self._started(task, payload, event.timestamp)
        elif kind.startswith("task.") and kind.split(".", 1)[1] in _TERMINAL and task is not None:
            self.ended_since_start = True
            _end(task, kind.split(".", 1)[1], event.timestamp, payload)
            usage = (payload.get("worker_result") or {}).get("usage")
            if usage:
                self.before_ledger.append({**usage, "task_id": task.task_id, "purpose": "task"})
        elif kind == "workspace.created" and payload.get("task_id"):
            self.by_workspace[payload["workspace_id"]] = payload["task_id"]
        elif kind.startswith("workspace.merge.") and kind != "workspace.merge.started":
            owner = self.tasks.get(self.by_workspace.get(str(payload.get("workspace_id")), ""))
            if owner is not None:
                owner.merges.append(
                    {"at": event.timestamp, "outcome": kind.rsplit(".", 1)[1], **payload}
                )
        elif kind == "command.started":
            self._command_started(payload, event.timestamp)
        elif kind in ("command.completed", "command.failed"):
            self._command_ended(kind, payload)
        elif kind == "artifact.created":
            owner = self.tasks.get(str(payload.get("task_id")))
            if owner is None and payload.get("agent_id"):
                owner = self.tasks.get(self.by_agent.get(payload["agent_id"], ""))
            if owner is not None:
                owner.diff_count += payload.get("type") == "diff"
                if self.keep is None or payload.get("type") == "diff":
                    _keep_last(owner.artifacts, payload, self.keep)
        elif kind == "evidence.created":
            owner = self.tasks.get(str(payload.get("entity_id")))
            if owner is not None:
                owner.evidence_count += 1
                _keep_last(owner.evidence, payload, self.keep)

    def _usage(self, payload: dict[str, Any]) -> None:
        owner = self.tasks.get(str(payload.get("task_id")))
        if owner is not None and owner.attempts:
            self.by_wave.setdefault(owner.attempts[-1].wave, UsageSum()).add(payload)
        elif payload.get("purpose") == "main_agent" and self.turn is not None:
            self.by_turn.setdefault(self.turn, UsageSum()).add(payload)
            while self.keep is not None and len(self.by_turn) > 2 * self.keep:
                oldest = next(iter(self.by_turn))
                _merge_sum(self.earlier_turns, self.by_turn.pop(oldest))
                self.earlier_turn_count += 1

    def _started(self, task: TaskSummary, payload: dict[str, Any], at: str) -> None:
        if self.ended_since_start:
            self.wave += 1
            self.ended_since_start = False
        attempt = Attempt(
            index=int(payload.get("attempt_index") or len(task.attempts) + 1),
            agent_id=payload.get("agent_id"),
            workspace_id=payload.get("workspace_id"),
            started_at=at,
            wave=self.wave,
        )
        task.attempts.append(attempt)
        task.status = "running"
        task.started_at = task.started_at or at
        if attempt.agent_id:
            self.by_agent[attempt.agent_id] = task.task_id
        if attempt.workspace_id:
            self.by_workspace[attempt.workspace_id] = task.task_id

    def _command_started(self, payload: dict[str, Any], at: str) -> None:
        owner = self.tasks.get(str(payload.get("task_id")))
        if owner is None:
            return  # no task's: no page shows it
        owner.command_count += 1
        record: dict[str, Any] = {
            "at": at,
            "command": payload.get("command"),
            **payload,
            "n": owner.command_count,
        }
        _count(owner.command_counts, "running", 1)
        self.by_command[str(payload.get("command_run_id"))] = record
        _keep_last(owner.commands, record, self.keep)

    def _command_ended(self, kind: str, payload: dict[str, Any]) -> None:
        done = self.by_command.pop(str(payload.get("command_run_id")), None)
        if done is None:
            return
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
        owner = self.tasks.get(str(done.get("task_id")))
        if owner is None:
            return
        ended = command_class(done)
        _count(owner.command_counts, "running", -1)
        _count(owner.command_counts, ended, 1)
        if self.keep is not None and ended != "ok":
            _keep_last(owner.unsuccessful, done, max(1, self.keep // 2))

    def summary(self) -> SessionSummary:
        """The summary of what was fed so far (the fold is not changed: feeding may go on)."""
        ledger = self.ledger
        if not self.ledger_used and self.before_ledger:
            # a session recorded before the usage ledger (IMPL-USAGE-1) has only its workers'
            # own totals, one per attempt: they are what it spent, never 0
            ledger = UsageLedger()
            for usage in self.before_ledger:
                ledger.add(usage)
        for task in self.tasks.values():
            spent = ledger.task(task.task_id)
            task.tokens, task.cost_usd = spent.tokens, spent.cost_usd
        return SessionSummary(
            session_id=self.session_id,
            started_at=self.first,
            ended_at=self.last,
            tasks=self.tasks,
            waves=self.wave,
            ledger=ledger,
            by_wave=self.by_wave,
            by_turn=self.by_turn,
            earlier_turns=self.earlier_turns,
            earlier_turn_count=self.earlier_turn_count,
        )


def _keep_last(items: list[Any], item: Any, keep: int | None) -> None:
    items.append(item)
    if keep is not None and len(items) > keep:
        del items[0]


def _count(counts: dict[str, int], key: str, by: int) -> None:
    counts[key] = counts.get(key, 0) + by
    if not counts[key]:
        del counts[key]


def _merge_sum(into: UsageSum, part: UsageSum) -> None:
    into.calls += part.calls
    into.input_tokens += part.input_tokens
    into.output_tokens += part.output_tokens
    into.cache_read_tokens += part.cache_read_tokens
    into.cache_write_tokens += part.cache_write_tokens
    into.known_cost_usd += part.known_cost_usd
    unknown = into.cost_usd is None or part.cost_usd is None
    into.cost_usd = None if unknown else (into.cost_usd or 0.0) + (part.cost_usd or 0.0)


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


def command_class(command: dict[str, Any]) -> str:
    """How a command run ended, as a count's key: ``running`` (no end yet), ``ok`` (exit 0),
    ``nonzero`` (another exit code), ``failed`` (no exit code), ``cancelled``."""
    ended = command.get("ended")
    if ended is None:
        return "running"
    if ended in ("cancelled", "failed"):
        return str(ended)
    return "ok" if command.get("exit_code") == 0 else "nonzero"


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
