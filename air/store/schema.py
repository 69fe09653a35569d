"""The session database schema v1: the 17 tables, their indexes and the 18 closed-enum columns.

Owns ``SCHEMA_VERSION``, ``SESSION_TABLES`` (name → CREATE TABLE), ``SESSION_INDEXES``,
``DOMAIN_TABLES`` (the event-projected tables compared by replay), ``ENUM_COLUMNS`` (db-schema
§21, IMPL-STORE-2) and ``assert_enum`` (SDD §4.5). Column SQL types: ids, timestamps, enums and
JSON are TEXT; counters, sizes, exit codes, durations and booleans are INTEGER (IMPL-STORE-1).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from air.contracts.artifact import ArtifactType
from air.contracts.error import AirException
from air.contracts.event import EntityType
from air.contracts.evidence import EvidenceKind
from air.contracts.project import SessionStatus
from air.contracts.runtime import AgentType
from air.contracts.task import (
    DependencySource,
    DependencyType,
    TaskStatus,
    TaskType,
    WorkspaceStatus,
    WorkspaceStrategy,
)
from air.contracts.tool import DiagnosticSeverity, ToolRunStatus

__all__ = [
    "DOMAIN_TABLES",
    "ENUM_COLUMNS",
    "SCHEMA_VERSION",
    "SESSION_INDEXES",
    "SESSION_TABLES",
    "assert_enum",
    "check_row_enums",
]

SCHEMA_VERSION = 1

SESSION_TABLES: dict[str, str] = {
    "schema_meta": """CREATE TABLE IF NOT EXISTS schema_meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL)""",
    "sessions": """CREATE TABLE IF NOT EXISTS sessions (
        id TEXT PRIMARY KEY,
        project_id TEXT NOT NULL,
        status TEXT NOT NULL,
        title TEXT,
        mode TEXT NOT NULL,
        model_provider_id TEXT,
        model_id TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        archived_at TEXT,
        deleted_at TEXT)""",
    "messages": """CREATE TABLE IF NOT EXISTS messages (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        role TEXT NOT NULL,
        content_json TEXT NOT NULL,
        agent_id TEXT,
        task_id TEXT,
        model_id TEXT,
        stop_reason TEXT,
        usage_json TEXT,
        event_seq INTEGER NOT NULL,
        created_at TEXT NOT NULL)""",
    "message_drafts": """CREATE TABLE IF NOT EXISTS message_drafts (
        message_id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        status TEXT NOT NULL,
        agent_id TEXT,
        task_id TEXT,
        model_id TEXT,
        error_json TEXT,
        failure_artifact_id TEXT,
        started_at TEXT NOT NULL,
        updated_at TEXT NOT NULL)""",
    "events": """CREATE TABLE IF NOT EXISTS events (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        type TEXT NOT NULL,
        version INTEGER NOT NULL,
        timestamp TEXT NOT NULL,
        session_id TEXT NOT NULL,
        project_id TEXT,
        source_kind TEXT NOT NULL,
        source_id TEXT,
        source_agent_type TEXT,
        task_id TEXT,
        agent_id TEXT,
        tool_run_id TEXT,
        command_run_id TEXT,
        route_json TEXT NOT NULL,
        route_text TEXT NOT NULL,
        payload_json TEXT NOT NULL)""",
    "tasks": """CREATE TABLE IF NOT EXISTS tasks (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        type TEXT NOT NULL,
        status TEXT NOT NULL,
        title TEXT NOT NULL,
        description TEXT NOT NULL,
        spec_json TEXT NOT NULL,
        origin_message_id TEXT,
        parent_task_id TEXT,
        agent_id TEXT,
        workspace_id TEXT,
        attempt_count INTEGER NOT NULL DEFAULT 0,
        blocked_reason TEXT,
        error_json TEXT,
        worker_result_json TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        started_at TEXT,
        completed_at TEXT,
        heartbeat_at TEXT)""",
    "task_dependencies": """CREATE TABLE IF NOT EXISTS task_dependencies (
        task_id TEXT NOT NULL,
        depends_on_task_id TEXT NOT NULL,
        dependency_type TEXT NOT NULL,
        reason TEXT,
        source TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (task_id, depends_on_task_id))""",
    "task_attempts": """CREATE TABLE IF NOT EXISTS task_attempts (
        task_id TEXT NOT NULL,
        attempt_index INTEGER NOT NULL,
        agent_id TEXT,
        agent_type TEXT,
        workspace_id TEXT,
        status TEXT NOT NULL,
        started_at TEXT NOT NULL,
        ended_at TEXT,
        failure_kind TEXT,
        failure_signature TEXT,
        failure_message TEXT,
        failure_error_json TEXT,
        PRIMARY KEY (task_id, attempt_index))""",
    "agents": """CREATE TABLE IF NOT EXISTS agents (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        task_id TEXT,
        agent_type TEXT NOT NULL,
        status TEXT NOT NULL,
        pid INTEGER,
        pid_start_time TEXT,
        boot_id TEXT,
        exit_code INTEGER,
        error_json TEXT,
        started_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        ended_at TEXT,
        last_heartbeat_at TEXT,
        heartbeat_state TEXT,
        heartbeat_turn INTEGER,
        heartbeat_tokens INTEGER)""",
    "tool_runs": """CREATE TABLE IF NOT EXISTS tool_runs (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        task_id TEXT,
        agent_id TEXT,
        origin_message_id TEXT,
        tool_name TEXT NOT NULL,
        status TEXT NOT NULL,
        input_json TEXT NOT NULL,
        output_summary TEXT,
        artifact_ids_json TEXT NOT NULL DEFAULT '[]',
        evidence_ref_ids_json TEXT NOT NULL DEFAULT '[]',
        error_json TEXT,
        duration_ms INTEGER,
        started_at TEXT NOT NULL,
        completed_at TEXT)""",
    "command_runs": """CREATE TABLE IF NOT EXISTS command_runs (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        task_id TEXT,
        agent_id TEXT,
        tool_run_id TEXT,
        origin_message_id TEXT,
        command TEXT NOT NULL,
        cwd TEXT NOT NULL,
        exit_code INTEGER,
        stdout_artifact_id TEXT,
        stderr_artifact_id TEXT,
        diagnostic_ids_json TEXT NOT NULL DEFAULT '[]',
        error_json TEXT,
        duration_ms INTEGER,
        started_at TEXT NOT NULL,
        completed_at TEXT,
        cancelled_at TEXT,
        cancel_reason TEXT)""",
    "artifacts": """CREATE TABLE IF NOT EXISTS artifacts (
        artifact_id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        uri TEXT NOT NULL UNIQUE,
        path TEXT NOT NULL,
        type TEXT NOT NULL,
        sha256 TEXT,
        size_bytes INTEGER,
        mime_type TEXT,
        slug TEXT NOT NULL,
        task_id TEXT,
        agent_id TEXT,
        tool_run_id TEXT,
        command_run_id TEXT,
        created_at TEXT NOT NULL)""",
    "diagnostics": """CREATE TABLE IF NOT EXISTS diagnostics (
        diagnostic_id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        command_run_id TEXT,
        artifact_id TEXT,
        task_id TEXT,
        severity TEXT NOT NULL,
        message TEXT NOT NULL,
        file TEXT,
        line INTEGER,
        col INTEGER,
        code TEXT,
        tool TEXT,
        semantic_signature TEXT NOT NULL,
        created_at TEXT NOT NULL)""",
    "evidence_refs": """CREATE TABLE IF NOT EXISTS evidence_refs (
        evidence_ref_id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        ref TEXT NOT NULL,
        claim TEXT NOT NULL,
        location_json TEXT,
        entity_type TEXT NOT NULL,
        entity_id TEXT NOT NULL,
        created_at TEXT NOT NULL)""",
    "workspaces": """CREATE TABLE IF NOT EXISTS workspaces (
        workspace_id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        task_id TEXT,
        agent_id TEXT,
        strategy TEXT NOT NULL,
        status TEXT NOT NULL,
        path TEXT NOT NULL,
        branch TEXT,
        base_commit TEXT,
        merge_commit TEXT,
        kept_branch TEXT,
        conflicted_paths_json TEXT NOT NULL DEFAULT '[]',
        merge_started_at TEXT,
        merged_at TEXT,
        abandoned_at TEXT,
        cleaned_at TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL)""",
    "summaries": """CREATE TABLE IF NOT EXISTS summaries (
        summary_id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL,
        task_id TEXT,
        content TEXT NOT NULL,
        artifact_id TEXT,
        covers_until_message_id TEXT,
        token_count INTEGER,
        created_at TEXT NOT NULL)""",
    "ui_state": """CREATE TABLE IF NOT EXISTS ui_state (
        scope TEXT NOT NULL,
        key TEXT NOT NULL,
        value_json TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (scope, key))""",
}

SESSION_INDEXES: list[str] = [
    "CREATE INDEX IF NOT EXISTS idx_sessions_status ON sessions(status)",
    "CREATE INDEX IF NOT EXISTS idx_messages_session ON messages(session_id, event_seq)",
    "CREATE INDEX IF NOT EXISTS idx_drafts_status ON message_drafts(status)",
    "CREATE INDEX IF NOT EXISTS idx_events_type ON events(type)",
    "CREATE INDEX IF NOT EXISTS idx_events_task ON events(task_id)",
    "CREATE INDEX IF NOT EXISTS idx_events_agent ON events(agent_id)",
    "CREATE INDEX IF NOT EXISTS idx_tasks_status ON tasks(status)",
    "CREATE INDEX IF NOT EXISTS idx_tasks_session_status ON tasks(session_id, status)",
    "CREATE INDEX IF NOT EXISTS idx_deps_depends_on ON task_dependencies(depends_on_task_id)",
    "CREATE INDEX IF NOT EXISTS idx_agents_status ON agents(status)",
    "CREATE INDEX IF NOT EXISTS idx_agents_task ON agents(task_id)",
    "CREATE INDEX IF NOT EXISTS idx_tool_runs_task ON tool_runs(task_id)",
    "CREATE INDEX IF NOT EXISTS idx_tool_runs_origin ON tool_runs(origin_message_id)",
    "CREATE INDEX IF NOT EXISTS idx_command_runs_task ON command_runs(task_id)",
    "CREATE INDEX IF NOT EXISTS idx_artifacts_task ON artifacts(task_id)",
    "CREATE INDEX IF NOT EXISTS idx_artifacts_agent ON artifacts(agent_id)",
    "CREATE INDEX IF NOT EXISTS idx_artifacts_tool_run ON artifacts(tool_run_id)",
    "CREATE INDEX IF NOT EXISTS idx_artifacts_command_run ON artifacts(command_run_id)",
    "CREATE INDEX IF NOT EXISTS idx_diagnostics_signature ON diagnostics(semantic_signature)",
    "CREATE INDEX IF NOT EXISTS idx_diagnostics_command_run ON diagnostics(command_run_id)",
    "CREATE INDEX IF NOT EXISTS idx_evidence_entity ON evidence_refs(entity_type, entity_id)",
    "CREATE INDEX IF NOT EXISTS idx_workspaces_status ON workspaces(status)",
]

DOMAIN_TABLES: tuple[str, ...] = (
    "sessions",
    "messages",
    "message_drafts",
    "events",
    "tasks",
    "task_dependencies",
    "task_attempts",
    "agents",
    "tool_runs",
    "command_runs",
    "artifacts",
    "diagnostics",
    "evidence_refs",
    "workspaces",
    "summaries",
)
"""Tables written only by event projection (``ui_state`` and ``schema_meta`` are not)."""

MESSAGE_ROLES = ("user", "assistant")
DRAFT_STATUSES = ("streaming", "error")
ATTEMPT_STATUSES = ("running", "completed", "failed", "blocked", "cancelled", "interrupted")
SOURCE_KINDS = ("main", "architecture_designer", "scheduler", "agent", "tool", "system")


def _values(enum: type[StrEnum]) -> frozenset[str]:
    return frozenset(member.value for member in enum)


ENUM_COLUMNS: dict[tuple[str, str], frozenset[str]] = {
    ("artifacts", "type"): _values(ArtifactType),
    ("evidence_refs", "kind"): _values(EvidenceKind),
    ("evidence_refs", "entity_type"): _values(EntityType),
    ("tasks", "type"): _values(TaskType),
    ("tasks", "status"): _values(TaskStatus),
    ("agents", "agent_type"): _values(AgentType),
    ("agents", "status"): frozenset(
        {"starting", "running", "completed", "failed", "lost", "cancelled"}
    ),
    ("workspaces", "strategy"): _values(WorkspaceStrategy),
    ("workspaces", "status"): _values(WorkspaceStatus),
    ("tool_runs", "status"): _values(ToolRunStatus),
    ("task_dependencies", "dependency_type"): _values(DependencyType),
    ("task_dependencies", "source"): _values(DependencySource),
    ("message_drafts", "status"): frozenset(DRAFT_STATUSES),
    ("sessions", "status"): _values(SessionStatus),
    ("messages", "role"): frozenset(MESSAGE_ROLES),
    ("events", "source_kind"): frozenset(SOURCE_KINDS),
    ("task_attempts", "status"): frozenset(ATTEMPT_STATUSES),
    ("diagnostics", "severity"): _values(DiagnosticSeverity),
}
"""The 18 closed-enum columns (13 from baselines §A.9 + 5 chosen, IMPL-STORE-2)."""


ENUMS_BY_TABLE: dict[str, dict[str, frozenset[str]]] = {}
for (_table, _column), _allowed in ENUM_COLUMNS.items():
    ENUMS_BY_TABLE.setdefault(_table, {})[_column] = _allowed


def check_row_enums(table: str, row: Mapping[str, object]) -> None:
    """``assert_enum`` for every closed-enum column of ``table`` present in ``row``."""
    columns = ENUMS_BY_TABLE.get(table)
    if not columns:
        return
    for column, allowed in columns.items():
        if column in row and row[column] not in allowed:
            assert_enum(table, column, row[column])


def assert_enum(table: str, column: str, value: object) -> None:
    """Refuse a value outside the closed set of ``table.column`` (SDD §4.5).

    Raises:
        AirException: kind ``system_error`` — a programmer error, never user input.
    """
    allowed = ENUM_COLUMNS.get((table, column))
    if allowed is None:
        return
    if value not in allowed:
        raise AirException.of(
            kind="system_error",
            message=f"invalid value {value!r} for closed enum {table}.{column}",
            detail=f"allowed: {', '.join(sorted(allowed))}",
            user_action="This is a bug in air: report it with `air doctor --bundle`.",
            metadata={"table": table, "column": column, "value": str(value)},
        )
