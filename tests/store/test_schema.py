"""Schema v1: 17 tables, indexes behind every list_* method, closed enums, FK-off checks."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from air.contracts.error import AirException, ErrorKind
from air.store.db import DatabaseManager, MigrationRunner
from air.store.integrity import dump_tables
from air.store.repositories import SessionStore, derive_command_status
from air.store.schema import ENUM_COLUMNS, SESSION_TABLES, assert_enum
from air.store.session_db import SESSION_SCHEMA, open_session_database


@pytest.fixture
def repos(tmp_path: Path) -> SessionStore:
    return SessionStore(open_session_database(tmp_path / "s.db"))


def test_seventeen_tables_and_pragmas(repos: SessionStore) -> None:
    conn = repos.db.conn
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert set(SESSION_TABLES) <= tables
    assert len(SESSION_TABLES) == 17
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 0
    assert "status" not in {r[1] for r in conn.execute("PRAGMA table_info(command_runs)")}


def test_migration_is_idempotent(tmp_path: Path) -> None:
    db = open_session_database(tmp_path / "s.db")
    db.conn.execute("INSERT INTO ui_state VALUES ('s', 'k', '1', 'now')")
    before = dump_tables(db, ["ui_state"])
    for _ in range(3):
        MigrationRunner(SESSION_SCHEMA).migrate(db)
    assert dump_tables(db, ["ui_state"]) == before
    assert MigrationRunner(SESSION_SCHEMA).current_version(db) == 1
    db.close()


def test_eighteen_closed_enum_columns_are_checked() -> None:
    assert len(ENUM_COLUMNS) == 18
    for (table, column), allowed in ENUM_COLUMNS.items():
        assert column in SESSION_TABLES[table]
        assert_enum(table, column, next(iter(allowed)))
        with pytest.raises(AirException) as info:
            assert_enum(table, column, "not-a-value")
        assert info.value.kind is ErrorKind.SYSTEM_ERROR


LIST_QUERIES: list[tuple[str, Any]] = [
    ("sessions", lambda r: r.sessions.list_active()),
    ("messages", lambda r: r.messages.list_by_session("s", 3)),
    ("tasks", lambda r: r.tasks.list_by_status("pending")),
    ("task_dependencies", lambda r: r.task_dependencies.list_for_task("t")),
    ("task_dependencies", lambda r: r.task_dependencies.list_dependents("t")),
    ("task_attempts", lambda r: r.task_attempts.list_by_task("t")),
    ("agents", lambda r: r.agents.list_active()),
    ("tool_runs", lambda r: r.tool_runs.list_by_task("t")),
    ("tool_runs", lambda r: r.tool_runs.list_by_origin_message("m")),
    ("command_runs", lambda r: r.command_runs.list_by_task("t")),
    ("artifacts", lambda r: r.artifacts.list_by_entity("task", "t")),
    ("artifacts", lambda r: r.artifacts.get_by_uri("u")),
    ("diagnostics", lambda r: r.diagnostics.list_by_signature("s")),
    ("diagnostics", lambda r: r.diagnostics.list_by_command_run("c")),
    ("evidence_refs", lambda r: r.evidence.list_for_entity("task", "t")),
    ("workspaces", lambda r: r.workspaces.list_by_status("active")),
]


@pytest.mark.parametrize(("table", "call"), LIST_QUERIES)
def test_every_list_method_uses_an_index(repos: SessionStore, table: str, call: Any) -> None:
    plans: list[str] = []

    def trace(sql: str) -> None:
        if sql.lstrip().upper().startswith("SELECT") and table in sql:
            plans.extend(
                str(row[3]) for row in probe.execute("EXPLAIN QUERY PLAN " + sql).fetchall()
            )

    probe = sqlite3.connect(repos.db.path)
    repos.db.conn.set_trace_callback(trace)
    try:
        call(repos)
    finally:
        repos.db.conn.set_trace_callback(None)
        probe.close()
    assert plans, "the list method ran no query"
    assert any("USING INDEX" in p or "PRIMARY KEY" in p for p in plans), plans
    assert not any(p.startswith(f"SCAN {table}") for p in plans), plans


@pytest.mark.parametrize(
    ("row", "status"),
    [
        ({"completed_at": None, "exit_code": 0}, "running"),
        ({"completed_at": "t", "cancelled_at": "t", "exit_code": 0}, "cancelled"),
        ({"completed_at": "t", "exit_code": 0}, "ok"),
        ({"completed_at": "t", "exit_code": 137}, "error"),
        ({"completed_at": "t", "exit_code": None}, "unknown"),
    ],
)
def test_derive_command_status(row: dict[str, Any], status: str) -> None:
    assert derive_command_status(row) == status


def test_referential_check_reports_each_invariant(repos: SessionStore) -> None:
    ts = "2026-01-01T00:00:00Z"
    with repos.db.transaction():
        repos.sessions.insert(
            {
                "id": "s",
                "project_id": "p",
                "status": "active",
                "mode": "x",
                "created_at": ts,
                "updated_at": ts,
            }
        )
        task = {
            "session_id": "s",
            "type": "execute",
            "status": "pending",
            "title": "t",
            "description": "d",
            "spec_json": "{}",
            "created_at": ts,
            "updated_at": ts,
        }
        repos.tasks.insert({"id": "t_ok", **task})
        repos.tasks.insert({"id": "t_bad", **task, "session_id": "s_gone"})  # 1
        repos.task_attempts.insert(
            {"task_id": "t_gone", "attempt_index": 1, "status": "running", "started_at": ts}
        )  # 2
        agent = {
            "session_id": "s",
            "agent_type": "executor",
            "status": "running",
            "started_at": ts,
            "updated_at": ts,
        }
        repos.agents.insert({"id": "a_ok", **agent, "task_id": "t_ok"})
        repos.agents.insert({"id": "a_bad", **agent, "task_id": "t_gone"})  # 3
        repos.agents.insert({"id": "a_free", **agent, "task_id": None})  # nullable: fine
        repos.tool_runs.insert(
            {
                "id": "tr",
                "session_id": "s",
                "tool_name": "x",
                "status": "running",
                "input_json": "{}",
                "started_at": ts,
                "agent_id": "a_gone",
            }
        )  # 4
        repos.command_runs.insert(
            {
                "id": "cr",
                "session_id": "s",
                "command": "c",
                "cwd": "/",
                "started_at": ts,
                "tool_run_id": "tr_gone",
            }
        )  # 5
        repos.workspaces.insert(
            {
                "workspace_id": "w",
                "session_id": "s",
                "strategy": "main",
                "status": "active",
                "path": "/",
                "created_at": ts,
                "updated_at": ts,
                "task_id": "t_gone",
            }
        )  # 6
        repos.diagnostics.insert(
            {
                "diagnostic_id": "d",
                "session_id": "s",
                "severity": "error",
                "message": "m",
                "semantic_signature": "x",
                "created_at": ts,
                "artifact_id": "art_gone",
            }
        )  # 7
        repos.evidence.insert(
            {
                "evidence_ref_id": "e",
                "session_id": "s",
                "kind": "log",
                "ref": "r",
                "claim": "c",
                "entity_type": "command_run",
                "entity_id": "cr_gone",
                "created_at": ts,
            }
        )  # 8
    report = repos.referential_check()
    assert sorted({v.invariant for v in report.violations}) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert len(report.violations) == 8
    assert not report.clean


def test_gc_candidates_follow_retention(repos: SessionStore) -> None:
    ts = "2026-01-01T00:00:00.000000Z"
    base = {
        "session_id": "s",
        "strategy": "worktree",
        "path": "/w",
        "created_at": ts,
        "updated_at": ts,
    }
    repos.workspaces.insert(
        {
            "workspace_id": "merged_old",
            **base,
            "status": "merged",
            "merged_at": "2026-01-01T00:00:00.000000Z",
        }
    )
    repos.workspaces.insert(
        {
            "workspace_id": "merged_new",
            **base,
            "status": "merged",
            "merged_at": "2026-01-05T00:00:00.000000Z",
        }
    )
    repos.workspaces.insert(
        {
            "workspace_id": "aband_old",
            **base,
            "status": "abandoned",
            "abandoned_at": "2026-01-06T00:00:00.000000Z",
        }
    )
    repos.workspaces.insert({"workspace_id": "active", **base, "status": "active"})
    got = repos.workspaces.list_gc_candidates("2026-01-10T00:00:00.000000Z")
    assert [w["workspace_id"] for w in got] == ["merged_old", "aband_old"]


def test_ui_state_upsert_and_read(repos: SessionStore) -> None:
    repos.ui_state.upsert("tui", "focus", {"pane": "tasks"}, updated_at="t1")
    repos.ui_state.upsert("tui", "focus", {"pane": "log"}, updated_at="t2")
    assert repos.ui_state.read("tui", "focus") == {"pane": "log"}
    assert repos.ui_state.read("tui", "missing") is None


def test_nested_transactions_join_the_outer_one(tmp_path: Path) -> None:
    db = DatabaseManager.open(tmp_path / "n.db")
    db.conn.execute("CREATE TABLE t (v INTEGER)")

    def body() -> None:
        with db.transaction():
            db.execute_write("INSERT INTO t VALUES (1)")
            with db.transaction() as conn:
                conn.execute("INSERT INTO t VALUES (2)")
            raise RuntimeError("outer fails after the inner block")

    with pytest.raises(RuntimeError):
        body()
    assert db.conn.execute("SELECT count(*) FROM t").fetchone()[0] == 0
    db.close()
