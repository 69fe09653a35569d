"""Start-up recovery of the knowledge outbox (SDD §18.4 steps 4-5, §16.3; IMPL-LEARN-2).

Owns ``recover_knowledge`` (the one call ``open_runtime()``'s recovery makes), ``converge`` and
``KnowledgeRecovery``: every knowledge write of a session whose completion event a crash lost
gets it, every candidate without a promotion is re-queued, nothing is done twice. A project
with nothing to converge (no knowledge database, no knowledge event, no completed debug task)
never imports the knowledge stores (``air.artifacts.knowledge``, ``air.session.knowledge``):
they are imported once there is something to do (IMPL-BOOT-8).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from air.contracts.error import AirError
from air.contracts.event import RuntimeEvent
from air.events.payloads import DURABLE_TYPES

if TYPE_CHECKING:
    from air.contracts.worker_result import WorkerResult
    from air.session.knowledge import KnowledgeLedger, KnowledgeService

__all__ = ["KNOWLEDGE_FILES", "KnowledgeRecovery", "converge", "recover_knowledge"]

KNOWLEDGE_FILES = ("debug-records.db", "learned-memory.db")
"""``DebugKnowledgeStore.FILENAME`` and ``LearnedMemoryStore.FILENAME`` (under ``.air/local``),
named here so the start-up check needs no store (a test checks they agree)."""


_DEBUG_TASK_TYPES = ("task.created", "task.failed", "task.completed")
"""What ``_completed_debug_tasks`` reads: recovery asks the log for these by type (an indexed
read), never reads the whole log."""
_KNOWLEDGE_TYPES = tuple(sorted(t for t in DURABLE_TYPES if t.startswith(("debug.", "memory."))))
"""The durable ``debug.*`` and ``memory.*`` event types (any one means knowledge to converge)."""


@dataclass(eq=False)
class KnowledgeRecovery:
    """What ``recover`` did (ids), for the developer log and Doctor."""

    debug_records_created: list[str] = field(default_factory=list)
    debug_events_emitted: list[str] = field(default_factory=list)
    candidates_created: list[str] = field(default_factory=list)
    promotions_completed: list[str] = field(default_factory=list)
    """Candidates whose external write was done and whose ``memory.promoted`` is now recorded."""
    requeued: list[str] = field(default_factory=list)
    """Candidates without a promotion that were promoted now (repeated-evidence candidates)."""
    awaiting_confirmation: list[str] = field(default_factory=list)
    """ExperienceMiner candidates still waiting for ``promote`` (a person's confirmation)."""
    superseded: list[str] = field(default_factory=list)
    """Candidates another session promoted: nothing to do here."""
    archives_completed: list[str] = field(default_factory=list)
    temp_files_removed: list[str] = field(default_factory=list)
    orphan_debug_events: list[str] = field(default_factory=list)
    """``debug.record.created`` ids whose record is missing from debug-records.db (Doctor)."""
    archived: list[str] = field(default_factory=list)


async def converge(service: KnowledgeService) -> KnowledgeRecovery:
    """Converge one session's knowledge writes after a crash, then archive stale memories.

    Idempotent; ``service`` is the session's KnowledgeService.
    """
    from air.artifacts.knowledge import debug_record_id, memory_id_for
    from air.contracts.artifact_records import MemoryStatus
    from air.session.knowledge import POLICY_PROMOTER

    report = KnowledgeRecovery()
    if not service.enabled:
        return report
    sid = service.ledger.session_id
    for debug_task, failed_task, result, error in _completed_debug_tasks(
        service.ledger.history_of(*_DEBUG_TASK_TYPES)
    ):
        rid = debug_record_id(sid, debug_task)
        # a record of this fix under another id (written by an older air) counts as well
        earlier = [
            r
            for r in service.debug.lookup_by_task(failed_task)
            if r.session_id == sid and (r.metadata or {}).get("debug_task_id") == debug_task
        ]
        if not earlier:
            if await service.learn_from_debug(debug_task, failed_task, result, error):
                report.debug_records_created.append(rid)
    announced = service.events("debug.record.created", "debug_record_id")
    records = service.debug.lookup_by_session(sid)
    for record in records:
        if record.debug_record_id not in announced:
            await service.announce_record(record)
            report.debug_events_emitted.append(record.debug_record_id)
    ours = service.memory.outbox(session_id=sid)
    for row in sorted(ours, key=lambda r: r.action != "promoted"):
        if row.action == "promoted" and await service.complete_promotion(row):
            report.promotions_completed.append(str(row.candidate_id))
        elif row.action == "archived" and await service.complete_archive(row):
            report.archives_completed.append(row.memory_id)
    known = set(service.events("memory.candidate.created", "candidate_id"))
    for signature in dict.fromkeys(r.failure_signature for r in records):
        cid = await service.mine(signature)
        if cid is not None and cid not in known:
            report.candidates_created.append(cid)
    promoted = service.events("memory.promoted", "candidate_id")
    for cid, event in service.events("memory.candidate.created", "candidate_id").items():
        if cid in promoted:
            continue
        stored = service.memory.get(memory_id_for(cid))
        if stored is not None and stored.status != MemoryStatus.CANDIDATE:
            report.superseded.append(cid)
        elif cid.startswith("cand_sig_"):
            await service.promote_event(event, POLICY_PROMOTER, occurrences=service.threshold)
            report.requeued.append(cid)
        else:
            report.awaiting_confirmation.append(cid)
    report.temp_files_removed = service.rules.clean_temp()
    for rid in service.events("debug.record.created", "debug_record_id"):
        if service.debug.get(rid) is None:
            report.orphan_debug_events.append(rid)
    report.archived = await service.archive_stale()
    return report


def _completed_debug_tasks(
    history: list[RuntimeEvent],
) -> list[tuple[str, str, WorkerResult, AirError | None]]:
    """(debug task, failed task, result, the failed task's last error before the fix) of every
    debug task the log shows completed."""
    parents: dict[str, str] = {}
    last_error: dict[str, AirError] = {}
    found: list[tuple[str, str, WorkerResult, AirError | None]] = []
    for event in history:
        p = event.payload
        if event.type == "task.created":
            spec = p.get("task_spec") or {}
            if spec.get("type") == "debug" and p.get("parent_task_id"):
                parents[str(spec.get("id"))] = str(p["parent_task_id"])
        elif event.type == "task.failed" and p.get("error"):
            last_error[str(p.get("task_id"))] = AirError.model_validate(p["error"])
        elif event.type == "task.completed" and str(p.get("task_id")) in parents:
            task_id = str(p["task_id"])
            if p.get("worker_result"):
                from air.contracts.worker_result import WorkerResult  # IMPL-BOOT-12

                result = WorkerResult.model_validate(p["worker_result"])
                parent = parents[task_id]
                found.append((task_id, parent, result, last_error.get(parent)))
    return found


async def recover_knowledge(
    ledger: KnowledgeLedger, project_root: str | os.PathLike[str]
) -> KnowledgeRecovery:
    """The start-up step (``open_runtime()`` recovery): converge, archive stale, close.

    Nothing to converge — neither knowledge database exists, and the log has no knowledge event
    and no completed debug task — opens nothing (a new project's start-up pays no fsync here).
    """
    local = Path(project_root) / ".air/local"
    if not any((local / f).exists() for f in KNOWLEDGE_FILES):
        if not ledger.history_of(*_KNOWLEDGE_TYPES) and not _completed_debug_tasks(
            ledger.history_of(*_DEBUG_TASK_TYPES)
        ):
            return KnowledgeRecovery()
    from air.session.knowledge import KnowledgeService

    service = KnowledgeService.for_project(ledger, project_root)
    try:
        return await converge(service)
    finally:
        service.close()
