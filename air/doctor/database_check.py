"""The doctor's database check: every database of a project, its integrity and its schema.

Owns ``DatabaseCheck`` (``PRAGMA integrity_check``, schema introspection with sqlite-utils, the
FK-off ``referential_check``, and the projection compared with a replay of the log; ``--fix``
rebuilds a session database from its events with ``rebuild_session_db``, keeping the old file in
quarantine) and ``session_lock_held`` (a live air process runs the session: its database is left
alone).
"""

from __future__ import annotations

import errno
import fcntl
import os
import sqlite3
from collections.abc import Callable, Mapping
from typing import Any

import sqlite_utils
import trio

from air.contracts.error import AirException
from air.contracts.ids import utc_now_iso
from air.doctor.quarantine import quarantine, quarantine_root
from air.doctor.service import Fix, Problem, issue
from air.doctor.snapshot_check import snapshot_problems

__all__ = ["DatabaseCheck", "rebuild_session_db", "session_lock_held"]


def session_lock_held(project_root: str, session_id: str) -> bool:
    """True when a live air process holds the session's lock (it is running now)."""
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in session_id)
    path = os.path.join(
        project_root, ".air", "local", "state", "runs", "owners", f"session-{safe}.lock"
    )
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        return exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN)
    finally:
        os.close(fd)
    return False


class DatabaseCheck:
    """Every session database and project knowledge database of the project."""

    name = "databases"
    reads_state = True

    def __init__(self, project_root: str) -> None:
        self.project_root = project_root
        self.local = os.path.join(project_root, ".air", "local")
        self.facts: dict[str, Any] = {}
        self.counted = (0, 0)
        """Session databases and project databases the last run looked at."""

    def session_dbs(self) -> list[tuple[str, str]]:
        root = os.path.join(self.local, "sessions")
        try:
            names = sorted(os.listdir(root))
        except OSError:
            return []
        out = []
        for sid in names:
            path = os.path.join(root, sid, "session.db")
            if os.path.isfile(path):
                out.append((sid, path))
        return out

    async def run(self) -> list[Problem]:
        return await trio.to_thread.run_sync(self.check_all)

    def check_all(self) -> list[Problem]:
        """Every database, synchronously (``run`` calls this in a worker thread)."""
        problems: list[Problem] = []
        sessions = self.session_dbs()
        for sid, path in sessions:
            problems += self._check_session(sid, path)
        project_dbs = 0
        for name in ("debug-records.db", "learned-memory.db"):
            path = os.path.join(self.local, name)
            if os.path.isfile(path):
                project_dbs += 1
                problems += self._check_project_db(name, path)
        self.counted = (len(sessions), project_dbs)
        return problems

    def found(self) -> str:
        sessions, project_dbs = self.counted
        running = sum(f == {"skipped": "running now"} for f in self.facts.values())
        text = (
            f"{sessions} session database(s) and {project_dbs} project database(s): "
            "integrity, schema, references, log replay"
        )
        return text + (f" ({running} running now, not opened)" if running else "")

    def _check_project_db(self, name: str, path: str) -> list[Problem]:
        try:
            facts, result = _introspect(path)
        except sqlite3.DatabaseError as exc:
            result = str(exc)
            facts = {}
        self.facts[name] = facts
        if result == "ok":
            return []
        return [
            Problem(
                issue(
                    f"{self.name}.{name}",
                    "warning",
                    f"{path} fails the integrity check: {result[:300]}",
                    f"Move {path} aside; air starts an empty one (it holds learned hints only).",
                    fix="quarantine the file",
                ),
                Fix(
                    f"quarantine {path}",
                    (path, quarantine_root(self.project_root)),
                    _async(lambda: f"moved to {quarantine(self.project_root, path)}"),
                ),
            )
        ]

    def _check_session(self, sid: str, path: str) -> list[Problem]:
        check = f"{self.name}.session.{sid}"
        if session_lock_held(self.project_root, sid):
            self.facts[sid] = {"skipped": "running now"}
            return []
        rebuild = Fix(
            f"rebuild session {sid} from its event log",
            (os.path.dirname(path), quarantine_root(self.project_root)),
            _async(lambda: rebuild_session_db(self.project_root, path)),
        )
        try:
            facts, result = _introspect(path)
        except sqlite3.DatabaseError as exc:
            facts, result = {}, str(exc)
        self.facts[sid] = facts
        if result != "ok":
            return [
                Problem(
                    issue(
                        check,
                        "blocking",
                        f"session database {path} is corrupt: {result[:300]}",
                        "Run `air doctor --fix`: it keeps the file in .air/local/quarantine and "
                        "rebuilds the session from the events that can still be read.",
                        fix="rebuild from the event log, quarantine the damaged file",
                    ),
                    rebuild,
                )
            ]
        missing = _schema_gaps(facts)
        if missing:
            return [
                Problem(
                    issue(
                        check,
                        "warning",
                        f"session database {path} lacks {', '.join(missing)}",
                        "Run `air doctor --fix` to rebuild it from its event log.",
                        fix="rebuild from the event log",
                    ),
                    rebuild,
                )
            ]
        return self._check_consistency(check, path, rebuild)

    def _check_consistency(self, check: str, path: str, rebuild: Fix) -> list[Problem]:
        from air.events.store import replay_events
        from air.store.integrity import dump_tables
        from air.store.repositories import SessionStore
        from air.store.session_db import open_session_database

        try:
            db = open_session_database(path, must_exist=True)
        except AirException as exc:
            return [Problem(issue(check, "blocking", exc.error.message, exc.user_action), rebuild)]
        try:
            store = SessionStore(db)
            orphans = store.referential_check()
            records = store.events.list_all()
            scratch = open_session_database(":memory:")
            try:
                try:
                    replay_events(records, scratch)
                    replayed = dump_tables(scratch)
                    drift = [t for t, rows in dump_tables(db).items() if rows != replayed[t]]
                except AirException as exc:
                    drift = [f"replay fails ({exc.error.message})"]
            finally:
                scratch.close()
            stale = snapshot_problems(check, path, db, rebuild)
        finally:
            db.close()
        problems = stale
        if not orphans.clean:
            shown = ", ".join(
                f"{v.table}.{v.column}={v.missing_id}" for v in orphans.violations[:5]
            )
            # a replay of the log gives the same tables: the log itself lacks what they refer to
            # (a salvaged log), and a rebuild would only make them again
            futile = not drift
            problems.append(
                Problem(
                    issue(
                        f"{check}.references",
                        "warning",
                        f"{len(orphans.violations)} dangling reference(s) in {path}: {shown}",
                        "The event log itself lacks the events these rows refer to (a damaged "
                        "log, rebuilt without its unreadable events); they are kept as they are."
                        if futile
                        else "Run `air doctor --fix` to rebuild the tables from the event log.",
                        fix=None if futile else "rebuild from the event log",
                    ),
                    None if futile else rebuild,
                )
            )
        if drift:
            problems.append(
                Problem(
                    issue(
                        f"{check}.projection",
                        "warning",
                        f"the tables of {path} differ from a replay of its log: {', '.join(drift)}",
                        "Run `air doctor --fix` to rebuild the tables from the event log.",
                        fix="rebuild from the event log",
                    ),
                    None if orphans.violations else rebuild,
                )
            )
        return problems


def _async(fn: Callable[[], str]) -> Callable[[], Any]:
    async def run() -> str:
        return fn()

    return run


def _introspect(path: str) -> tuple[dict[str, Any], str]:
    """Tables with their row counts and indexes (sqlite-utils) and ``integrity_check``.

    Raises:
        sqlite3.DatabaseError: the file is not a readable database.
    """
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        result = "\n".join(str(r[0]) for r in conn.execute("PRAGMA integrity_check"))
        db = sqlite_utils.Database(conn)
        tables = {}
        for name in db.table_names():
            table = db.table(name)
            tables[name] = {"rows": table.count, "indexes": sorted(i.name for i in table.indexes)}
        return {"tables": tables}, result
    finally:
        conn.close()


def _schema_gaps(facts: Mapping[str, Any]) -> list[str]:
    from air.store.schema import SESSION_INDEXES, SESSION_TABLES

    tables = facts.get("tables", {})
    gaps = [f"table {t}" for t in SESSION_TABLES if t not in tables]
    indexes = {i for t in tables.values() for i in t["indexes"]}
    for sql in SESSION_INDEXES:
        words = sql.split()
        name = words[words.index("EXISTS") + 1] if "EXISTS" in words else words[2]
        if name not in indexes:
            gaps.append(f"index {name}")
    return gaps


def _read_events(path: str) -> list[dict[str, Any]] | None:
    """The rows of a (possibly damaged) database's ``events`` table, or None."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("SELECT * FROM events ORDER BY seq")]
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def _remove_files(db_path: str) -> None:
    """A database file with its -wal and -shm, where they exist."""
    for leftover in (db_path, db_path + "-wal", db_path + "-shm"):
        if os.path.exists(leftover):
            os.unlink(leftover)


def rebuild_session_db(project_root: str, path: str) -> str:
    """Replay the readable events of ``path`` into a new database put in its place (a row that
    cannot be read or projected is left out, ``EventStore.salvage``); the old file (with its
    -wal/-shm) goes to quarantine. Returns what was done."""
    from air.events.store import EventStore
    from air.store.session_db import open_session_database

    records = _read_events(path)
    fresh = f"{path}.rebuild"
    _remove_files(fresh)
    replayed = 0
    skipped: list[int] = []
    if records:
        db = open_session_database(fresh)
        try:
            replayed, skipped = EventStore(db).salvage(records)
        except AirException:  # SQLite could not write the new file: nothing of it is kept
            replayed = 0
        finally:
            db.close()
    if not replayed:
        _remove_files(fresh)
    stamp = utc_now_iso().replace(":", "").replace(".", "")
    kept = quarantine(project_root, path, stamp)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(path + suffix):
            quarantine(project_root, path + suffix, stamp)
    if not replayed:
        return f"no readable event log; the damaged file is kept at {kept}"
    os.replace(fresh, path)
    left = ""
    if skipped:
        seqs = ", ".join(str(seq) for seq in skipped[:10]) + (", …" if len(skipped) > 10 else "")
        left = f" ({len(skipped)} unreadable or inconsistent left out: seq {seqs})"
    return f"rebuilt from {replayed} events{left}; the old file is kept at {kept}"
