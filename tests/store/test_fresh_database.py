"""A new database file switches to WAL without syncing its empty header (IMPL-PERF-2), gets its
schema in one rollback-journal transaction before that, identical to a migrated one, and its
WAL's first frame costs no fsync (IMPL-BOOT-13); every database, new or not, is left at
``synchronous=NORMAL`` in WAL mode."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from air.contracts.error import AirException, ErrorKind
from air.store.db import DatabaseManager, MigrationRunner, SchemaSpec
from air.store.session_db import (
    DEBUG_RECORDS_SCHEMA,
    LEARNED_MEMORY_SCHEMA,
    SESSION_SCHEMA,
    open_database,
    open_session_database,
)

OPEN = (
    "import sys\n"
    "from air.store.session_db import open_session_database\n"
    "open_session_database(sys.argv[1]).close()\n"
)
OPEN_ONLY = (  # no close: the syncs of the open alone, not of the checkpoint at close
    "import os, sys\n"
    "from air.store.session_db import open_session_database\n"
    "open_session_database(sys.argv[1])\n"
    "os._exit(0)\n"
)


def _syncs(db: Path, tmp: Path, script: str = OPEN) -> list[str]:
    """The fsync / fdatasync calls (with the file each names) of opening ``db`` in a child."""
    strace = shutil.which("strace")
    assert strace is not None, "strace is part of this machine's tool set"
    log = tmp / "strace.log"
    trace = [strace, "-f", "-y", "-e", "trace=fsync,fdatasync", "-o", str(log)]
    subprocess.run(
        [*trace, sys.executable, "-c", script, str(db)],
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    return [line for line in log.read_text().splitlines() if "sync(" in line]


def test_a_new_database_syncs_no_rollback_journal(tmp_path: Path) -> None:
    syncs = _syncs(tmp_path / "session.db", tmp_path)
    assert not [s for s in syncs if "-journal>" in s], syncs
    # what stays: the checkpoint at close
    assert any("session.db-wal>" in s for s in syncs), syncs


def test_opening_a_new_database_syncs_nothing(tmp_path: Path) -> None:
    # the schema goes in under a rollback journal at synchronous=OFF and the WAL's first
    # frame (its header) is written before synchronous becomes NORMAL (IMPL-BOOT-13)
    assert _syncs(tmp_path / "session.db", tmp_path, OPEN_ONLY) == []


def _schema(db: DatabaseManager) -> list[tuple[str, ...]]:
    return db.conn.execute(
        "SELECT type, name, tbl_name, rootpage, sql FROM sqlite_master ORDER BY rowid"
    ).fetchall()


def _meta(db: DatabaseManager) -> dict[str, str]:
    return dict(db.conn.execute("SELECT key, value FROM schema_meta").fetchall())


@pytest.mark.parametrize("spec", [SESSION_SCHEMA, DEBUG_RECORDS_SCHEMA, LEARNED_MEMORY_SCHEMA])
def test_a_new_file_gets_the_same_schema_as_the_migration_path(
    tmp_path: Path, spec: SchemaSpec
) -> None:
    clock = lambda: "2026-12-01T00:00:00.000000Z"  # noqa: E731
    migrated = DatabaseManager.open(tmp_path / "migrated.db")  # no create: the old path
    MigrationRunner(spec, now=clock).migrate(migrated)
    fast = DatabaseManager.open(tmp_path / "fast.db", create=MigrationRunner(spec, now=clock))
    try:
        assert fast.created
        assert not migrated.created
        assert _schema(fast) == _schema(migrated)
        own = [row for row in _schema(fast) if not row[1].startswith("sqlite_")]
        assert len(own) == len(spec.tables) + len(spec.indexes)
        assert _meta(fast) == _meta(migrated)
        assert set(_meta(fast)) == {
            "schema_version",
            "created_at",
            "aircoding_version_last_opened",
            "last_opened_at",
        }
        for db in (fast, migrated):
            assert db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert db.conn.execute("PRAGMA synchronous").fetchone()[0] == 1
            assert db.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        fast.close()
        migrated.close()
    reopened = open_database(tmp_path / "fast.db", spec)  # an existing file: migrated
    try:
        assert not reopened.created
        assert MigrationRunner(spec).current_version(reopened) == spec.version
    finally:
        reopened.close()


CRASH = (  # creates the schema and is killed before its COMMIT (a hot rollback journal)
    "import os, signal, sys\n"
    "from air.store.db import DatabaseManager, MigrationRunner\n"
    "from air.store.session_db import SESSION_SCHEMA\n"
    "class Killed(MigrationRunner):\n"
    "    def _seed(self, conn, now):\n"
    "        super()._seed(conn, now)\n"
    "        os.kill(os.getpid(), signal.SIGKILL)\n"
    "DatabaseManager.open(sys.argv[1], create=Killed(SESSION_SCHEMA))\n"
)


def test_a_creation_killed_before_its_commit_leaves_nothing_the_next_open_cannot_complete(
    tmp_path: Path,
) -> None:
    path = tmp_path / "session.db"
    child = subprocess.run(
        [sys.executable, "-c", CRASH, str(path)], cwd=Path(__file__).resolve().parents[2]
    )
    assert child.returncode == -signal.SIGKILL
    assert os.path.exists(f"{path}-journal")  # hot: the next open rolls it back
    db = open_session_database(path)
    try:
        assert not os.path.exists(f"{path}-journal")
        assert MigrationRunner(SESSION_SCHEMA).current_version(db) == SESSION_SCHEMA.version
        assert db.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        db.close()


def test_a_failing_creation_rolls_back_and_reports_the_file(tmp_path: Path) -> None:
    bad = SchemaSpec(name="bad", version=1, tables={"t": "CREATE TABLE t (a)", "u": "NOT SQL"})
    with pytest.raises(AirException) as caught:
        DatabaseManager.open(tmp_path / "bad.db", create=MigrationRunner(bad))
    assert caught.value.kind == ErrorKind.CORRUPT_DATABASE
    conn = sqlite3.connect(tmp_path / "bad.db")
    try:  # nothing of the failed script stayed
        assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
    finally:
        conn.close()


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
