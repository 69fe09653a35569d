"""Session and project SQLite storage: DatabaseManager, MigrationRunner, repositories, SessionStore,
referential_check and the project knowledge databases (SDD §4, §18.2-18.3).

Import from the submodules: ``air.store.db``, ``air.store.schema``, ``air.store.repository``,
``air.store.repositories``, ``air.store.integrity``, ``air.store.session_db``. This package file
re-exports the main names and has no side effects.
"""

from air.store.db import DatabaseManager, MigrationRunner, SchemaSpec
from air.store.integrity import OrphanReport, OrphanViolation, dump_tables
from air.store.repositories import SessionStore, derive_command_status
from air.store.schema import DOMAIN_TABLES, SCHEMA_VERSION, assert_enum
from air.store.session_db import (
    DEBUG_RECORDS_SCHEMA,
    LEARNED_MEMORY_SCHEMA,
    SESSION_SCHEMA,
    open_database,
    open_session_database,
)

__all__ = [
    "DEBUG_RECORDS_SCHEMA",
    "DOMAIN_TABLES",
    "LEARNED_MEMORY_SCHEMA",
    "SCHEMA_VERSION",
    "SESSION_SCHEMA",
    "DatabaseManager",
    "MigrationRunner",
    "OrphanReport",
    "OrphanViolation",
    "SchemaSpec",
    "SessionStore",
    "assert_enum",
    "derive_command_status",
    "dump_tables",
    "open_database",
    "open_session_database",
]
