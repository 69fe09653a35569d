"""Opening a session database or a project knowledge database with its schema applied.

Owns ``SESSION_SCHEMA`` (session.db v1: the SDD's tables and the read model's),
``DEBUG_RECORDS_SCHEMA`` (debug-records.db v1), ``LEARNED_MEMORY_SCHEMA`` (learned-memory.db
v1, with ``memory_outbox``: which session performed each promotion / archival, IMPL-LEARN-2)
and the ``open_*`` helpers that open the file (``DatabaseManager.open``) and migrate it
(``MigrationRunner``).
"""

from __future__ import annotations

import os

from air.contracts.error import AirException
from air.store.db import DatabaseManager, MigrationRunner, SchemaSpec
from air.store.read_model import READ_MODEL_INDEXES, READ_MODEL_TABLES
from air.store.schema import SCHEMA_VERSION, SESSION_INDEXES, SESSION_TABLES

__all__ = [
    "DEBUG_RECORDS_SCHEMA",
    "LEARNED_MEMORY_SCHEMA",
    "SESSION_SCHEMA",
    "open_database",
    "open_session_database",
]

SESSION_SCHEMA = SchemaSpec(
    name="session",
    version=SCHEMA_VERSION,
    tables={**SESSION_TABLES, **READ_MODEL_TABLES},
    indexes=[*SESSION_INDEXES, *READ_MODEL_INDEXES],
)
"""The SDD's 17 tables and the read model (``air.store.read_model``: summary row, fold
snapshots); an older session.db gains the read model's tables on its next open."""

_META = SESSION_TABLES["schema_meta"]

DEBUG_RECORDS_SCHEMA = SchemaSpec(
    name="debug-records",
    version=1,
    tables={
        "schema_meta": _META,
        "debug_records": """CREATE TABLE IF NOT EXISTS debug_records (
            debug_record_id TEXT PRIMARY KEY,
            failure_signature TEXT NOT NULL,
            task_id TEXT,
            session_id TEXT,
            diagnosis TEXT NOT NULL,
            root_cause TEXT,
            fix_summary TEXT,
            fixed INTEGER NOT NULL DEFAULT 0,
            hit_count INTEGER NOT NULL DEFAULT 0,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            metadata_json TEXT)""",
    },
    indexes=[
        "CREATE INDEX IF NOT EXISTS idx_debug_signature ON debug_records(failure_signature)",
        "CREATE INDEX IF NOT EXISTS idx_debug_task ON debug_records(task_id)",
    ],
)

LEARNED_MEMORY_SCHEMA = SchemaSpec(
    name="learned-memory",
    version=1,
    tables={
        "schema_meta": _META,
        "learned_memories": """CREATE TABLE IF NOT EXISTS learned_memories (
            memory_id TEXT PRIMARY KEY,
            memory_type TEXT NOT NULL,
            status TEXT NOT NULL,
            content TEXT NOT NULL,
            source_session_id TEXT,
            occurrences INTEGER NOT NULL DEFAULT 1,
            target_ref TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            last_used_at TEXT)""",
        "memory_outbox": """CREATE TABLE IF NOT EXISTS memory_outbox (
            memory_id TEXT NOT NULL,
            action TEXT NOT NULL,
            session_id TEXT NOT NULL,
            candidate_id TEXT,
            target_ref TEXT,
            detail TEXT,
            created_at TEXT NOT NULL,
            PRIMARY KEY (memory_id, action))""",
    },
    indexes=[
        "CREATE INDEX IF NOT EXISTS idx_memory_type ON learned_memories(memory_type, status)",
        "CREATE INDEX IF NOT EXISTS idx_memory_status ON learned_memories(status)",
    ],
)


def open_database(
    path: str | os.PathLike[str], spec: SchemaSpec, *, must_exist: bool = False
) -> DatabaseManager:
    """Open ``path`` and migrate it to ``spec`` (closing it again when migration fails). A new
    file gets the schema in one transaction before its switch to WAL
    (``MigrationRunner.create``, IMPL-BOOT-13); an existing one is migrated.

    Raises:
        AirException: ``corrupt_database``, ``schema_error``, ``not_found`` or ``storage_error``.
    """
    runner = MigrationRunner(spec)
    db = DatabaseManager.open(path, must_exist=must_exist, create=runner)
    if db.created:
        return db
    try:
        runner.migrate(db)
    except AirException:
        db.close()
        raise
    return db


def open_session_database(
    path: str | os.PathLike[str], *, must_exist: bool = False
) -> DatabaseManager:
    """Open a ``session.db`` and bring it to schema_version 1."""
    return open_database(path, SESSION_SCHEMA, must_exist=must_exist)
