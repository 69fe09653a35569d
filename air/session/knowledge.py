"""The knowledge service: debug records and learned memory written with the outbox (SDD §18.4).

Owns ``KnowledgeService`` (``learn_from_debug``, ``known_fixes``, ``mine``, ``propose``,
``promote``, ``archive_stale``); its start-up recovery is ``air.session.knowledge_recovery``.
Every step is idempotent by deterministic ids (``air.artifacts.knowledge``, IMPL-LEARN-1):

- a debug record's id is a hash of (session, debug task), written with INSERT OR IGNORE into
  ``debug-records.db``, then ``debug.record.created`` unless the session log already has it;
- a candidate's id is a hash of its evidence (``cand_sig_`` + failure signature for the
  repeated-fix candidates, ``cand_min_`` + type and text for an ExperienceMiner's statements);
  the memory promoted from it is ``mem_`` + the same suffix;
- a promotion / archival writes ``learned-memory.db`` (row + ``memory_outbox`` row naming the
  session, one transaction), then the rule file under ``.air/shared/rules/`` (temp + rename),
  then ``memory.promoted`` / ``memory.archived`` in that session only.

A crash anywhere leaves a state recovery converges from: an external write without its
event gets the event, a candidate without a promotion is re-queued, and no step is done twice.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, Protocol

from air.artifacts.knowledge import (
    DebugKnowledgeStore,
    LearnedMemoryStore,
    OutboxRow,
    bounded_text,
    candidate_id_for_signature,
    candidate_id_for_statement,
    debug_record_id,
    memory_id_for,
)
from air.artifacts.rules import RuleFiles, one_line
from air.contracts.artifact_records import DebugRecord, LearnedMemory, MemoryStatus, MemoryType
from air.contracts.error import AirError, AirException, ErrorKind
from air.contracts.event import RuntimeEvent
from air.contracts.ids import Clock, SystemClock
from air.contracts.worker_result import WorkerResult, WorkerStatus

__all__ = [
    "EVIDENCE_THRESHOLD",
    "POLICY_PROMOTER",
    "STALE_AFTER",
    "KnowledgeLedger",
    "KnowledgeService",
    "own_rule_write",
]

EVIDENCE_THRESHOLD = 3
"""IMPL-LEARN-1: fixed debug records of one signature in this many distinct tasks make a
candidate (the IDEA's N=3 for repeated occurrences)."""

STALE_AFTER = timedelta(days=90)
"""IMPL-LEARN-3: a repeated-fix memory whose failure has not recurred this long is archived."""

POLICY_PROMOTER = "experience_miner:repeated-evidence"


def own_rule_write(shared_root: Path, write: Callable[[], None], memory_id: str) -> None:
    """air's own write of a learned rule file keeps a trusted project trusted (only when it
    was trusted just before and nothing else changed: IMPL-TRUST-1)."""
    from air.session.trust import refresh_trust, trust_scan

    root = str(shared_root.parent.parent)
    try:
        before = trust_scan(root)
    except AirException:  # a link among the project's files: it stays untrusted
        write()
        return
    write()
    with contextlib.suppress(AirException):
        refresh_trust(root, before, RuleFiles.target_ref(memory_id))


class KnowledgeLedger(Protocol):
    """What the service needs of the session's ledger (``air.nursery.ledger.SessionLedger``)."""

    session_id: str

    async def record(self, type: str, payload: dict[str, Any]) -> RuntimeEvent: ...

    def history_of(self, *types: str) -> list[RuntimeEvent]:
        """The session's events of ``types`` only, oldest first (an indexed read)."""
        ...


class KnowledgeService:
    """Debug knowledge and learned memory of one project, recorded in one session's log.

    Args:
        ledger: the session's ledger (durable events are recorded and read through it).
        local_root: ``<project>/.air/local`` (the two project databases live here).
        shared_root: ``<project>/.air/shared`` (promoted rules go to its ``rules/``).
        clock: time source of the stores.
        threshold: distinct fixed tasks per signature that make a candidate.
    """

    def __init__(
        self,
        ledger: KnowledgeLedger,
        *,
        local_root: str | os.PathLike[str],
        shared_root: str | os.PathLike[str],
        clock: Clock | None = None,
        threshold: int = EVIDENCE_THRESHOLD,
    ) -> None:
        self.ledger = ledger
        self.local_root = Path(local_root)
        self.shared_root = Path(shared_root)
        self.clock = clock or SystemClock()
        self.threshold = threshold
        self._debug: DebugKnowledgeStore | None = None
        self._memory: LearnedMemoryStore | None = None
        self.rules = RuleFiles(self.shared_root)

    @classmethod
    def for_project(
        cls, ledger: KnowledgeLedger, project_root: str | os.PathLike[str], **kw: Any
    ) -> KnowledgeService:
        root = Path(project_root)
        return cls(ledger, local_root=root / ".air/local", shared_root=root / ".air/shared", **kw)

    @property
    def enabled(self) -> bool:
        """False when the project has no ``.air/local`` (then nothing is learned or looked up)."""
        return self.local_root.is_dir()

    @property
    def debug(self) -> DebugKnowledgeStore:
        if self._debug is None:
            self._debug = DebugKnowledgeStore.open(
                self.local_root / DebugKnowledgeStore.FILENAME, clock=self.clock
            )
        return self._debug

    @property
    def memory(self) -> LearnedMemoryStore:
        if self._memory is None:
            self._memory = LearnedMemoryStore.open(
                self.local_root / LearnedMemoryStore.FILENAME, clock=self.clock
            )
        return self._memory

    def close(self) -> None:
        for store in (self._debug, self._memory):
            if store is not None:
                store.close()
        self._debug = self._memory = None

    # -- the session log ----------------------------------------------------------------------
    def events(self, event_type: str, key: str) -> dict[str, RuntimeEvent]:
        """This session's events of one type, keyed by one payload field."""
        return {str(e.payload.get(key)): e for e in self.ledger.history_of(event_type)}

    # -- debug records (§18.4 debug.record.created) -----------------------------------------
    def known_fixes(self, signature: str | None) -> list[DebugRecord]:
        """Records with ``signature`` for a debug task's context: fixed first, newest first.

        A hit keeps the signature's learned memory fresh (IMPL-LEARN-3).
        """
        if not signature or not self.enabled:
            return []
        records = self.debug.lookup_by_signature(signature)
        mid = memory_id_for(candidate_id_for_signature(signature))
        if records and (mem := self.memory.get(mid)) and mem.status == MemoryStatus.ACTIVE:
            self.memory.mark_used(mid)
        newest = sorted(records, key=lambda r: r.created_at, reverse=True)
        return sorted(newest, key=lambda r: not r.fixed)

    async def learn_from_debug(
        self,
        debug_task_id: str,
        failed_task_id: str,
        result: WorkerResult | None,
        error: AirError | None,
    ) -> DebugRecord | None:
        """A completed debug task's landed fix -> record (store first) -> event -> mining.

        Only a ``completed`` DebuggerResult with ``fixed: true`` is learned, filed under the
        failed task's runtime error signature: never under a signature the worker names (its
        text would then reach the debug tasks of a failure it never saw). Idempotent.
        """
        if result is None or result.status != WorkerStatus.COMPLETED or not self.enabled:
            return None
        body = result.result or {}
        signature = error.semantic_signature if error is not None else None
        if body.get("fixed") is not True or not signature:
            return None
        now = self.clock.now_iso()
        record = DebugRecord(
            debug_record_id=debug_record_id(self.ledger.session_id, debug_task_id),
            failure_signature=str(signature),
            task_id=failed_task_id,
            session_id=self.ledger.session_id,
            diagnosis=bounded_text(body.get("diagnosis") or result.summary),
            root_cause=bounded_text(body["root_cause"]) if body.get("root_cause") else None,
            fix_summary=bounded_text(result.summary),
            fixed=True,
            created_at=now,
            updated_at=now,
            metadata={"debug_task_id": debug_task_id, "changed_files": result.changed_files},
        )
        self.debug.insert_if_absent(record)
        stored = self.debug.get(record.debug_record_id) or record
        await self.announce_record(stored)
        await self.mine(stored.failure_signature)
        return stored

    async def announce_record(self, record: DebugRecord) -> bool:
        """``debug.record.created`` for a stored record unless the log has it."""
        if record.debug_record_id in self.events("debug.record.created", "debug_record_id"):
            return False
        await self.ledger.record(
            "debug.record.created",
            {
                "debug_record_id": record.debug_record_id,
                "failure_signature": record.failure_signature,
                "task_id": record.task_id,
            },
        )
        return True

    # -- candidates and promotion (§18.4 memory.promoted) -------------------------------------
    async def mine(self, signature: str) -> str | None:
        """Make (and promote) the candidate of a signature fixed in ``threshold`` tasks."""
        fixed = [r for r in self.debug.lookup_by_signature(signature) if r.fixed]
        seen: dict[tuple[str | None, str | None], DebugRecord] = {}
        for r in fixed:
            seen.setdefault((r.session_id, r.task_id), r)
        if len(seen) < self.threshold:
            return None
        cid = candidate_id_for_signature(signature)
        evidence = list(seen.values())[: self.threshold]
        event = self.events("memory.candidate.created", "candidate_id").get(cid)
        if event is None:
            if self.memory.get(memory_id_for(cid)) is not None:
                return cid  # promoted before (or by another session)
            latest = evidence[-1]
            causes = sorted({r.root_cause for r in evidence if r.root_cause})
            text = (
                f"When a task fails with signature `{signature}`: {latest.fix_summary or ''} "
                f"(root cause: {'; '.join(causes) or 'unknown'}; fixed the same way in "
                f"{len(evidence)} tasks)"
            )
            task = (latest.metadata or {}).get("debug_task_id") or latest.task_id
            event = await self._candidate(cid, MemoryType.RULE, one_line(text), task)
        await self.promote_event(event, POLICY_PROMOTER, occurrences=len(seen))
        return cid

    async def _candidate(
        self, cid: str, kind: MemoryType, content: str, task_id: str | None
    ) -> RuntimeEvent:
        payload = {"candidate_id": cid, "memory_type": kind.value, "content": content}
        return await self.ledger.record("memory.candidate.created", {**payload, "task_id": task_id})

    async def propose(
        self,
        statements: list[str],
        *,
        task_id: str | None = None,
        memory_type: MemoryType = MemoryType.RULE,
    ) -> list[str]:
        """An ExperienceMinerResult's statements as candidates (each awaits ``promote``)."""
        created: list[str] = []
        if not self.enabled:
            return created
        for text in statements:
            content = one_line(text)
            if not content:
                continue
            cid = candidate_id_for_statement(memory_type, content)
            if cid in created:
                continue
            created.append(cid)
            stored = self.memory.get(memory_id_for(cid))
            if stored is not None and stored.status != MemoryStatus.CANDIDATE:
                continue  # promoted or rejected before: not proposed again
            if stored is None:  # the row `air memory list` shows (IMPL-LEARN-6)
                now = self.clock.now_iso()
                self.memory.insert(
                    LearnedMemory(
                        memory_id=memory_id_for(cid),
                        memory_type=memory_type,
                        status=MemoryStatus.CANDIDATE,
                        content=content,
                        source_session_id=self.ledger.session_id,
                        created_at=now,
                        updated_at=now,
                    )
                )
            if cid not in self.events("memory.candidate.created", "candidate_id"):
                await self._candidate(cid, memory_type, content, task_id)
        return created

    async def promote(self, candidate_id: str, *, promoted_by: str) -> str:
        """Promote a candidate of this session (after a person's or the miner's approval).

        Returns the target_ref. Raises ``validation_error`` for a candidate the log lacks.
        """
        event = self.events("memory.candidate.created", "candidate_id").get(candidate_id)
        if event is None:
            raise AirException.of(
                kind=ErrorKind.VALIDATION_ERROR,
                message=f"no memory candidate {candidate_id} in session {self.ledger.session_id}",
                user_action="Promote a candidate listed by memory.candidate.created.",
            )
        row = await self.promote_event(event, promoted_by, occurrences=1)
        return row.target_ref or ""

    async def promote_event(
        self, candidate: RuntimeEvent, promoted_by: str, *, occurrences: int
    ) -> OutboxRow:
        """Promote the candidate of a ``memory.candidate.created`` event (idempotent)."""
        p = candidate.payload
        cid = str(p["candidate_id"])
        mid = memory_id_for(cid)
        kind = MemoryType(p["memory_type"])
        target = RuleFiles.target_ref(mid) if kind == MemoryType.RULE else f"learned-memory://{mid}"
        now = self.clock.now_iso()
        memory = LearnedMemory(
            memory_id=mid,
            memory_type=kind,
            status=MemoryStatus.ACTIVE,
            content=str(p["content"]),
            source_session_id=self.ledger.session_id,
            occurrences=occurrences,
            target_ref=target,
            created_at=now,
            updated_at=now,
        )
        row = self.memory.record_action(
            "promoted",
            memory=memory,
            session_id=self.ledger.session_id,
            candidate_id=cid,
            detail=promoted_by,
        )
        if row.session_id == self.ledger.session_id:
            await self.complete_promotion(row)
        return row

    def _own_write(self, write: Callable[[], None], memory_id: str) -> None:
        own_rule_write(self.shared_root, write, memory_id)

    async def complete_promotion(self, row: OutboxRow) -> bool:
        """Steps after the DB write: the rule file (while active), then ``memory.promoted``
        unless the log has it. True when the event was recorded now."""
        memory = self.memory.get(row.memory_id)
        assert memory is not None  # the outbox row and the memory commit together
        if memory.status == MemoryStatus.ACTIVE and memory.memory_type == MemoryType.RULE:
            if (row.detail or POLICY_PROMOTER) == POLICY_PROMOTER:
                # a rule no person read (its text is a debugger's, which a task's output can
                # steer): the next run's trust check shows it and asks (IMPL-LEARN-1)
                self.rules.write(memory)
            else:
                self._own_write(lambda: self.rules.write(memory), memory.memory_id)
        if str(row.candidate_id) in self.events("memory.promoted", "candidate_id"):
            return False
        await self.ledger.record(
            "memory.promoted",
            {
                "candidate_id": row.candidate_id,
                "target_ref": row.target_ref or memory.target_ref or "",
                "promoted_by": row.detail or POLICY_PROMOTER,
                "summary": one_line(memory.content, 160),
            },
        )
        return True

    # -- archival (§18.4 memory.archived) --------------------------------------------------
    async def archive_stale(self) -> list[str]:
        """Archive repeated-fix memories whose failure has not recurred for ``STALE_AFTER``."""
        if not self.enabled:
            return []
        done: list[str] = []
        for memory in self.memory.scan_stale(max_age=STALE_AFTER):
            if not memory.memory_id.startswith("mem_sig_"):
                continue
            row = self.memory.record_action(
                "archived",
                memory_id=memory.memory_id,
                session_id=self.ledger.session_id,
                detail=f"failure not seen for {STALE_AFTER.days} days",
            )
            if row.session_id == self.ledger.session_id:
                await self.complete_archive(row)
                done.append(memory.memory_id)
        return done

    async def complete_archive(self, row: OutboxRow) -> bool:
        """Steps after the DB write: remove the rule file, then ``memory.archived`` unless
        the log has it. True when the event was recorded now."""
        if row.target_ref and not row.target_ref.startswith("learned-memory://"):
            self._own_write(lambda: self.rules.remove(row.memory_id), row.memory_id)
        if row.memory_id in self.events("memory.archived", "memory_id"):
            return False
        await self.ledger.record(
            "memory.archived",
            {"memory_id": row.memory_id, "target_ref": row.target_ref, "reason": row.detail},
        )
        return True
