"""Snapshots of the fold with their event position: a reader folds only what came after.

Owns the codec of a ``SessionState`` (``encode_state`` / ``decode_state``: tagged JSON over a
closed set of classes: the fold's facts, the enums and pydantic models they hold, the
persistent maps; anything else is refused, nothing is imported or called by name from the
stored text), ``fold_session`` (the snapshot's state, then the fold of every event stored
after its ``seq``; the whole log when there is none or it cannot be read), ``save_fold``,
and ``check_snapshot`` (the snapshot + tail against a full replay of the log: `air doctor`
reports a difference as a defect). Stored in ``fold_snapshots`` (``air.store.read_model``).
A snapshot is a cache: deleting it changes nothing but the time a reader takes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from enum import Enum
from sys import intern
from typing import Any, NamedTuple

from immutables import Map
from pydantic import BaseModel

from air.contracts.error import AirError, AirException
from air.contracts.event import RuntimeEvent
from air.contracts.runtime import AgentType
from air.contracts.task import DependencySource, DependencyType, TaskSpec, TaskStatus
from air.events.fold import FoldCursor
from air.events.fold_state import (
    AgentFact,
    AttemptFact,
    CommandRunFact,
    DependencyFact,
    FailureFact,
    SessionFact,
    SessionState,
    TaskFact,
    ToolRunFact,
    WorkspaceFact,
)
from air.store.db import DatabaseManager
from air.store.read_model import load_snapshot, save_snapshot, session_last_seq

__all__ = [
    "CODEC",
    "KIND",
    "SCHEDULER_FOLD",
    "SNAPSHOT_EVERY",
    "FoldAt",
    "check_snapshot",
    "check_snapshots",
    "decode_state",
    "encode_parts",
    "encode_state",
    "fold_session",
    "save_fold",
]

KIND = "session_fold"
CODEC = 5
"""The codec's version: a snapshot written by another is ignored (the log is folded whole).
2 (IMPL-READ-4): an attempt's evidence is dropped at its end also when the end names no
agent; a map of one kind of fact is stored as rows (``[key, fields...]``: no tagged object per
fact; at 100k events 10.1 -> 9.0 MB, read back faster and with less peak memory).
3 (IMPL-MEM-1): the scheduler's fold (``SCHEDULER_FOLD``) drops a run once it and its task
have ended (at 100k events 10.0 -> 1.3 MB).
4 (IMPL-PACK-1): a task's spec and worker result are stored as their packed JSON text.
5 (IMPL-RSS-1): a task's worker result leaves out the ids the task holds (``pack_result``)."""
SCHEDULER_FOLD = SessionState(forget_ended_runs=True)
"""The empty state the scheduler's fold starts from (``fold_session``, ``SessionLedger``)."""
SNAPSHOT_EVERY = 2000
"""A reader that folded this many events past the stored snapshot stores a new one."""

_TUPLES: dict[str, type[Any]] = {
    c.__name__: c
    for c in (
        SessionState,
        SessionFact,
        TaskFact,
        AttemptFact,
        FailureFact,
        DependencyFact,
        AgentFact,
        WorkspaceFact,
        ToolRunFact,
        CommandRunFact,
    )
}
_ENUMS: dict[str, type[Enum]] = {
    c.__name__: c for c in (TaskStatus, AgentType, DependencyType, DependencySource)
}


def _worker_result() -> type[BaseModel]:
    from air.contracts.worker_result import WorkerResult  # IMPL-BOOT-12: loaded when met

    return WorkerResult


_MODELS: dict[str, Callable[[], type[BaseModel]]] = {
    "TaskSpec": lambda: TaskSpec,
    "AirError": lambda: AirError,
    "RuntimeEvent": lambda: RuntimeEvent,
    "WorkerResult": _worker_result,
}


def _fact_of(value: Map[Any, Any]) -> str | None:
    """The name of the one kind of fact ``value`` holds (stored as rows), else None."""
    kinds = {type(v) for v in value.values()}
    fact = next(iter(kinds)) if len(kinds) == 1 else None
    return fact.__name__ if fact is not None and fact.__name__ in _TUPLES else None


def _enc(value: Any) -> Any:
    if isinstance(value, Enum):  # first: a StrEnum is a str too
        if type(value).__name__ not in _ENUMS:
            raise TypeError(f"the fold codec cannot store a {type(value).__name__}")
        return {"e": type(value).__name__, "v": value.value}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, tuple) and type(value).__name__ in _TUPLES:
        return {"t": type(value).__name__, "v": [_enc(v) for v in value]}
    if isinstance(value, tuple):
        return {"l": [_enc(v) for v in value]}
    if isinstance(value, Map):
        fact = _fact_of(value)
        if fact is not None:  # a map of one kind of fact: rows
            return {"f": fact, "v": [[k, *map(_enc, v)] for k, v in value.items()]}
        return {"m": [[k, _enc(v)] for k, v in value.items()]}
    if isinstance(value, BaseModel) and type(value).__name__ in _MODELS:
        return {"p": type(value).__name__, "v": value.model_dump(mode="json")}
    raise TypeError(f"the fold codec cannot store a {type(value).__name__}")


def _dec(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    if "t" in value:
        return _TUPLES[value["t"]](*(_dec(v) for v in value["v"]))
    if "e" in value:
        return _ENUMS[value["e"]](value["v"])
    if "l" in value:
        return tuple(_dec(v) for v in value["l"])
    if "m" in value:
        return Map((k, _dec(v)) for k, v in value["m"])
    if "f" in value:
        fact = _TUPLES[value["f"]]
        return Map(
            (_dec_field(row[0]), fact(*[_dec_field(v) for v in row[1:]])) for row in value["v"]
        )
    if "p" in value:
        return _MODELS[value["p"]]().model_validate(value["v"])
    raise ValueError(f"unknown tag in a fold snapshot: {sorted(value)}")


def _dec_field(value: Any) -> Any:
    """A fact's field: a short text (an id, a status) interned as the live fold interns its ids,
    so the facts read back share one string per id as they did (IMPL-RSS-1); packed JSON not."""
    if isinstance(value, str) and len(value) <= _INTERNED and not value.startswith("{"):
        return intern(value)
    return _dec(value)


_INTERNED = 80
"""The longest fact text ``_dec_field`` interns (ids are ~40 characters)."""


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


_PART = 1 << 16
"""Bytes ``encode_parts`` gathers before it starts a new part."""


def encode_parts(state: SessionState) -> list[bytes]:
    """``encode_state``'s text as UTF-8, in parts of about 64 KiB: a map is encoded a row at a
    time, so neither the whole text nor the tree of JSON values it is made from exists at once
    (at 10,000 tasks that tree was ~3 KiB per task, 4x the text, built every
    ``SNAPSHOT_EVERY`` events; IMPL-RSS-1). ``save_snapshot`` writes the parts in turn."""
    parts: list[bytes] = []
    buf = bytearray(b'{"t":"SessionState","v":[')
    for i, value in enumerate(state):
        buf += b"," if i else b""
        if not isinstance(value, Map):
            buf += _dumps(_enc(value))
            continue
        rows: Map[str, Any] = value
        fact = _fact_of(rows)  # rows of a fact's fields, or [key, value] pairs (as ``_enc``)
        buf += b'{"m":[' if fact is None else b'{"f":' + _dumps(fact) + b',"v":['
        for j, (key, item) in enumerate(rows.items()):
            row = [key, _enc(item)] if fact is None else [key, *map(_enc, item)]
            buf += (b"," if j else b"") + _dumps(row)
            if len(buf) >= _PART:
                parts.append(bytes(buf))
                buf.clear()
        buf += b"]}"
    buf += b"]}"
    parts.append(bytes(buf))
    return parts


def encode_state(state: SessionState) -> str:
    """``state`` as text (``decode_state`` gives an equal state back)."""
    return b"".join(encode_parts(state)).decode()


def decode_state(body: str) -> SessionState:
    """The state ``encode_state`` wrote.

    Raises:
        ValueError: the text is not a snapshot of this codec (bad JSON, unknown tag or class,
            a field that does not validate).
    """
    try:
        state = _dec(json.loads(body))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"unreadable fold snapshot: {exc}") from exc
    if not isinstance(state, SessionState):
        raise ValueError("a fold snapshot holds no session state")
    return state


class FoldAt(NamedTuple):
    """A fold and the ``seq`` of the last event in it."""

    state: SessionState
    seq: int
    snapshot_seq: int
    """The position of the snapshot it started from (0: the log was folded whole)."""


def _rows_after(
    db: DatabaseManager, session_id: str, seq: int
) -> Iterator[tuple[RuntimeEvent, int]]:
    from air.events.store import record_to_event

    cursor = db.conn.execute(
        "SELECT * FROM events WHERE session_id = ? AND seq > ? ORDER BY seq", (session_id, seq)
    )
    names = [d[0] for d in cursor.description]
    while rows := cursor.fetchmany(512):
        for row in rows:
            record = dict(zip(names, row, strict=True))
            yield record_to_event(record), int(record["seq"])


def _fold_from(
    db: DatabaseManager, session_id: str, state: SessionState, seq: int, *, lenient: bool
) -> tuple[SessionState, int]:
    """The fold of the events after ``seq``, from ``state``; and the last ``seq`` folded."""
    cursor = FoldCursor(state)
    for event, at in _rows_after(db, session_id, seq):
        seq = at
        try:
            cursor.feed(event)
        except AirException:
            if not lenient:
                raise
    return cursor.state, seq


def _stored(db: DatabaseManager, session_id: str) -> tuple[SessionState, int] | None:
    stored = load_snapshot(db, f"{KIND}:{session_id}")
    if stored is None or stored.codec != CODEC:
        return None
    try:
        return decode_state(stored.body), stored.event_seq
    except ValueError:
        return None  # a damaged snapshot is a cache miss; `air doctor` reports it


def fold_session(db: DatabaseManager, session_id: str, *, lenient: bool = False) -> FoldAt:
    """The scheduler's fold of a session: its snapshot, then every event stored after it.

    Args:
        db: the session database.
        session_id: the session.
        lenient: leave out an event the fold refuses (readers of a damaged log) instead of
            raising.

    Raises:
        AirException: an event the fold refuses (not ``lenient``).
    """
    start = _stored(db, session_id)
    state, seq = start if start is not None else (SCHEDULER_FOLD, 0)
    state, last = _fold_from(db, session_id, state, seq, lenient=lenient)
    return FoldAt(state, last, seq)


def save_fold(db: DatabaseManager, session_id: str, fold: FoldAt, now: str) -> None:
    """Store ``fold`` as the session's snapshot (its own transaction)."""
    save_snapshot(db, f"{KIND}:{session_id}", fold.seq, CODEC, encode_parts(fold.state), now)


def check_snapshot(db: DatabaseManager, session_id: str) -> str | None:
    """None when the session's snapshot (if any) plus the events after it fold to exactly the
    state a full replay of the log gives; else what differs, in one sentence."""
    stored = load_snapshot(db, f"{KIND}:{session_id}")
    if stored is None:
        return None
    if stored.codec != CODEC:
        return None  # written by another codec: ignored by every reader
    try:
        state = decode_state(stored.body)
    except ValueError as exc:
        return f"the fold snapshot at event {stored.event_seq} cannot be read ({exc})"
    if stored.event_seq > session_last_seq(db, session_id):
        return f"the fold snapshot claims event {stored.event_seq}, past the end of the log"
    empty = SessionState(forget_ended_runs=state.forget_ended_runs)  # the same fold, whole
    full, _ = _fold_from(db, session_id, empty, 0, lenient=True)
    resumed, _ = _fold_from(db, session_id, state, stored.event_seq, lenient=True)
    if resumed == full:
        return None
    fields = [f for f in SessionState._fields if getattr(resumed, f) != getattr(full, f)]
    return (
        f"the fold snapshot at event {stored.event_seq} differs from a full replay of the log "
        f"in {', '.join(fields)}"
    )


def check_snapshots(db: DatabaseManager) -> list[str]:
    """``check_snapshot`` of every session snapshot stored in ``db``: the defects found."""
    rows = db.conn.execute(
        "SELECT kind FROM fold_snapshots WHERE kind LIKE ? ORDER BY kind", (f"{KIND}:%",)
    ).fetchall()
    found = [check_snapshot(db, str(kind).split(":", 1)[1]) for (kind,) in rows]
    return [f for f in found if f is not None]
