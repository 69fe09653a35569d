"""The report's fold stored with its event position: a report folds only the tail (IMPL-READ-8).

Owns the codec of a windowed ``ReportFold`` (``encode_fold`` / ``decode_fold``: plain JSON of
its tasks, attempts, kept command records — each stored once, referred to by number, so a
record kept in two lists is one record again when read back —, counts and usage sums; nothing
is imported or called by name from the stored text), ``open_report`` (the stored fold, then the
events of ``REPORT_TYPES`` stored after its ``seq``: reads only, never writes), ``ReportKeeper``
(the fold stored again with each fold snapshot, as the console view is, IMPL-READ-7) and
``check_report`` (the stored fold + tail against a fold of the whole log: a difference is a
defect, never silently kept). One ``fold_snapshots`` row per session, kind
``report_fold:<session id>``. A stored fold is a cache made from durable events only: deleting
it changes nothing but the time the next report takes.
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from typing import Any, NamedTuple

from air.cli.session_report import (
    Attempt,
    ReportFold,
    SessionSummary,
    TaskSummary,
    read_report_events,
    summarise,
)
from air.contracts.ids import utc_now_iso
from air.events.usage_ledger import UsageLedger, UsageSum
from air.store.db import DatabaseManager
from air.store.read_model import load_snapshot, save_snapshot, session_last_seq

__all__ = [
    "CODEC",
    "KIND",
    "REPORT_KEEP",
    "ReportAt",
    "ReportKeeper",
    "check_report",
    "decode_fold",
    "encode_fold",
    "open_report",
]

KIND = "report_fold"
CODEC = 1
"""The codec's version: a fold written by another is ignored (the log is folded whole)."""
REPORT_KEEP = 10
"""The page's windows (``ReportFold``'s ``keep``): per task its last 10 commands and the last 5
that did not succeed, its last 10 diffs and evidence; the Main Agent's last 20 turns."""

_REFS = ("commands", "unsuccessful")


class ReportAt(NamedTuple):
    """A report's fold and the ``seq`` of the last event in it."""

    fold: ReportFold
    seq: int


def _sums(parts: dict[Any, UsageSum]) -> list[list[Any]]:
    return [[k, dict(vars(v))] for k, v in parts.items()]


def encode_fold(fold: ReportFold) -> str:
    """``fold`` (a windowed one: ``keep`` set) as text; ``decode_fold`` gives it back."""
    if fold.keep is None:
        raise ValueError("only a windowed report fold is stored (keep is None)")
    records: list[dict[str, Any]] = []
    number: dict[int, int] = {}

    def ref(record: dict[str, Any]) -> int:
        if id(record) not in number:
            number[id(record)] = len(records)
            records.append(record)
        return number[id(record)]

    tasks = []
    for task in fold.tasks.values():
        row = {f.name: getattr(task, f.name) for f in fields(TaskSummary) if f.name not in _REFS}
        row["attempts"] = [dict(vars(a)) for a in task.attempts]  # plain fields: no deep copy
        for name in _REFS:
            row[name] = [ref(c) for c in getattr(task, name)]
        tasks.append(row)
    ledger = fold.ledger
    body = {
        "keep": fold.keep,
        "tasks": tasks,
        "by_command": [[k, ref(v)] for k, v in fold.by_command.items()],
        "records": records,
        "by_agent": fold.by_agent,
        "by_workspace": fold.by_workspace,
        "wave": fold.wave,
        "ended_since_start": fold.ended_since_start,
        "session_id": fold.session_id,
        "first": fold.first,
        "last": fold.last,
        "ledger_used": fold.ledger_used,
        "ledger": {
            "total": asdict(ledger.total),
            "by_task": _sums(ledger.by_task),
            "by_purpose": _sums(ledger.by_purpose),
            "by_agent": _sums(ledger.by_agent),
        },
        "by_wave": _sums(fold.by_wave),
        "by_turn": _sums(fold.by_turn),
        "earlier_turns": asdict(fold.earlier_turns),
        "earlier_turn_count": fold.earlier_turn_count,
        "turn": fold.turn,
        "before_ledger": fold.before_ledger,
    }
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)


def _read_sums(rows: list[list[Any]], key: type = str) -> dict[Any, UsageSum]:
    return {key(k): UsageSum(**v) for k, v in rows}


def decode_fold(body: str) -> ReportFold:
    """The fold ``encode_fold`` wrote.

    Raises:
        ValueError: the text is not a report fold of this codec.
    """
    try:
        d = json.loads(body)
        fold = ReportFold(keep=int(d["keep"]))
        records: list[dict[str, Any]] = [dict(r) for r in d["records"]]
        for row in d["tasks"]:
            attempts = [Attempt(**a) for a in row.pop("attempts")]
            for name in _REFS:
                row[name] = [records[i] for i in row[name]]
            task = TaskSummary(**row, attempts=attempts)
            fold.tasks[task.task_id] = task
        fold.by_command = {str(k): records[i] for k, i in d["by_command"]}
        fold.by_agent = {str(k): str(v) for k, v in d["by_agent"].items()}
        fold.by_workspace = {str(k): str(v) for k, v in d["by_workspace"].items()}
        fold.wave = int(d["wave"])
        fold.ended_since_start = bool(d["ended_since_start"])
        fold.session_id, fold.first, fold.last = d["session_id"], d["first"], d["last"]
        fold.ledger_used = bool(d["ledger_used"])
        ledger = d["ledger"]
        fold.ledger = UsageLedger(
            total=UsageSum(**ledger["total"]),
            by_task=_read_sums(ledger["by_task"]),
            by_purpose=_read_sums(ledger["by_purpose"]),
            by_agent=_read_sums(ledger["by_agent"]),
        )
        fold.by_wave = _read_sums(d["by_wave"], int)
        fold.by_turn = _read_sums(d["by_turn"])
        fold.earlier_turns = UsageSum(**d["earlier_turns"])
        fold.earlier_turn_count = int(d["earlier_turn_count"])
        fold.turn = d["turn"]
        fold.before_ledger = list(d["before_ledger"])
        return fold
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise ValueError(f"unreadable report fold: {exc}") from exc


def _kind(session_id: str) -> str:
    return f"{KIND}:{session_id}"


def _stored(db: DatabaseManager, session_id: str, keep: int) -> ReportAt | None:
    stored = load_snapshot(db, _kind(session_id))
    if stored is None or stored.codec != CODEC:
        return None
    if stored.event_seq > session_last_seq(db, session_id):
        return None  # the log was rebuilt shorter: the fold is of another log
    try:
        fold = decode_fold(stored.body)
    except ValueError:
        return None  # a damaged fold is a cache miss; `check_report` reports it
    return ReportAt(fold, stored.event_seq) if fold.keep == keep else None


def _fold_tail(db: DatabaseManager, session_id: str, at: ReportAt) -> tuple[ReportAt, int]:
    """``at`` with the report's events stored after it folded in; and how many there were."""
    rows = read_report_events(db.conn, session_id, after=at.seq)
    for event in rows:
        at.fold.feed(event)
    return (ReportAt(at.fold, rows[-1].seq), len(rows)) if rows else (at, 0)


def open_report(db: DatabaseManager, session_id: str, *, keep: int = REPORT_KEEP) -> ReportAt:
    """The report's fold of a session: the stored fold, then the report's events stored after
    it (the whole log, by the type index, when none is stored or it cannot be used). Reads
    only: a report of a running session never writes to it.

    Args:
        db: the session database.
        session_id: the session.
        keep: the fold's windows (``ReportFold``).
    """
    start = _stored(db, session_id, keep) or ReportAt(ReportFold(keep=keep), 0)
    return _fold_tail(db, session_id, start)[0]


def _save(db: DatabaseManager, session_id: str, at: ReportAt) -> None:
    save_snapshot(db, _kind(session_id), at.seq, CODEC, encode_fold(at.fold), utc_now_iso())


class ReportKeeper:
    """The report's fold stored as a session grows: each call folds the report's events stored
    since the last (the first starts from the stored fold) and stores the fold at its ``seq``,
    so a report is a stored fold and a short tail however long the session ran. The runtime
    calls it with each fold snapshot (``SessionLedger.on_snapshot``, with the ``ViewKeeper``).
    It reads the log only, never live events.

    Args:
        db: the session database.
        session_id: the session.
        keep: the fold's windows.
    """

    def __init__(self, db: DatabaseManager, session_id: str, *, keep: int = REPORT_KEEP) -> None:
        self.db = db
        self.session_id = session_id
        self.keep = keep
        self._at: ReportAt | None = None

    def __call__(self) -> None:
        if self._at is None:
            self._at = open_report(self.db, self.session_id, keep=self.keep)
            if self._at.seq > 0:
                _save(self.db, self.session_id, self._at)
            return
        self._at, fed = _fold_tail(self.db, self.session_id, self._at)
        if fed:
            _save(self.db, self.session_id, self._at)


def _same(a: SessionSummary, b: SessionSummary) -> list[str]:
    differ = [
        f.name
        for f in fields(SessionSummary)
        if f.compare and getattr(a, f.name) != getattr(b, f.name)
    ]
    if a.usage() != b.usage():
        differ.append("usage")
    return differ


def check_report(db: DatabaseManager, session_id: str) -> str | None:
    """None when the session's stored report fold (if any) plus the events after it give
    exactly the summary a fold of the whole log gives; else what differs, in one sentence."""
    stored = load_snapshot(db, _kind(session_id))
    if stored is None or stored.codec != CODEC:
        return None
    try:
        fold = decode_fold(stored.body)
    except ValueError as exc:
        return f"the report fold at event {stored.event_seq} cannot be read ({exc})"
    if stored.event_seq > session_last_seq(db, session_id):
        return f"the report fold claims event {stored.event_seq}, past the end of the log"
    resumed = _fold_tail(db, session_id, ReportAt(fold, stored.event_seq))[0].fold.summary()
    whole = summarise(read_report_events(db.conn, session_id), keep=fold.keep)
    differ = _same(resumed, whole)
    if not differ:
        return None
    return (
        f"the report fold at event {stored.event_seq} differs from a fold of the whole log "
        f"in {', '.join(differ)}"
    )
