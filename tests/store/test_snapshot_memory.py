"""A stored snapshot's body leaves no copy in SQLite's memory (IMPL-RSS-1): a prepared statement
keeps its last bound values until it is bound again and Python's sqlite3 caches the statement, so
a body bound as a parameter stayed allocated, as large as the session's fold, until the next
snapshot replaced it. ``save_snapshot`` writes the body by blob I/O instead.

SQLite's own allocations are invisible to tracemalloc; they are read with ``sqlite3_status64``
(``SQLITE_STATUS_MEMORY_USED``) from the library the ``sqlite3`` module is linked to.
"""

from __future__ import annotations

import _sqlite3
import ctypes
from pathlib import Path

from air.store.read_model import load_snapshot, save_snapshot
from air.store.session_db import open_session_database

_SQLITE = ctypes.CDLL(_sqlite3.__file__)
_MEMORY_USED = 0
NOW = "2026-12-02T00:00:00.000000Z"


def _sqlite_memory() -> int:
    """Bytes SQLite holds now, across every connection of this process."""
    current, peak = ctypes.c_int64(), ctypes.c_int64()
    rc = _SQLITE.sqlite3_status64(_MEMORY_USED, ctypes.byref(current), ctypes.byref(peak), 0)
    assert rc == 0
    return current.value


def test_a_saved_snapshot_body_is_not_kept_in_sqlite_memory(tmp_path: Path) -> None:
    db = open_session_database(tmp_path / "session.db")
    try:
        save_snapshot(db, "k", 1, 1, "{}", NOW)  # the statement is prepared
        before = _sqlite_memory()
        body = '{"x": "' + "é✓" * 4_000_000 + '"}'  # 16 MB of UTF-8
        save_snapshot(db, "k", 2, 1, body, NOW)
        grown = _sqlite_memory() - before
        # the page cache fills to its bound (~2 MB) meanwhile; a bound copy would be 16 MB
        assert grown < 6_000_000, f"SQLite kept {grown} bytes after the save"
        stored = load_snapshot(db, "k")
        assert stored is not None
        assert (stored.event_seq, stored.body) == (2, body)
        del stored
        save_snapshot(db, "k", 3, 1, '{"é": 1}', NOW)  # a shorter body replaces it whole
        assert load_snapshot(db, "k") == ("k", 3, 1, '{"é": 1}', NOW)
        typ = db.conn.execute("SELECT typeof(body) FROM fold_snapshots").fetchone()[0]
        assert typ == "text"
        save_snapshot(db, "k", 4, 1, [], NOW)  # no parts: an empty text
        assert load_snapshot(db, "k") == ("k", 4, 1, "", NOW)
    finally:
        db.close()
