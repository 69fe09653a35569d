"""One session's knowledge work, as the Scheduler does it, and the checks the crash test makes.

``run_scenario`` writes (when the log lacks them) the task events of three failed tasks with
one failure signature and their completed debug tasks, learns from each debug result, proposes
and promotes an ExperienceMiner statement and archives stale memories. Re-running it after a
crash is the resumed session: the task events are not repeated, the knowledge calls are.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from air.artifacts.knowledge import (
    DebugKnowledgeStore,
    LearnedMemoryStore,
    candidate_id_for_statement,
)
from air.contracts.artifact_records import LearnedMemory, MemoryStatus, MemoryType
from air.contracts.error import ErrorKind, make_air_error
from air.contracts.event import EventSource, RuntimeEvent, new_event
from air.contracts.worker_result import WorkerResult
from air.events.store import EventStore
from air.nursery.ledger import SessionLedger
from air.session.knowledge import KnowledgeLedger, KnowledgeService
from air.store.db import DatabaseManager
from air.store.session_db import open_session_database

SESSION = "ses_learn"
PROJECT = "prj_learn"
SIGNATURE = "verification_failed:missing-include-cstdint"
STATEMENT = "Run the unit tests with -q before reporting a task as done."
OLD_MEMORY = "mem_sig_oldoldoldoldoldoldoldold"


def project_dirs(root: Path) -> tuple[Path, Path]:
    local, shared = root / ".air" / "local", root / ".air" / "shared"
    (local / "sessions" / SESSION).mkdir(parents=True, exist_ok=True)
    shared.mkdir(parents=True, exist_ok=True)
    return local, shared


def session_path(root: Path) -> Path:
    return root / ".air" / "local" / "sessions" / SESSION / "session.db"


def seed(root: Path) -> None:
    """A new session log plus one repeated-fix memory promoted 200 days ago by another session."""
    local, shared = project_dirs(root)
    db = open_session_database(session_path(root))
    EventStore(db).append(
        new_event(
            "session.created",
            {"session_id": SESSION, "project_id": PROJECT, "mode": "headless"},
            session_id=SESSION,
            project_id=PROJECT,
            source=EventSource(kind="system"),
        )
    )
    db.close()
    old = (datetime.now(UTC) - timedelta(days=200)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    store = LearnedMemoryStore.open(local / LearnedMemoryStore.FILENAME)
    store.record_action(
        "promoted",
        memory=LearnedMemory(
            memory_id=OLD_MEMORY,
            memory_type=MemoryType.RULE,
            status=MemoryStatus.ACTIVE,
            content="an old lesson",
            target_ref=f".air/shared/rules/learned-{OLD_MEMORY}.md",
            created_at=old,
            updated_at=old,
        ),
        session_id="ses_older",
        candidate_id="cand_sig_oldoldoldoldoldoldoldold",
        detail="experience_miner:repeated-evidence",
    )
    store.close()
    (shared / "rules").mkdir(exist_ok=True)
    (shared / "rules" / f"learned-{OLD_MEMORY}.md").write_text("- an old lesson\n")


def open_ledger(root: Path) -> tuple[DatabaseManager, SessionLedger]:
    db = open_session_database(session_path(root), must_exist=True)
    return db, SessionLedger(EventStore(db), session_id=SESSION, project_id=PROJECT)


def _spec(task_id: str, kind: str) -> dict[str, Any]:
    return {
        "id": task_id,
        "type": kind,
        "title": f"task {task_id}",
        "description": "build the library",
        "output_contract": "DebuggerResult" if kind == "debug" else "ExecutorResult",
    }


async def _once(ledger: KnowledgeLedger, type_: str, payload: dict[str, Any]) -> None:
    """Record a task event unless the log has it (the resumed Scheduler does not repeat it)."""
    key = (type_, payload.get("task_id") or payload["task_spec"]["id"])
    for e in ledger.history_of(type_):
        if (
            e.type,
            e.payload.get("task_id") or (e.payload.get("task_spec") or {}).get("id"),
        ) == key:
            return
    await ledger.record(type_, payload)


def debug_result(debug_id: str, n: int) -> WorkerResult:
    return WorkerResult.model_validate(
        {
            "task_id": debug_id,
            "agent_id": f"agt_{debug_id}",
            "agent_type": "debugger",
            "status": "completed",
            "summary": "added #include <cstdint> to the header",
            "changed_files": [f"src/lib{n}.h"],
            "result": {
                "diagnosis": "uint32_t used without its header",
                "root_cause": "missing include",
                "fixed": True,
            },
        }
    )


async def run_scenario(service: KnowledgeService) -> None:
    ledger = service.ledger
    error = make_air_error(
        kind=ErrorKind.VERIFICATION_FAILED,
        message="build failed",
        semantic_signature=SIGNATURE,
    )
    for n in (1, 2, 3):
        task, debug = f"t{n}", f"t{n}.debug1"
        await _once(ledger, "task.created", {"task_spec": _spec(task, "execute")})
        await _once(
            ledger,
            "task.started",
            {
                "task_id": task,
                "agent_id": f"agt_{task}",
                "agent_type": "executor",
                "attempt_index": 1,
            },
        )
        await _once(
            ledger,
            "task.failed",
            {"task_id": task, "attempt_index": 1, "error": error.model_dump(mode="json")},
        )
        await _once(
            ledger, "task.created", {"task_spec": _spec(debug, "debug"), "parent_task_id": task}
        )
        await _once(
            ledger,
            "task.started",
            {
                "task_id": debug,
                "agent_id": f"agt_{debug}",
                "agent_type": "debugger",
                "attempt_index": 1,
            },
        )
        result = debug_result(debug, n)
        await _once(
            ledger,
            "task.completed",
            {"task_id": debug, "attempt_index": 1, "worker_result": result.model_dump(mode="json")},
        )
        await service.learn_from_debug(debug, task, result, error)
    (cid,) = await service.propose([STATEMENT], task_id="t3.mine")
    await service.promote(cid, promoted_by="user")
    await service.archive_stale()


def counts(history: list[RuntimeEvent]) -> Counter[str]:
    return Counter(e.type for e in history if e.type.startswith(("memory.", "debug.")))


def check_converged(root: Path, history: list[RuntimeEvent], *, final: bool) -> None:
    """Events and rows agree: no orphan record, no lost candidate, no duplicate promotion."""
    local = root / ".air" / "local"
    rules = root / ".air" / "shared" / "rules"
    debug = DebugKnowledgeStore.open(local / DebugKnowledgeStore.FILENAME)
    memory = LearnedMemoryStore.open(local / LearnedMemoryStore.FILENAME)
    try:
        records = {r.debug_record_id for r in debug.lookup_by_session(SESSION)}
        announced = [
            e.payload["debug_record_id"] for e in history if e.type == "debug.record.created"
        ]
        assert sorted(announced) == sorted(set(announced)), "duplicate debug.record.created"
        assert set(announced) == records, (
            "a record without its event or an event without its record"
        )
        promoted = [e.payload["candidate_id"] for e in history if e.type == "memory.promoted"]
        assert len(promoted) == len(set(promoted)), "duplicate promotion"
        candidates = [
            e.payload["candidate_id"] for e in history if e.type == "memory.candidate.created"
        ]
        assert len(candidates) == len(set(candidates)), "duplicate candidate"
        ours = {
            r.candidate_id: r for r in memory.outbox(session_id=SESSION) if r.action == "promoted"
        }
        assert set(promoted) == set(ours), "promotion rows and memory.promoted disagree"
        pending = set(candidates) - set(promoted)
        assert all(c.startswith("cand_min_") for c in pending), "a lost repeated-evidence candidate"
        assert set(promoted) <= set(candidates)
        archived = [e.payload["memory_id"] for e in history if e.type == "memory.archived"]
        assert len(archived) == len(set(archived)), "duplicate archival"
        our_archives = {
            r.memory_id for r in memory.outbox(session_id=SESSION) if r.action == "archived"
        }
        assert set(archived) == our_archives
        on_disk = {p.name for p in rules.iterdir()} if rules.is_dir() else set()
        assert not {n for n in on_disk if n.endswith(".tmp")}, "a temp file left behind"
        for row in ours.values():
            mem = memory.get(row.memory_id)
            assert mem is not None
            wanted = mem.status == MemoryStatus.ACTIVE and mem.memory_type == MemoryType.RULE
            assert (f"learned-{row.memory_id}.md" in on_disk) == wanted, row
        old = memory.get(OLD_MEMORY)
        assert old is not None
        assert old.status == MemoryStatus.ARCHIVED
        assert f"learned-{OLD_MEMORY}.md" not in on_disk
        promoted_rules = {f"learned-{r.memory_id}.md" for r in ours.values()}
        assert on_disk <= promoted_rules
        if final:
            assert len(records) == 3
            assert set(candidates) == set(promoted)
            assert candidate_id_for_statement(MemoryType.RULE, STATEMENT) in promoted
            assert archived == [OLD_MEMORY]
            assert on_disk == promoted_rules
            assert len(on_disk) == 2
            assert counts(history) == Counter(
                {
                    "debug.record.created": 3,
                    "memory.candidate.created": 2,
                    "memory.promoted": 2,
                    "memory.archived": 1,
                }
            )
    finally:
        debug.close()
        memory.close()


def service_for(root: Path, ledger: KnowledgeLedger) -> KnowledgeService:
    return KnowledgeService.for_project(ledger, root)


def kill_self() -> None:
    os.kill(os.getpid(), 9)


class HookedLedger:
    """A SessionLedger whose knowledge events (``debug.*`` / ``memory.*``) pass ``hook`` first
    (with ``False``) and after they are stored (with ``True``)."""

    def __init__(self, inner: SessionLedger, hook: Callable[[str, dict[str, Any], bool], None]):
        self.inner = inner
        self.session_id = inner.session_id
        self.hook = hook

    async def record(self, type: str, payload: dict[str, Any]) -> RuntimeEvent:
        knowledge = type.startswith(("debug.", "memory."))
        if knowledge:
            self.hook(type, payload, False)
        event = await self.inner.record(type, payload)
        if knowledge:
            self.hook(type, payload, True)
        return event

    def history(self) -> list[RuntimeEvent]:
        return self.inner.history()

    def history_of(self, *types: str) -> list[RuntimeEvent]:
        return self.inner.history_of(*types)
