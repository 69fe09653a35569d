"""A new database file switches to WAL without syncing its empty header (IMPL-PERF-2), and
every database, new or not, is left at ``synchronous=NORMAL`` in WAL mode."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from air.store.session_db import open_session_database

OPEN = (
    "import sys\n"
    "from air.store.session_db import open_session_database\n"
    "open_session_database(sys.argv[1]).close()\n"
)


def _syncs(db: Path, tmp: Path) -> list[str]:
    """The fsync / fdatasync calls (with the file each names) of opening ``db`` in a child."""
    strace = shutil.which("strace")
    assert strace is not None, "strace is part of this machine's tool set"
    log = tmp / "strace.log"
    trace = [strace, "-f", "-y", "-e", "trace=fsync,fdatasync", "-o", str(log)]
    subprocess.run(
        [*trace, sys.executable, "-c", OPEN, str(db)],
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    return [line for line in log.read_text().splitlines() if "sync(" in line]


def test_a_new_database_syncs_no_rollback_journal(tmp_path: Path) -> None:
    syncs = _syncs(tmp_path / "session.db", tmp_path)
    assert not [s for s in syncs if "-journal>" in s], syncs
    # what stays: the WAL's first frame and its directory entry, and the checkpoint at close
    assert any("session.db-wal>" in s for s in syncs), syncs


def test_new_and_reopened_databases_are_wal_and_synchronous_normal(tmp_path: Path) -> None:
    for _ in range(2):  # created, then reopened
        db = open_session_database(tmp_path / "session.db")
        try:
            assert db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert db.conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
        finally:
            db.close()
    empty = tmp_path / "empty.db"
    empty.touch()  # a zero-byte file counts as new
    db = open_session_database(empty)
    try:
        assert db.conn.execute("PRAGMA synchronous").fetchone()[0] == 1
        assert db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        db.close()
