"""Checking a session database's contents: the FK-off invariants and the exact table dump.

Owns ``referential_check`` (the 8 invariants of SDD §18.3 that the schema's foreign keys,
switched off, do not enforce), its ``OrphanReport`` / ``OrphanViolation`` and ``dump_tables``,
every row of the named tables in a fixed order, so two databases (a live one and its replay)
compare exactly. Read-only: repair is the recovery service's decision.
"""

from collections.abc import Iterable
from typing import Any

from pydantic import Field

from air.contracts.error import AirException
from air.contracts.ids import Contract, empty_list
from air.store.db import DatabaseManager
from air.store.schema import DOMAIN_TABLES, SESSION_TABLES

__all__ = ["OrphanReport", "OrphanViolation", "dump_tables", "referential_check"]


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


def referential_check(db: DatabaseManager) -> OrphanReport:
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
        for row in db.query(sql):
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
        for row in db.query(sql, (entity_type,)):
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
