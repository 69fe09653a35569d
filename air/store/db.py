"""SQLite connection management and schema migration (SDD §4.1, §4.2).

Owns ``DatabaseManager`` (one connection, pragmas WAL / synchronous=NORMAL / foreign_keys=OFF,
explicit ``BEGIN IMMEDIATE`` write transactions, translation of SQLite failures into AirErrors)
and ``MigrationRunner`` (schema_version 1, idempotent, refuses a newer schema). The store core
is synchronous; a Trio service decides whether to call it inline or from one worker thread.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from air import __version__
from air.contracts.error import AirException, machine_failure
from air.contracts.ids import utc_now_iso
from air.store.readonly import read_only_mount

__all__ = [
    "DatabaseManager",
    "MigrationRunner",
    "SchemaSpec",
]


class SchemaSpec:
    """The tables and indexes of one database kind at one schema version."""

    def __init__(
        self,
        *,
        name: str,
        version: int,
        tables: Mapping[str, str],
        indexes: Sequence[str] = (),
    ) -> None:
        self.name = name
        self.version = version
        self.tables = dict(tables)
        self.indexes = list(indexes)


def _corrupt(path: str, exc: BaseException) -> AirException:
    return AirException.of(
        kind="corrupt_database",
        message=f"the database {path} is not a readable SQLite database",
        detail=str(exc),
        retryability="never",
        user_action=(
            "Move the file aside (keep it for `air doctor`) and start a new session, "
            "or restore it from a backup."
        ),
        metadata={"path": path},
    )


_CANNOT_OPEN = {3, 5, 6, 8, 10, 13, 14}
"""SQLite's PERM, BUSY, LOCKED, READONLY, IOERR, FULL and CANTOPEN: the file may be sound."""


def _unopenable(path: str, exc: sqlite3.Error) -> AirException | None:
    """A database that cannot be opened for writing where it is (a read-only file system, no
    write permission, a full disk): ``storage_error``, never ``corrupt_database``, whose advice
    (move the file aside) a sound database on a read-only mount got. None: it is damaged."""
    code = getattr(exc, "sqlite_errorcode", None)
    if not isinstance(code, int) or code & 0xFF not in _CANNOT_OPEN:
        return None
    directory = os.path.dirname(path) or "."
    read_only = not os.access(directory, os.W_OK) or read_only_mount(directory)
    return AirException.of(
        kind="storage_error",
        message=f"cannot open the database {path} to write"
        + (": its directory is read-only" if read_only else ""),
        detail=str(exc),
        user_action=(
            "air writes beside a session's database as it opens it (SQLite's WAL): make the "
            "directory writable or copy the project to a writable place; `air history` and "
            "`air session list` read it where it is."
            if read_only
            else "Check that the directory is writable and the disk is not full."
        ),
        metadata={"path": path},
    )


class DatabaseManager:
    """One SQLite database file: pragmas on open, explicit write transactions.

    Use ``DatabaseManager.open(path)`` (applies pragmas, translates a corrupt file into
    ``AirException(corrupt_database)``). ``transaction()`` is a context manager that runs
    ``BEGIN IMMEDIATE`` … ``COMMIT`` (``ROLLBACK`` on any exception); a nested call reuses the
    outer transaction (single writer per session DB).
    """

    def __init__(self, path: str | os.PathLike[str], conn: sqlite3.Connection) -> None:
        self.path = os.fspath(path)
        self._conn = conn
        self._lock = threading.RLock()
        self._depth = 0
        self._owner: int | None = None
        self._closed = False
        self.created = False
        """True when ``open`` found no database and ``create`` made its schema."""

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        must_exist: bool = False,
        create: MigrationRunner | None = None,
    ) -> DatabaseManager:
        """Open (or create) the database at ``path`` and apply the pragmas.

        Args:
            path: the database file; its directory must exist.
            must_exist: refuse to create a new file.
            create: for a new (absent or empty) file, its schema is written in ONE
                transaction before the switch to WAL (``MigrationRunner.create``; ``created``
                is then True): the pages go to the file once, under a rollback journal, not to
                the WAL and again at the checkpoint. A process killed meanwhile leaves a hot
                journal that the next open rolls back to an empty file, migrated then. The
                first WAL frame (``MigrationRunner.stamp``) is written before ``synchronous``
                becomes NORMAL, so the new WAL's header costs no fsync either (IMPL-BOOT-13).

        Raises:
            AirException: ``not_found`` when ``must_exist`` and the file is absent;
                ``corrupt_database`` when the file is not a SQLite database;
                ``storage_error`` when it cannot be opened at all.
        """
        spath = os.fspath(path)
        if must_exist and not os.path.exists(spath):
            raise AirException.of(
                kind="not_found",
                message=f"no database at {spath}",
                user_action="Check the session id with `air history`, or open a new session.",
            )
        fresh = not os.path.exists(spath) or os.path.getsize(spath) == 0
        try:
            conn = sqlite3.connect(
                spath, isolation_level=None, check_same_thread=False, cached_statements=512
            )
        except sqlite3.Error as exc:
            raise AirException.of(
                kind="storage_error",
                message=f"cannot open the database {spath}",
                detail=str(exc),
                user_action="Check that the directory exists and is writable.",
            ) from exc
        try:
            # Read first: a non-database file fails here before any pragma writes to it.
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            if fresh:
                # an empty file's switch to WAL writes only its header page: no fsyncs for
                # that (4 on the critical path of every new session; IMPL-PERF-2)
                conn.execute("PRAGMA synchronous=OFF")
                if create is not None:
                    conn.execute("PRAGMA busy_timeout=5000")  # another process may create it
                    create.create(conn)
            conn.execute("PRAGMA journal_mode=WAL").fetchone()
            if fresh and create is not None:
                create.stamp(conn)
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=OFF")
            conn.execute("PRAGMA busy_timeout=5000")
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise _unopenable(spath, exc) or _corrupt(spath, exc) from exc
        db = cls(spath, conn)
        db.created = fresh and create is not None
        return db

    @property
    def conn(self) -> sqlite3.Connection:
        """The raw connection (reads may use it directly; writes go through ``transaction``)."""
        return self._conn

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """Run the body in one ``BEGIN IMMEDIATE`` transaction; nested calls join the outer one.

        Raises:
            AirException: ``storage_error`` when SQLite fails to begin or commit (disk full,
                locked); the body's own exceptions propagate after ROLLBACK.
        """
        with self._lock:
            if self._depth > 0:
                self._depth += 1
                try:
                    yield self._conn
                finally:
                    self._depth -= 1
                return
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise self._storage_error("begin", exc) from exc
            self._depth = 1
            self._owner = threading.get_ident()
            try:
                yield self._conn
            except BaseException:
                self._depth = 0
                self._owner = None
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
            self._depth = 0
            self._owner = None
            try:
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise self._storage_error("commit", exc) from exc

    def execute_write(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        """Run one write statement: inside the caller's open transaction when this thread holds
        one (the fast path of projections), else in its own transaction."""
        if self._depth and self._owner == threading.get_ident():
            return self._conn.execute(sql, params)
        with self.transaction() as conn:
            return conn.execute(sql, params)

    def _storage_error(self, phase: str, exc: sqlite3.Error) -> AirException:
        if isinstance(exc, sqlite3.DatabaseError) and "malformed" in str(exc):
            return _corrupt(self.path, exc)
        full = machine_failure(exc, self.path)  # a full or failing disk: what the user fixes
        if full is not None:
            return full
        return AirException.of(
            kind="storage_error",
            message=f"SQLite could not {phase} a transaction on {self.path}",
            detail=str(exc),
            retryability="transient",
            user_action="Check free disk space and that no other program holds the database.",
        )

    def query(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[sqlite3.Row]:
        """Run a read query and return rows addressable by column name."""
        with self._lock:
            cur = self._conn.cursor()
            cur.row_factory = sqlite3.Row
            try:
                return list(cur.execute(sql, params))
            finally:
                cur.close()

    def integrity_check(self) -> str:
        """Return the result of ``PRAGMA integrity_check`` (``"ok"`` when healthy)."""
        rows = self._conn.execute("PRAGMA integrity_check").fetchall()
        return "\n".join(str(r[0]) for r in rows)

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()

    @property
    def closed(self) -> bool:
        return self._closed


class MigrationRunner:
    """Bring a database to the schema version this code knows (SDD §4.2).

    Idempotent: an empty file gets every table and index and the seed keys of ``schema_meta``;
    an up-to-date file only gets ``aircoding_version_last_opened`` refreshed. A file written by
    a newer air (``schema_version`` above ours) is refused before anything is written.
    """

    def __init__(self, spec: SchemaSpec, *, now: Callable[[], str] = utc_now_iso) -> None:
        self.spec = spec
        self._now = now
        self._created_at: str | None = None

    def current_version(self, db: DatabaseManager) -> int | None:
        """Read ``schema_meta.schema_version``; None when the database is empty."""
        try:
            exists = db.conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_meta'"
            ).fetchone()
            if exists is None:
                return None
            row = db.conn.execute(
                "SELECT value FROM schema_meta WHERE key='schema_version'"
            ).fetchone()
        except sqlite3.DatabaseError as exc:
            raise _corrupt(db.path, exc) from exc
        if row is None:
            return None
        try:
            return int(row[0])
        except (TypeError, ValueError) as exc:
            raise AirException.of(
                kind="schema_error",
                message=f"{db.path} has an unreadable schema_version {row[0]!r}",
                user_action="Move the file aside and start a new session; run `air doctor`.",
            ) from exc

    def create(self, conn: sqlite3.Connection) -> None:
        """Write the whole schema and the new-schema keys of ``schema_meta`` (version,
        creation time) into an EMPTY database in one transaction (``DatabaseManager.open(
        create=...)``): the tables and indexes of ``migrate``, in its order, as one script, so
        the result is the same ``sqlite_master``. Rolled back on any error.
        """
        self._created_at = self._now()
        ddl = ";\n".join([*self.spec.tables.values(), *self.spec.indexes])
        try:
            # executescript commits a pending transaction first: the script opens its own
            conn.executescript(f"BEGIN IMMEDIATE;\n{ddl};")
            self._seed(conn, self._created_at)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def stamp(self, conn: sqlite3.Connection) -> None:
        """Record the air version and time of this open (``create``'s time), one transaction."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            self._stamp(conn, self._created_at or self._now())
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def migrate(self, db: DatabaseManager) -> None:
        """Create or verify the schema, then record the air version that opened it.

        Raises:
            AirException: ``schema_error`` for a newer schema_version; ``corrupt_database``
                when the file cannot be read.
        """
        version = self.current_version(db)
        if version is not None and version > self.spec.version:
            raise AirException.of(
                kind="schema_error",
                message=(
                    f"{db.path} uses {self.spec.name} schema version {version}, "
                    f"newer than this air knows ({self.spec.version})"
                ),
                retryability="never",
                user_action="Upgrade air (pip install -U air) to open this database.",
                metadata={"found": version, "supported": self.spec.version},
            )
        now = self._now()
        try:
            with db.transaction() as conn:
                for ddl in self.spec.tables.values():
                    conn.execute(ddl)
                for ddl in self.spec.indexes:
                    conn.execute(ddl)
                if version is None:
                    self._seed(conn, now)
                self._stamp(conn, now)
        except sqlite3.DatabaseError as exc:
            raise _corrupt(db.path, exc) from exc

    def _seed(self, conn: sqlite3.Connection, now: str) -> None:
        """The ``schema_meta`` keys of a new schema: its version and creation time."""
        conn.execute(
            "INSERT OR REPLACE INTO schema_meta(key, value) VALUES ('schema_version', ?)",
            (str(self.spec.version),),
        )
        conn.execute(
            "INSERT OR IGNORE INTO schema_meta(key, value) VALUES ('created_at', ?)", (now,)
        )

    def _stamp(self, conn: sqlite3.Connection, now: str) -> None:
        """The ``schema_meta`` keys of every open: the air version and the time."""
        conn.execute(
            "INSERT OR REPLACE INTO schema_meta(key, value) "
            "VALUES ('aircoding_version_last_opened', ?)",
            (__version__,),
        )
        conn.execute(
            "INSERT OR REPLACE INTO schema_meta(key, value) VALUES ('last_opened_at', ?)",
            (now,),
        )
