"""DebugKnowledgeStore and LearnedMemoryStore on their real project databases."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from air.artifacts.knowledge import DebugKnowledgeStore, LearnedMemoryStore
from air.contracts.artifact_records import DebugRecord, LearnedMemory
from air.contracts.error import AirException, ErrorKind
from air.session.project import ProjectStore


class Clock:
    def __init__(self, now: str) -> None:
        self.now = now

    def now_iso(self) -> str:
        return self.now


def test_debug_records_round_trip_and_lookup(tmp_path: Path) -> None:
    project = ProjectStore().initialize(tmp_path)
    clock = Clock("2026-03-01T00:00:00.000000Z")
    store = DebugKnowledgeStore.open(project, clock=clock)
    rec = DebugRecord(
        debug_record_id="dbg_1",
        failure_signature="verification_failed:abc",
        task_id="task_1",
        diagnosis="missing include",
        created_at="2026-02-01T00:00:00Z",
        updated_at="2026-02-01T00:00:00Z",
        metadata={"file": "a.c"},
    )
    store.insert(rec)
    assert store.lookup_by_signature("verification_failed:abc") == [rec]
    assert store.lookup_by_task("task_1") == [rec]
    with pytest.raises(AirException) as info:
        store.insert(rec)
    assert info.value.kind is ErrorKind.VALIDATION_ERROR
    store.update("dbg_1", {"fixed": True, "fix_summary": "added include", "hit_count": 2})
    got = store.get("dbg_1")
    assert got is not None
    assert (got.fixed, got.fix_summary, got.hit_count) == (True, "added include", 2)
    assert got.updated_at == clock.now
    assert got.metadata == {"file": "a.c"}
    with pytest.raises(AirException):
        store.update("dbg_1", {"failure_signature": "x"})
    with pytest.raises(AirException):
        store.update("dbg_missing", {"fixed": True})
    store.close()
    assert (tmp_path / ".air" / "local" / "debug-records.db").is_file()
    reopened = DebugKnowledgeStore.open(project)
    assert reopened.get("dbg_1") == got
    reopened.close()


def test_learned_memory_lifecycle_and_stale_scan(tmp_path: Path) -> None:
    project = ProjectStore().initialize(tmp_path)
    clock = Clock("2026-06-01T00:00:00.000000Z")
    store = LearnedMemoryStore.open(project, clock=clock)

    def mem(mid: str, kind: str, updated: str) -> LearnedMemory:
        return LearnedMemory(
            memory_id=mid,
            memory_type=kind,
            status="active",
            content=f"rule {mid}",
            created_at=updated,
            updated_at=updated,
        )

    store.insert(mem("m_old", "rule", "2026-01-01T00:00:00.000000Z"))
    store.insert(mem("m_new", "rule", "2026-05-30T00:00:00.000000Z"))
    store.insert(mem("m_skill", "skill", "2026-01-01T00:00:00.000000Z"))
    assert [m.memory_id for m in store.lookup_by_type("rule")] == ["m_old", "m_new"]
    assert [m.memory_id for m in store.scan_stale()] == ["m_old", "m_skill"]
    store.mark_used("m_skill")
    assert [m.memory_id for m in store.scan_stale()] == ["m_old"]
    store.update_status("m_old", "stale")
    assert store.scan_stale() == []
    assert [m.memory_id for m in store.lookup_by_type("rule", status="stale")] == ["m_old"]
    with pytest.raises(AirException) as info:
        store.update_status("m_old", "forgotten")
    assert info.value.kind is ErrorKind.VALIDATION_ERROR
    store.close()


def test_newer_knowledge_db_is_refused(tmp_path: Path) -> None:
    project = ProjectStore().initialize(tmp_path)
    LearnedMemoryStore.open(project).close()
    path = tmp_path / ".air" / "local" / "learned-memory.db"
    conn = sqlite3.connect(path)
    conn.execute("UPDATE schema_meta SET value = '5' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with pytest.raises(AirException) as info:
        LearnedMemoryStore.open(project)
    assert info.value.kind is ErrorKind.SCHEMA_ERROR
