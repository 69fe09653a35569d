"""Repositories over the session tables, the SessionStore aggregate and the FK-off checks.

Owns one thin repository per table (SDD §4.3, rows are ``dict[str, Any]`` whose keys are the
columns of ``air.store.schema``), ``SessionStore`` (all repositories + ``referential_check``),
``derive_command_status`` (SDD §4.4), ``OrphanReport`` (SDD §18.3) and ``dump_tables`` used to
compare databases. Every write validates the closed-enum columns (``assert_enum``) and runs
inside ``DatabaseManager.transaction`` (joining the caller's transaction when one is open).
Repositories hold no policy: the event projection decides what to write.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, Literal

from pydantic import Field

from air.contracts.error import AirException
from air.contracts.ids import Contract, empty_list
from air.store.db import DatabaseManager
from air.store.schema import DOMAIN_TABLES, SESSION_TABLES, check_row_enums

__all__ = [
    "AgentRepository",
    "ArtifactRepository",
    "CommandRunRepository",
    "CommandStatus",
    "DiagnosticRepository",
    "EventRepository",
    "EvidenceRepository",
    "MessageDraftRepository",
    "MessageRepository",
    "OrphanReport",
    "OrphanViolation",
    "Repository",
    "Row",
    "SessionRepository",
    "SessionStore",
    "SummaryRepository",
    "TaskAttemptRepository",
    "TaskDependencyRepository",
    "TaskRepository",
    "ToolRunRepository",
    "UiStateRepository",
    "WorkspaceRepository",
    "derive_command_status",
    "dump_tables",
]

Row = dict[str, Any]
CommandStatus = Literal["running", "ok", "error", "cancelled", "unknown"]


@functools.lru_cache(maxsize=512)
def _insert_sql(table: str, cols: tuple[str, ...]) -> str:
    return f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})"


@functools.lru_cache(maxsize=256)
def _insert_new_sql(table: str, cols: tuple[str, ...], pk: tuple[str, ...]) -> str:
    return f"{_insert_sql(table, cols)} ON CONFLICT({', '.join(pk)}) DO NOTHING"


@functools.lru_cache(maxsize=64)
def _pk_where(pk: tuple[str, ...]) -> str:
    return " AND ".join(f"{c} = ?" for c in pk)


@functools.lru_cache(maxsize=512)
def _update_sql(table: str, cols: tuple[str, ...], where: str, status_in: int = -1) -> str:
    """``UPDATE table SET c = ?, ... WHERE where`` (``AND status IN (?, ...)`` if given): one
    string per statement shape, so SQLite's statement cache prepares each shape once."""
    sql = f"UPDATE {table} SET {', '.join(f'{c} = ?' for c in cols)} WHERE {where}"
    if status_in >= 0:
        sql += f" AND status IN ({', '.join('?' for _ in range(status_in))})"
    return sql


def _rows(db: DatabaseManager, sql: str, params: Sequence[Any] = ()) -> list[Row]:
    return [dict(r) for r in db.query(sql, params)]


class Repository:
    """CRUD over one table keyed by ``pk`` (a column or a tuple of columns)."""

    table: str = ""
    pk: tuple[str, ...] = ("id",)
    order_by: str = "rowid"

    def __init__(self, db: DatabaseManager) -> None:
        self.db = db

    def _check(self, row: Mapping[str, Any]) -> None:
        check_row_enums(self.table, row)

    def _where_pk(self, key: Any) -> tuple[str, list[Any]]:
        values = list(key) if isinstance(key, tuple) else [key]
        if len(values) == 1 and len(self.pk) == 1:
            return _pk_where(self.pk), values
        if len(values) != len(self.pk):
            raise AirException.of(
                kind="system_error",
                message=f"{self.table}: key {key!r} does not match primary key {self.pk}",
                user_action="This is a bug in air: report it with `air doctor --bundle`.",
            )
        return _pk_where(self.pk), values

    def get(self, key: Any) -> Row | None:
        """Return the row with this primary key, or None."""
        where, params = self._where_pk(key)
        found = _rows(self.db, f"SELECT * FROM {self.table} WHERE {where}", params)
        return found[0] if found else None

    def list_all(self) -> list[Row]:
        """Every row of the table in insertion order."""
        return _rows(self.db, f"SELECT * FROM {self.table} ORDER BY {self.order_by}")

    def insert(self, row: Mapping[str, Any]) -> None:
        """Insert one row (enum columns validated).

        Raises:
            AirException: ``system_error`` for a bad enum value or a duplicate key.
        """
        self._check(row)
        cols = tuple(row)
        try:
            self.db.execute_write(_insert_sql(self.table, cols), [row[c] for c in cols])
        except sqlite3.IntegrityError as exc:
            raise AirException.of(
                kind="system_error",
                message=f"{self.table}: cannot insert row: {exc}",
                user_action="This is a bug in air: report it with `air doctor --bundle`.",
                metadata={"table": self.table},
            ) from exc

    def insert_new(self, row: Mapping[str, Any]) -> bool:
        """Insert one row unless its primary key exists; True when it was inserted (one
        statement instead of a read then an insert; other constraints still raise).

        Raises:
            AirException: ``system_error`` for a bad enum value or another constraint.
        """
        self._check(row)
        cols = tuple(row)
        try:
            cur = self.db.execute_write(
                _insert_new_sql(self.table, cols, self.pk), [row[c] for c in cols]
            )
        except sqlite3.IntegrityError as exc:
            raise AirException.of(
                kind="system_error",
                message=f"{self.table}: cannot insert row: {exc}",
                user_action="This is a bug in air: report it with `air doctor --bundle`.",
                metadata={"table": self.table},
            ) from exc
        return cur.rowcount == 1

    def update_unset(self, key: Any, patch: Mapping[str, Any], column: str) -> int:
        """``update`` restricted to a row whose ``column`` is NULL."""
        self._check(patch)
        where, params = self._where_pk(key)
        sql = _update_sql(self.table, tuple(patch), f"{where} AND {column} IS NULL")
        return self.db.execute_write(sql, [*patch.values(), *params]).rowcount

    def update(self, key: Any, patch: Mapping[str, Any]) -> int:
        """Update columns of the row with this key; return the number of rows changed."""
        if not patch:
            return 0
        self._check(patch)
        where, params = self._where_pk(key)
        sql = _update_sql(self.table, tuple(patch), where)
        return self.db.execute_write(sql, [*patch.values(), *params]).rowcount

    def update_if(
        self, key: Any, patch: Mapping[str, Any], *, status_in: tuple[str, ...] | None = None
    ) -> int:
        """``update`` restricted to rows whose ``status`` is in ``status_in`` (when given)."""
        if status_in is None:
            return self.update(key, patch)
        self._check(patch)
        where, params = self._where_pk(key)
        sql = _update_sql(self.table, tuple(patch), where, len(status_in))
        return self.db.execute_write(sql, [*patch.values(), *params, *status_in]).rowcount

    def delete(self, key: Any) -> int:
        """Delete the row with this key; return the number of rows removed."""
        where, params = self._where_pk(key)
        return self.db.execute_write(f"DELETE FROM {self.table} WHERE {where}", params).rowcount


class SessionRepository(Repository):
    table = "sessions"

    def list_active(self) -> list[Row]:
        return _rows(self.db, "SELECT * FROM sessions WHERE status = 'active' ORDER BY rowid")


class MessageRepository(Repository):
    table = "messages"
    order_by = "event_seq"

    def list_by_session(self, session_id: str, since: int | None = None) -> list[Row]:
        """Messages of a session in order; ``since`` is an event seq (exclusive)."""
        return _rows(
            self.db,
            "SELECT * FROM messages WHERE session_id = ? AND event_seq > ? ORDER BY event_seq",
            (session_id, since if since is not None else -1),
        )


class MessageDraftRepository(Repository):
    table = "message_drafts"
    pk = ("message_id",)

    def upsert(self, row: Mapping[str, Any]) -> None:
        """Insert the draft or replace the existing one for the same message."""
        self._check(row)
        cols = list(row)
        updates = ", ".join(f"{c} = excluded.{c}" for c in cols if c != "message_id")
        self.db.execute_write(
            f"INSERT INTO message_drafts ({', '.join(cols)}) "
            f"VALUES ({', '.join('?' for _ in cols)}) "
            f"ON CONFLICT(message_id) DO UPDATE SET {updates}",
            [row[c] for c in cols],
        )

    def delete_for_message(self, message_id: str) -> int:
        return self.delete(message_id)

    def list_by_session(self, session_id: str) -> list[Row]:
        """Drafts of a session (streaming or failed turns), oldest first."""
        return _rows(
            self.db,
            "SELECT * FROM message_drafts WHERE session_id = ? ORDER BY started_at, message_id",
            (session_id,),
        )


class EventRepository(Repository):
    table = "events"
    pk = ("seq",)
    order_by = "seq"

    def insert_record(self, record: Mapping[str, Any]) -> int:
        """Insert an events row and return its ``seq``.

        No enum re-check: the row is ``air.events.store.to_record`` of a validated
        ``RuntimeEvent``, whose ``source.kind`` (the table's one closed-enum column) the
        contract's ``EventSourceKind`` already guarantees (IMPL-LAUNCH-6)."""
        cols = tuple(record)
        cur = self.db.execute_write(_insert_sql("events", cols), [record[c] for c in cols])
        return int(cur.lastrowid or 0)

    def count(self) -> int:
        return int(self.db.conn.execute("SELECT count(*) FROM events").fetchone()[0])

    def max_seq(self) -> int:
        return int(self.db.conn.execute("SELECT coalesce(max(seq), 0) FROM events").fetchone()[0])


class TaskRepository(Repository):
    table = "tasks"

    def list_by_status(self, *statuses: str) -> list[Row]:
        marks = ", ".join("?" for _ in statuses)
        return _rows(
            self.db, f"SELECT * FROM tasks WHERE status IN ({marks}) ORDER BY rowid", statuses
        )

    def list_runnable_candidates(self) -> list[Row]:
        """Pending tasks whose every hard dependency is completed."""
        return _rows(
            self.db,
            """SELECT t.* FROM tasks t WHERE t.status = 'pending' AND NOT EXISTS (
                   SELECT 1 FROM task_dependencies d
                   LEFT JOIN tasks p ON p.id = d.depends_on_task_id
                   WHERE d.task_id = t.id AND d.dependency_type = 'hard'
                     AND (p.status IS NULL OR p.status != 'completed'))
               ORDER BY t.rowid""",
        )


class TaskDependencyRepository(Repository):
    table = "task_dependencies"
    pk = ("task_id", "depends_on_task_id")

    def list_for_task(self, task_id: str) -> list[Row]:
        return _rows(
            self.db, "SELECT * FROM task_dependencies WHERE task_id = ? ORDER BY rowid", (task_id,)
        )

    def list_dependents(self, task_id: str) -> list[Row]:
        return _rows(
            self.db,
            "SELECT * FROM task_dependencies WHERE depends_on_task_id = ? ORDER BY rowid",
            (task_id,),
        )


class TaskAttemptRepository(Repository):
    table = "task_attempts"
    pk = ("task_id", "attempt_index")

    def next_attempt_index(self, task_id: str) -> int:
        """1 for a task never started, else the highest attempt index + 1."""
        row = self.db.conn.execute(
            "SELECT coalesce(max(attempt_index), 0) FROM task_attempts WHERE task_id = ?",
            (task_id,),
        ).fetchone()
        return int(row[0]) + 1

    def list_by_task(self, task_id: str) -> list[Row]:
        return _rows(
            self.db,
            "SELECT * FROM task_attempts WHERE task_id = ? ORDER BY attempt_index",
            (task_id,),
        )

    def latest(self, task_id: str) -> Row | None:
        found = _rows(
            self.db,
            "SELECT * FROM task_attempts WHERE task_id = ? ORDER BY attempt_index DESC LIMIT 1",
            (task_id,),
        )
        return found[0] if found else None


class AgentRepository(Repository):
    table = "agents"

    def list_active(self) -> list[Row]:
        return _rows(
            self.db,
            "SELECT * FROM agents WHERE status IN ('starting', 'running') ORDER BY rowid",
        )

    def update_heartbeat(
        self, agent_id: str, *, at: str, state: str | None = None, turn: int = 0, tokens: int = 0
    ) -> int:
        """Fold an ``agent.heartbeat`` into the heartbeat columns (IMPL-EVT-4: not replayed)."""
        with self.db.transaction() as conn:
            n = conn.execute(
                "UPDATE agents SET last_heartbeat_at = ?, heartbeat_state = ?, "
                "heartbeat_turn = ?, heartbeat_tokens = ? WHERE id = ?",
                (at, state, turn, tokens, agent_id),
            ).rowcount
            conn.execute(
                "UPDATE tasks SET heartbeat_at = ? WHERE agent_id = ? AND status = 'running'",
                (at, agent_id),
            )
            return n


class ToolRunRepository(Repository):
    table = "tool_runs"

    def list_by_task(self, task_id: str) -> list[Row]:
        return _rows(
            self.db, "SELECT * FROM tool_runs WHERE task_id = ? ORDER BY rowid", (task_id,)
        )

    def list_by_origin_message(self, message_id: str) -> list[Row]:
        return _rows(
            self.db,
            "SELECT * FROM tool_runs WHERE origin_message_id = ? ORDER BY rowid",
            (message_id,),
        )


def derive_command_status(row: Mapping[str, Any]) -> CommandStatus:
    """The status of a command run, derived from its columns (SDD §4.4)."""
    if row.get("completed_at") is None:
        return "running"
    if row.get("cancelled_at") is not None:
        return "cancelled"
    exit_code = row.get("exit_code")
    if exit_code == 0:
        return "ok"
    if exit_code is not None:
        return "error"
    return "unknown"


class CommandRunRepository(Repository):
    table = "command_runs"

    def list_by_task(self, task_id: str) -> list[Row]:
        """Command runs of a task, each with its derived ``status``."""
        rows = _rows(
            self.db, "SELECT * FROM command_runs WHERE task_id = ? ORDER BY rowid", (task_id,)
        )
        return [{**r, "status": derive_command_status(r)} for r in rows]

    def status(self, command_run_id: str) -> CommandStatus | None:
        row = self.get(command_run_id)
        return None if row is None else derive_command_status(row)


class ArtifactRepository(Repository):
    table = "artifacts"
    pk = ("artifact_id",)

    _ENTITY_COLUMNS: ClassVar[dict[str, str]] = {
        "task": "task_id",
        "agent": "agent_id",
        "tool_run": "tool_run_id",
        "command_run": "command_run_id",
        "session": "session_id",
    }

    def list_by_entity(self, entity_type: str, entity_id: str) -> list[Row]:
        column = self._ENTITY_COLUMNS.get(str(entity_type))
        if column is None:
            return []
        return _rows(
            self.db, f"SELECT * FROM artifacts WHERE {column} = ? ORDER BY rowid", (entity_id,)
        )

    def get_by_uri(self, uri: str) -> Row | None:
        found = _rows(self.db, "SELECT * FROM artifacts WHERE uri = ?", (uri,))
        return found[0] if found else None


class DiagnosticRepository(Repository):
    table = "diagnostics"
    pk = ("diagnostic_id",)

    def list_by_signature(self, semantic_signature: str) -> list[Row]:
        return _rows(
            self.db,
            "SELECT * FROM diagnostics WHERE semantic_signature = ? ORDER BY rowid",
            (semantic_signature,),
        )

    def list_by_command_run(self, command_run_id: str) -> list[Row]:
        return _rows(
            self.db,
            "SELECT * FROM diagnostics WHERE command_run_id = ? ORDER BY rowid",
            (command_run_id,),
        )


class EvidenceRepository(Repository):
    table = "evidence_refs"
    pk = ("evidence_ref_id",)

    def list_for_entity(self, entity_type: str, entity_id: str) -> list[Row]:
        return _rows(
            self.db,
            "SELECT * FROM evidence_refs WHERE entity_type = ? AND entity_id = ? ORDER BY rowid",
            (str(entity_type), entity_id),
        )


class WorkspaceRepository(Repository):
    table = "workspaces"
    pk = ("workspace_id",)

    def list_by_status(self, *statuses: str) -> list[Row]:
        marks = ", ".join("?" for _ in statuses)
        return _rows(
            self.db,
            f"SELECT * FROM workspaces WHERE status IN ({marks}) ORDER BY rowid",
            statuses,
        )

    def list_gc_candidates(
        self,
        now: str,
        *,
        merged_retention: timedelta = timedelta(days=7),
        abandoned_retention: timedelta = timedelta(days=3),
    ) -> list[Row]:
        """Merged workspaces older than 7 d and abandoned ones older than 3 d (SDD §7.5)."""
        ref = datetime.fromisoformat(now.replace("Z", "+00:00")).astimezone(UTC)

        def cutoff(delta: timedelta) -> str:
            return (ref - delta).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

        return _rows(
            self.db,
            "SELECT * FROM workspaces WHERE (status = 'merged' AND merged_at < ?) "
            "OR (status = 'abandoned' AND abandoned_at < ?) ORDER BY rowid",
            (cutoff(merged_retention), cutoff(abandoned_retention)),
        )


class SummaryRepository(Repository):
    table = "summaries"
    pk = ("summary_id",)


class UiStateRepository(Repository):
    table = "ui_state"
    pk = ("scope", "key")

    def upsert(self, scope: str, key: str, value: Any, *, updated_at: str) -> None:
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO ui_state(scope, key, value_json, updated_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(scope, key) DO UPDATE SET value_json = excluded.value_json, "
                "updated_at = excluded.updated_at",
                (scope, key, json.dumps(value), updated_at),
            )

    def read(self, scope: str, key: str) -> Any | None:
        row = self.get((scope, key))
        return None if row is None else json.loads(row["value_json"])


class OrphanViolation(Contract):
    invariant: int
    """1-8, the numbering of SDD §18.3."""
    table: str
    column: str
    row_key: str
    missing_id: str


class OrphanReport(Contract):
    violations: list[OrphanViolation] = Field(default_factory=empty_list)

    @property
    def clean(self) -> bool:
        return not self.violations


# (invariant, child table, child key column, fk column, parent table, parent key)
_FK_CHECKS: tuple[tuple[int, str, str, str, str, str], ...] = (
    (1, "tasks", "id", "session_id", "sessions", "id"),
    (2, "task_attempts", "task_id || '#' || attempt_index", "task_id", "tasks", "id"),
    (3, "agents", "id", "task_id", "tasks", "id"),
    (4, "tool_runs", "id", "task_id", "tasks", "id"),
    (4, "tool_runs", "id", "agent_id", "agents", "id"),
    (5, "command_runs", "id", "task_id", "tasks", "id"),
    (5, "command_runs", "id", "agent_id", "agents", "id"),
    (5, "command_runs", "id", "tool_run_id", "tool_runs", "id"),
    (6, "workspaces", "workspace_id", "task_id", "tasks", "id"),
    (6, "workspaces", "workspace_id", "agent_id", "agents", "id"),
    (7, "diagnostics", "diagnostic_id", "command_run_id", "command_runs", "id"),
    (7, "diagnostics", "diagnostic_id", "artifact_id", "artifacts", "artifact_id"),
)

_EVIDENCE_PARENTS: dict[str, tuple[str, str]] = {
    "session": ("sessions", "id"),
    "message": ("messages", "id"),
    "task": ("tasks", "id"),
    "agent": ("agents", "id"),
    "tool_run": ("tool_runs", "id"),
    "command_run": ("command_runs", "id"),
    "artifact": ("artifacts", "artifact_id"),
    "diagnostic": ("diagnostics", "diagnostic_id"),
    "workspace": ("workspaces", "workspace_id"),
    "summary": ("summaries", "summary_id"),
}


class SessionStore:
    """All repositories of one session database (SDD §4.3) plus ``referential_check``."""

    def __init__(self, db: DatabaseManager) -> None:
        self.db = db
        self.sessions = SessionRepository(db)
        self.messages = MessageRepository(db)
        self.message_drafts = MessageDraftRepository(db)
        self.events = EventRepository(db)
        self.tasks = TaskRepository(db)
        self.task_dependencies = TaskDependencyRepository(db)
        self.task_attempts = TaskAttemptRepository(db)
        self.agents = AgentRepository(db)
        self.tool_runs = ToolRunRepository(db)
        self.command_runs = CommandRunRepository(db)
        self.artifacts = ArtifactRepository(db)
        self.diagnostics = DiagnosticRepository(db)
        self.evidence = EvidenceRepository(db)
        self.workspaces = WorkspaceRepository(db)
        self.summaries = SummaryRepository(db)
        self.ui_state = UiStateRepository(db)

    def referential_check(self) -> OrphanReport:
        """Check the 8 FK-off invariants of SDD §18.3 (nullable columns only when set).

        Returns:
            An OrphanReport; ``report.clean`` is True when nothing dangles. Repair (re-parent
            or archive) is the recovery service's decision, not this read-only check's.
        """
        violations: list[OrphanViolation] = []
        for inv, table, key, column, parent, parent_key in _FK_CHECKS:
            sql = (
                f"SELECT {key} AS k, c.{column} AS m FROM {table} c "
                f"WHERE c.{column} IS NOT NULL AND NOT EXISTS "
                f"(SELECT 1 FROM {parent} p WHERE p.{parent_key} = c.{column})"
            )
            for row in self.db.query(sql):
                violations.append(
                    OrphanViolation(
                        invariant=inv,
                        table=table,
                        column=column,
                        row_key=str(row["k"]),
                        missing_id=str(row["m"]),
                    )
                )
        for entity_type, (parent, parent_key) in _EVIDENCE_PARENTS.items():
            sql = (
                "SELECT evidence_ref_id AS k, entity_id AS m FROM evidence_refs c "
                "WHERE entity_type = ? AND NOT EXISTS "
                f"(SELECT 1 FROM {parent} p WHERE p.{parent_key} = c.entity_id)"
            )
            for row in self.db.query(sql, (entity_type,)):
                violations.append(
                    OrphanViolation(
                        invariant=8,
                        table="evidence_refs",
                        column="entity_id",
                        row_key=str(row["k"]),
                        missing_id=str(row["m"]),
                    )
                )
        return OrphanReport(violations=violations)


def dump_tables(
    db: DatabaseManager, tables: Iterable[str] = DOMAIN_TABLES
) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every named table, ordered by all columns (for exact comparison)."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    for table in tables:
        if table not in SESSION_TABLES:
            raise AirException.of(
                kind="system_error",
                message=f"unknown table {table!r}",
                user_action="Use one of the names in air.store.schema.SESSION_TABLES.",
            )
        cols = [r[1] for r in db.conn.execute(f"PRAGMA table_info({table})")]
        order = ", ".join(str(i + 1) for i in range(len(cols)))
        out[table] = [tuple(r) for r in db.conn.execute(f"SELECT * FROM {table} ORDER BY {order}")]
    return out
