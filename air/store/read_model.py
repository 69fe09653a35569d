"""What a reader of a session reads instead of its events: the summary row and fold snapshots.

Owns the two read-model tables of session.db beside the SDD's 17 (``READ_MODEL_TABLES``,
created on every open by ``MigrationRunner`` like the others, so an older session.db gains
them when it is next opened):

* ``session_summary``: one row per session (event count, first and last ``seq``, first and
  last time, last type), kept in the append's transaction by ``note_event``, so `air session
  list` and `air history`'s header never read the events. ``read_summary`` rebuilds a missing
  or stale row (a session written before this table existed) from one SQL aggregate over the
  ``events`` table (no payload parsed) and stores it.
* ``fold_snapshots``: an encoded state with the ``seq`` of the last event folded into it
  (``save_snapshot`` / ``load_snapshot``); what the state is and how it is encoded belongs
  to its writer (the fold's codec in ``air.events``). The body is written by blob I/O, so no
  cached statement keeps a copy of it.

``peek_summary`` reads the row (and the task counts) through a read-only connection, for a
listing of many sessions; it needs nothing but ``sqlite3`` (`air session list` and `air
history` start without pydantic, IMPL-READ-3). ``scheduler_task_counts`` reads the ``tasks``
projection: tasks per status, the tasks of ``task.created`` only (as the fold counts them,
compaction tasks left out).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from air.store.readonly import read_only_uri

if TYPE_CHECKING:
    from air.store.db import DatabaseManager

__all__ = [
    "READ_MODEL_INDEXES",
    "READ_MODEL_TABLES",
    "SessionSummaryRow",
    "StoredSnapshot",
    "load_snapshot",
    "note_event",
    "note_events",
    "peek_summary",
    "read_summary",
    "save_snapshot",
    "scheduler_task_counts",
]

READ_MODEL_TABLES: dict[str, str] = {
    "session_summary": """CREATE TABLE IF NOT EXISTS session_summary (
        session_id TEXT PRIMARY KEY,
        events INTEGER NOT NULL,
        first_seq INTEGER NOT NULL,
        last_seq INTEGER NOT NULL,
        first_at TEXT NOT NULL,
        last_at TEXT NOT NULL,
        last_type TEXT NOT NULL)""",
    "fold_snapshots": """CREATE TABLE IF NOT EXISTS fold_snapshots (
        kind TEXT PRIMARY KEY,
        event_seq INTEGER NOT NULL,
        codec INTEGER NOT NULL,
        body TEXT NOT NULL,
        created_at TEXT NOT NULL)""",
}
READ_MODEL_INDEXES: list[str] = []


class SessionSummaryRow(NamedTuple):
    """One ``session_summary`` row."""

    session_id: str
    events: int
    first_seq: int
    last_seq: int
    first_at: str
    last_at: str
    last_type: str


class StoredSnapshot(NamedTuple):
    """One ``fold_snapshots`` row: ``body`` holds the state after the event ``event_seq``."""

    kind: str
    event_seq: int
    codec: int
    body: str
    created_at: str


_NOTE = """INSERT INTO session_summary
    (session_id, events, first_seq, last_seq, first_at, last_at, last_type)
    VALUES (?, 1, ?, ?, ?, ?, ?)
    ON CONFLICT(session_id) DO UPDATE SET
        events = events + 1, last_seq = excluded.last_seq, last_at = excluded.last_at,
        last_type = excluded.last_type"""


_NOTE_MANY = """INSERT INTO session_summary
    (session_id, events, first_seq, last_seq, first_at, last_at, last_type)
    VALUES (?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT(session_id) DO UPDATE SET
        events = events + excluded.events, last_seq = excluded.last_seq,
        last_at = excluded.last_at, last_type = excluded.last_type"""


def note_event(
    conn: sqlite3.Connection, session_id: str, seq: int, timestamp: str, event_type: str
) -> None:
    """Count one stored event into its session's summary row (inside the append's transaction)."""
    conn.execute(_NOTE, (session_id, seq, seq, timestamp, timestamp, event_type))


def note_events(
    conn: sqlite3.Connection,
    session_id: str,
    first: tuple[int, str],
    last: tuple[int, str, str],
    count: int,
) -> None:
    """Count ``count`` events of one session, stored in one append (``first``: the first one's
    seq and time; ``last``: the last one's seq, time and type), into its summary row with one
    statement (IMPL-BATCH-1): the row ends as ``count`` calls of ``note_event`` leave it."""
    conn.execute(_NOTE_MANY, (session_id, count, first[0], last[0], first[1], last[1], last[2]))


_AGGREGATE = """SELECT count(*), min(seq), max(seq) FROM events WHERE session_id = ?"""


def read_summary(db: DatabaseManager, session_id: str) -> SessionSummaryRow | None:
    """The summary row of ``session_id`` (None: no event stored).

    A row that is missing or behind the log (written by an air without the table) is rebuilt
    from the ``events`` table with SQL alone and stored, once.
    """
    row = db.conn.execute(
        "SELECT * FROM session_summary WHERE session_id = ?", (session_id,)
    ).fetchone()
    last = _last_seq(db.conn, session_id, row)
    if last is None:
        return None
    if row is not None and int(row[3]) == last:
        return SessionSummaryRow(*row)
    return _rebuild(db, session_id)


def _last_seq(conn: sqlite3.Connection, session_id: str, row: Any) -> int | None:
    """The ``seq`` of the session's last event (None: it has none). O(1) when the summary row
    names the database's last event (a session.db holds one session); a scan otherwise."""
    (top,) = conn.execute("SELECT max(seq) FROM events").fetchone()
    if row is not None and top is not None and int(row[3]) == int(top):
        return int(top)
    (last,) = conn.execute(
        "SELECT max(seq) FROM events WHERE session_id = ?", (session_id,)
    ).fetchone()
    return None if last is None else int(last)


def _rebuild(db: DatabaseManager, session_id: str) -> SessionSummaryRow:
    with db.transaction() as conn:
        count, first_seq, last_seq = conn.execute(_AGGREGATE, (session_id,)).fetchone()
        (first_at,) = conn.execute(
            "SELECT timestamp FROM events WHERE seq = ?", (first_seq,)
        ).fetchone()
        last_at, last_type = conn.execute(
            "SELECT timestamp, type FROM events WHERE seq = ?", (last_seq,)
        ).fetchone()
        summary = SessionSummaryRow(
            session_id,
            int(count),
            int(first_seq),
            int(last_seq),
            str(first_at),
            str(last_at),
            str(last_type),
        )
        conn.execute("INSERT OR REPLACE INTO session_summary VALUES (?, ?, ?, ?, ?, ?, ?)", summary)
    return summary


def scheduler_task_counts(db: DatabaseManager, session_id: str) -> dict[str, int]:
    """Tasks per status of the ``tasks`` projection, for the tasks of ``task.created`` (the
    fold's scheduler tasks; compaction tasks are left out)."""
    return _task_counts(db.conn, session_id)


def peek_summary(
    path: str | os.PathLike[str], session_id: str
) -> tuple[SessionSummaryRow, dict[str, int]] | None:
    """The summary row and ``scheduler_task_counts`` of a session database, read through a
    read-only connection (no migration, no write: a listing of many sessions opens each one
    this way). None when that cannot answer (no such table yet, a row behind the log, an
    unreadable file): then open the database (``open_session_database``) and ``read_summary``.
    """
    try:
        conn = sqlite3.connect(read_only_uri(path), uri=True)
    except sqlite3.Error:
        return None
    try:
        row = conn.execute(
            "SELECT * FROM session_summary WHERE session_id = ?", (session_id,)
        ).fetchone()
        last_seq = _last_seq(conn, session_id, row)
        if row is None or last_seq is None or int(row[3]) != last_seq:
            return None
        return SessionSummaryRow(*row), _task_counts(conn, session_id)
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def _task_counts(conn: sqlite3.Connection, session_id: str) -> dict[str, int]:
    rows = conn.execute(
        "SELECT status, count(*) FROM tasks WHERE session_id = ? AND id IN "
        "(SELECT task_id FROM events WHERE type = 'task.created') GROUP BY status",
        (session_id,),
    ).fetchall()
    return {str(status): int(n) for status, n in rows}


def save_snapshot(
    db: DatabaseManager,
    kind: str,
    event_seq: int,
    codec: int,
    body: str | Sequence[bytes],
    created_at: str,
) -> None:
    """Store (replace) the snapshot of ``kind``, in its own transaction.

    ``body`` is the text, or its UTF-8 in parts (written in turn: a large body need never be
    in memory whole). It is written through blob I/O into a text of its length, not bound as a
    parameter: a prepared statement keeps its last bound values until it is bound again
    (Python's sqlite3 never clears them, and the connection caches the statement), so a bound
    body stayed in memory beside the fold it was encoded from, and a fold snapshot grows with
    the session (6.5 MiB at 10,000 tasks; IMPL-RSS-1). What stays bound is the body's length.
    """
    parts = [body.encode()] if isinstance(body, str) else body
    with db.transaction() as conn:
        row = conn.execute(
            "INSERT OR REPLACE INTO fold_snapshots VALUES (?, ?, ?, CAST(zeroblob(?) AS TEXT), ?)",
            (kind, event_seq, codec, sum(map(len, parts)), created_at),
        ).lastrowid
        assert row is not None, "an INSERT names its row"
        with conn.blobopen("fold_snapshots", "body", row) as blob:
            for part in parts:
                blob.write(part)


def session_last_seq(db: DatabaseManager, session_id: str) -> int:
    """The ``seq`` of the session's last event (0 for none): a stored snapshot claiming more is
    of another, longer log."""
    row = db.conn.execute("SELECT max(seq) FROM events WHERE session_id = ?", (session_id,))
    value = row.fetchone()[0]
    return int(value) if value is not None else 0


def load_snapshot(db: DatabaseManager, kind: str) -> StoredSnapshot | None:
    """The stored snapshot of ``kind``, or None."""
    row = db.conn.execute("SELECT * FROM fold_snapshots WHERE kind = ?", (kind,)).fetchone()
    return None if row is None else StoredSnapshot(*row)
