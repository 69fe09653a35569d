"""The project knowledge stores: DebugKnowledgeStore and LearnedMemoryStore (SDD §11.3).

Owns the two project databases under ``.air/local``: ``debug-records.db`` (table
``debug_records``) and ``learned-memory.db`` (table ``learned_memories``), each migrated to its
schema_version 1 (learned-memory.db also holds ``memory_outbox``: which session performed each
promotion and archival). These are cross-store writes (SDD §18.4): the owning store writes here
first, then its caller ingests the session-side completion event (``debug.record.created``,
``memory.promoted``, ``memory.archived``); nothing in this module touches a session DB.
"""

import hashlib
import json
import os
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, Self

from air.artifacts.rules import one_line
from air.contracts.artifact_records import DebugRecord, LearnedMemory, MemoryStatus, MemoryType
from air.contracts.error import AirException
from air.contracts.ids import Clock, Contract, SystemClock
from air.contracts.project import ProjectContext
from air.store.db import DatabaseManager, SchemaSpec
from air.store.session_db import DEBUG_RECORDS_SCHEMA, LEARNED_MEMORY_SCHEMA, open_database

__all__ = [
    "RECORD_TEXT_MAX",
    "DebugKnowledgeStore",
    "LearnedMemoryStore",
    "MemoryAction",
    "OutboxRow",
    "bounded_text",
    "candidate_id_for_signature",
    "candidate_id_for_statement",
    "debug_record_id",
    "memory_id_for",
]

RECORD_TEXT_MAX = 2000
"""A worker-written DebugRecord field is cut to this many characters (IMPL-LEARN-1)."""

MemoryAction = Literal["promoted", "archived"]


_OUTBOX_COLUMNS = (
    "memory_id",
    "action",
    "session_id",
    "candidate_id",
    "target_ref",
    "detail",
    "created_at",
)


class OutboxRow(Contract):
    """A ``memory_outbox`` row: one promotion or archival and the session that performed it."""

    memory_id: str
    action: MemoryAction
    session_id: str
    candidate_id: str | None = None
    target_ref: str | None = None
    detail: str | None = None
    created_at: str


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:24]


def debug_record_id(session_id: str, debug_task_id: str) -> str:
    return f"dbg_{_digest(session_id, debug_task_id)}"


def candidate_id_for_signature(signature: str) -> str:
    return f"cand_sig_{_digest('signature', signature)}"


def candidate_id_for_statement(memory_type: MemoryType, text: str) -> str:
    return f"cand_min_{_digest(memory_type.value, one_line(text).casefold())}"


def memory_id_for(candidate_id: str) -> str:
    return "mem_" + candidate_id.removeprefix("cand_")


def bounded_text(value: object, limit: int = RECORD_TEXT_MAX) -> str:
    """A worker-written field of a DebugRecord as bounded text."""
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _bad(message: str) -> AirException:
    return AirException.of(
        kind="validation_error",
        message=message,
        user_action="Pass an existing record id and only the fields the record has.",
    )


class _ProjectDatabase:
    """One project-level database file under ``.air/local`` with its own schema."""

    FILENAME: str
    SCHEMA: SchemaSpec

    def __init__(self, db: DatabaseManager, *, clock: Clock | None = None) -> None:
        self.db = db
        self.clock = clock or SystemClock()

    @classmethod
    def open(
        cls, where: ProjectContext | str | os.PathLike[str], *, clock: Clock | None = None
    ) -> Self:
        """Open ``<local_root>/<FILENAME>`` of a project (or the given file path)."""
        path = (
            Path(where.local_root) / cls.FILENAME
            if isinstance(where, ProjectContext)
            else Path(where)
        )
        return cls(open_database(path, cls.SCHEMA), clock=clock)

    def close(self) -> None:
        self.db.close()


class DebugKnowledgeStore(_ProjectDatabase):
    """``debug-records.db``: what was diagnosed and fixed, keyed by failure signature."""

    _PATCHABLE = frozenset(
        {"diagnosis", "root_cause", "fix_summary", "fixed", "hit_count", "metadata", "task_id"}
    )

    FILENAME = "debug-records.db"
    SCHEMA = DEBUG_RECORDS_SCHEMA

    @staticmethod
    def _row(record: DebugRecord) -> dict[str, Any]:
        row = record.model_dump(mode="json")
        row["fixed"] = int(record.fixed)
        row["metadata_json"] = (
            json.dumps(row.pop("metadata")) if record.metadata is not None else None
        )
        row.pop("metadata", None)
        return row

    @staticmethod
    def _record(row: Mapping[str, Any]) -> DebugRecord:
        data = dict(row)
        data["fixed"] = bool(data["fixed"])
        meta = data.pop("metadata_json")
        data["metadata"] = json.loads(meta) if meta is not None else None
        return DebugRecord.model_validate(data)

    def insert(self, record: DebugRecord) -> None:
        """Insert a record (``validation_error`` when the id exists)."""
        row = self._row(record)
        cols = list(row)
        with self.db.transaction() as conn:
            if conn.execute(
                "SELECT 1 FROM debug_records WHERE debug_record_id = ?", (record.debug_record_id,)
            ).fetchone():
                raise _bad(f"debug record {record.debug_record_id} already exists")
            conn.execute(
                f"INSERT INTO debug_records ({', '.join(cols)}) "
                f"VALUES ({', '.join('?' for _ in cols)})",
                [row[c] for c in cols],
            )

    def insert_if_absent(self, record: DebugRecord) -> bool:
        """Insert a record unless its id exists (the outbox replay path); True when inserted."""
        row = self._row(record)
        cols = list(row)
        with self.db.transaction() as conn:
            n = conn.execute(
                f"INSERT OR IGNORE INTO debug_records ({', '.join(cols)}) "
                f"VALUES ({', '.join('?' for _ in cols)})",
                [row[c] for c in cols],
            ).rowcount
        return n > 0

    def lookup_by_session(self, session_id: str) -> list[DebugRecord]:
        return self._select("session_id", session_id)

    def _select(self, where: str, value: str) -> list[DebugRecord]:
        rows = self.db.query(
            f"SELECT * FROM debug_records WHERE {where} = ? ORDER BY created_at, rowid", (value,)
        )
        return [self._record(dict(r)) for r in rows]

    def get(self, debug_record_id: str) -> DebugRecord | None:
        found = self._select("debug_record_id", debug_record_id)
        return found[0] if found else None

    def lookup_by_signature(self, failure_signature: str) -> list[DebugRecord]:
        return self._select("failure_signature", failure_signature)

    def lookup_by_task(self, task_id: str) -> list[DebugRecord]:
        return self._select("task_id", task_id)

    def update(self, debug_record_id: str, patch: Mapping[str, Any]) -> None:
        """Change some fields of a record and bump ``updated_at``.

        Raises:
            AirException: ``validation_error`` for an unknown id or field.
        """
        unknown = set(patch) - self._PATCHABLE
        if unknown:
            raise _bad(f"cannot update debug record fields {sorted(unknown)}")
        values = dict(patch)
        if "metadata" in values:
            values["metadata_json"] = json.dumps(values.pop("metadata"))
        if "fixed" in values:
            values["fixed"] = int(bool(values["fixed"]))
        values["updated_at"] = self.clock.now_iso()
        sets = ", ".join(f"{c} = ?" for c in values)
        with self.db.transaction() as conn:
            n = conn.execute(
                f"UPDATE debug_records SET {sets} WHERE debug_record_id = ?",
                [*values.values(), debug_record_id],
            ).rowcount
            if n == 0:
                raise _bad(f"no debug record {debug_record_id}")


class LearnedMemoryStore(_ProjectDatabase):
    """``learned-memory.db``: rules, skills, preferences and facts learned across sessions."""

    FILENAME = "learned-memory.db"
    SCHEMA = LEARNED_MEMORY_SCHEMA

    def insert(self, memory: LearnedMemory) -> None:
        """Insert a memory (``validation_error`` when the id exists)."""
        row = memory.model_dump(mode="json")
        cols = list(row)
        with self.db.transaction() as conn:
            if conn.execute(
                "SELECT 1 FROM learned_memories WHERE memory_id = ?", (memory.memory_id,)
            ).fetchone():
                raise _bad(f"memory {memory.memory_id} already exists")
            conn.execute(
                f"INSERT INTO learned_memories ({', '.join(cols)}) "
                f"VALUES ({', '.join('?' for _ in cols)})",
                [row[c] for c in cols],
            )

    def record_action(
        self,
        action: MemoryAction,
        *,
        memory: LearnedMemory | None = None,
        memory_id: str | None = None,
        session_id: str,
        candidate_id: str | None = None,
        detail: str | None = None,
    ) -> OutboxRow:
        """One transaction: the external write of a promotion or archival plus its outbox row.

        ``promoted``: insert ``memory`` unless its id exists (a ``candidate`` row takes its
        status). ``archived``: set ``memory_id``'s
        status to archived. Either way the ``memory_outbox`` row (memory, action) is inserted
        unless it exists, and the row that is stored afterwards is returned: its
        ``session_id`` says which session owns the completion event, so a replay or a second
        session never performs (or announces) the same promotion twice.

        Raises:
            AirException: ``validation_error`` for an unknown memory id (archival).
        """
        mid = memory.memory_id if memory is not None else memory_id
        if mid is None:
            raise _bad("record_action needs a memory or a memory id")
        now = self.clock.now_iso()
        with self.db.transaction() as conn:
            if action == "promoted":
                if memory is None:
                    raise _bad("a promotion needs the memory to insert")
                row = memory.model_dump(mode="json")
                cols = list(row)
                conn.execute(
                    f"INSERT OR IGNORE INTO learned_memories ({', '.join(cols)}) "
                    f"VALUES ({', '.join('?' for _ in cols)})",
                    [row[c] for c in cols],
                )
                conn.execute(  # a proposed candidate's row becomes the memory (IMPL-LEARN-6)
                    "UPDATE learned_memories SET status = ?, target_ref = ?, occurrences = ?, "
                    "updated_at = ? WHERE memory_id = ? AND status = 'candidate'",
                    (memory.status.value, memory.target_ref, memory.occurrences, now, mid),
                )
            else:
                n = conn.execute(
                    "UPDATE learned_memories SET status = 'archived', updated_at = ? "
                    "WHERE memory_id = ? AND status != 'archived'",
                    (now, mid),
                ).rowcount
                if (
                    n == 0
                    and not conn.execute(
                        "SELECT 1 FROM learned_memories WHERE memory_id = ?", (mid,)
                    ).fetchone()
                ):
                    raise _bad(f"no memory {mid}")
            target = conn.execute(
                "SELECT target_ref FROM learned_memories WHERE memory_id = ?", (mid,)
            ).fetchone()[0]
            conn.execute(
                "INSERT OR IGNORE INTO memory_outbox (memory_id, action, session_id, "
                "candidate_id, target_ref, detail, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (mid, action, session_id, candidate_id, target, detail, now),
            )
            stored = conn.execute(
                f"SELECT {', '.join(_OUTBOX_COLUMNS)} FROM memory_outbox "
                "WHERE memory_id = ? AND action = ?",
                (mid, action),
            ).fetchone()
        return OutboxRow.model_validate(dict(zip(_OUTBOX_COLUMNS, stored, strict=True)))

    def outbox(self, *, session_id: str | None = None) -> list[OutboxRow]:
        """The outbox rows (of one session), oldest first."""
        if session_id is None:
            rows = self.db.query("SELECT * FROM memory_outbox ORDER BY created_at, rowid", ())
        else:
            rows = self.db.query(
                "SELECT * FROM memory_outbox WHERE session_id = ? ORDER BY created_at, rowid",
                (session_id,),
            )
        return [OutboxRow.model_validate(dict(r)) for r in rows]

    def _list(self, sql: str, params: tuple[Any, ...]) -> list[LearnedMemory]:
        return [LearnedMemory.model_validate(dict(r)) for r in self.db.query(sql, params)]

    def get(self, memory_id: str) -> LearnedMemory | None:
        found = self._list("SELECT * FROM learned_memories WHERE memory_id = ?", (memory_id,))
        return found[0] if found else None

    def lookup_by_type(
        self, memory_type: MemoryType | str, *, status: MemoryStatus | str | None = None
    ) -> list[LearnedMemory]:
        """Memories of one type (optionally one status), oldest first."""
        kind = MemoryType(memory_type).value
        if status is None:
            return self._list(
                "SELECT * FROM learned_memories WHERE memory_type = ? ORDER BY created_at, rowid",
                (kind,),
            )
        return self._list(
            "SELECT * FROM learned_memories WHERE memory_type = ? AND status = ? "
            "ORDER BY created_at, rowid",
            (kind, MemoryStatus(status).value),
        )

    def update_status(self, memory_id: str, status: MemoryStatus | str) -> None:
        """Set a memory's status (closed enum checked) and bump ``updated_at``."""
        try:
            value = MemoryStatus(status).value
        except ValueError as exc:
            raise _bad(f"invalid memory status {status!r}") from exc
        with self.db.transaction() as conn:
            n = conn.execute(
                "UPDATE learned_memories SET status = ?, updated_at = ? WHERE memory_id = ?",
                (value, self.clock.now_iso(), memory_id),
            ).rowcount
            if n == 0:
                raise _bad(f"no memory {memory_id}")

    def mark_used(self, memory_id: str) -> None:
        """Record that a memory was put into a prompt now."""
        with self.db.transaction() as conn:
            conn.execute(
                "UPDATE learned_memories SET last_used_at = ? WHERE memory_id = ?",
                (self.clock.now_iso(), memory_id),
            )

    def scan_stale(self, *, max_age: timedelta = timedelta(days=90)) -> list[LearnedMemory]:
        """Active memories not used (or, never used, not updated) within ``max_age``."""
        now = datetime.fromisoformat(self.clock.now_iso().replace("Z", "+00:00"))
        cutoff = (now.astimezone(UTC) - max_age).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        return self._list(
            "SELECT * FROM learned_memories WHERE status = 'active' "
            "AND coalesce(last_used_at, updated_at) < ? ORDER BY created_at, rowid",
            (cutoff,),
        )
