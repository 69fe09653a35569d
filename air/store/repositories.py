"""The repositories of the session tables and the SessionStore aggregate (SDD §4.3).

Owns one thin repository per table (each a ``Repository`` of ``air.store.repository`` plus its
queries), ``derive_command_status`` (SDD §4.4: ``command_runs`` has no status column) and
``SessionStore``, every repository of one session database. Every write validates the
closed-enum columns and runs inside ``DatabaseManager.transaction`` (joining the caller's
transaction when one is open). Repositories hold no policy: the event projection decides what
to write.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar, Literal

from air.store.db import DatabaseManager
from air.store.integrity import OrphanReport, referential_check
from air.store.repository import Repository, Row, insert_sql, select_rows

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
]

CommandStatus = Literal["running", "ok", "error", "cancelled", "unknown"]


class SessionRepository(Repository):
    table = "sessions"

    def list_active(self) -> list[Row]:
        return select_rows(self.db, "SELECT * FROM sessions WHERE status = 'active' ORDER BY rowid")


class MessageRepository(Repository):
    table = "messages"
    order_by = "event_seq"

    def list_by_session(self, session_id: str, since: int | None = None) -> list[Row]:
        """Messages of a session in order; ``since`` is an event seq (exclusive)."""
        return select_rows(
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
        return select_rows(
            self.db,
            "SELECT * FROM message_drafts WHERE session_id = ? ORDER BY started_at, message_id",
            (session_id,),
        )


class EventRepository(Repository):
    table = "events"
    pk = ("seq",)
    order_by = "seq"

    def insert_rows(self, columns: tuple[str, ...], rows: Sequence[Sequence[Any]]) -> None:
        """Insert events rows, each holding ``columns`` (``seq`` included) in that order, with
        one ``executemany`` (``EventStore``'s appends and replay, IMPL-BATCH-1).

        No enum re-check: each row is ``air.events.store.to_row`` of a validated
        ``RuntimeEvent``, whose ``source.kind`` (the table's one closed-enum column) the
        contract's ``EventSourceKind`` already guarantees (IMPL-LAUNCH-6)."""
        self.db.conn.executemany(insert_sql("events", columns), rows)

    def next_seq(self) -> int:
        """The ``seq`` SQLite's AUTOINCREMENT would give the next events row: one past both
        the highest ever handed out (``sqlite_sequence``) and the highest stored."""
        row = self.db.conn.execute(
            "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0),"
            " coalesce((SELECT max(seq) FROM events), 0))"
        ).fetchone()
        return int(row[0]) + 1

    def count(self) -> int:
        return int(self.db.conn.execute("SELECT count(*) FROM events").fetchone()[0])

    def max_seq(self) -> int:
        return int(self.db.conn.execute("SELECT coalesce(max(seq), 0) FROM events").fetchone()[0])


class TaskRepository(Repository):
    table = "tasks"

    def list_by_status(self, *statuses: str) -> list[Row]:
        marks = ", ".join("?" for _ in statuses)
        return select_rows(
            self.db, f"SELECT * FROM tasks WHERE status IN ({marks}) ORDER BY rowid", statuses
        )

    def list_runnable_candidates(self) -> list[Row]:
        """Pending tasks whose every hard dependency is completed."""
        return select_rows(
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
        return select_rows(
            self.db, "SELECT * FROM task_dependencies WHERE task_id = ? ORDER BY rowid", (task_id,)
        )

    def list_dependents(self, task_id: str) -> list[Row]:
        return select_rows(
            self.db,
            "SELECT * FROM task_dependencies WHERE depends_on_task_id = ? ORDER BY rowid",
            (task_id,),
        )


_LATEST_RUNNING = (
    "task_id = ? AND status = 'running' AND attempt_index ="
    " (SELECT max(attempt_index) FROM task_attempts WHERE task_id = ?)"
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

    def update_latest_running(self, task_id: str, patch: Mapping[str, Any]) -> int:
        """``update`` of the task's latest attempt (the highest index) while it is running, in
        one statement."""
        return self.update_where(patch, _LATEST_RUNNING, (task_id, task_id))

    def list_by_task(self, task_id: str) -> list[Row]:
        return select_rows(
            self.db,
            "SELECT * FROM task_attempts WHERE task_id = ? ORDER BY attempt_index",
            (task_id,),
        )


class AgentRepository(Repository):
    table = "agents"

    def list_active(self) -> list[Row]:
        return select_rows(
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
        return select_rows(
            self.db, "SELECT * FROM tool_runs WHERE task_id = ? ORDER BY rowid", (task_id,)
        )

    def list_by_origin_message(self, message_id: str) -> list[Row]:
        return select_rows(
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
        rows = select_rows(
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
        return select_rows(
            self.db, f"SELECT * FROM artifacts WHERE {column} = ? ORDER BY rowid", (entity_id,)
        )

    def get_by_uri(self, uri: str) -> Row | None:
        found = select_rows(self.db, "SELECT * FROM artifacts WHERE uri = ?", (uri,))
        return found[0] if found else None


class DiagnosticRepository(Repository):
    table = "diagnostics"
    pk = ("diagnostic_id",)

    def list_by_signature(self, semantic_signature: str) -> list[Row]:
        return select_rows(
            self.db,
            "SELECT * FROM diagnostics WHERE semantic_signature = ? ORDER BY rowid",
            (semantic_signature,),
        )

    def list_by_command_run(self, command_run_id: str) -> list[Row]:
        return select_rows(
            self.db,
            "SELECT * FROM diagnostics WHERE command_run_id = ? ORDER BY rowid",
            (command_run_id,),
        )


class EvidenceRepository(Repository):
    table = "evidence_refs"
    pk = ("evidence_ref_id",)

    def list_for_entity(self, entity_type: str, entity_id: str) -> list[Row]:
        return select_rows(
            self.db,
            "SELECT * FROM evidence_refs WHERE entity_type = ? AND entity_id = ? ORDER BY rowid",
            (str(entity_type), entity_id),
        )


class WorkspaceRepository(Repository):
    table = "workspaces"
    pk = ("workspace_id",)

    def list_by_status(self, *statuses: str) -> list[Row]:
        marks = ", ".join("?" for _ in statuses)
        return select_rows(
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

        return select_rows(
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
        """The FK-off invariants of SDD §18.3 over this database (``air.store.integrity``)."""
        return referential_check(self.db)
