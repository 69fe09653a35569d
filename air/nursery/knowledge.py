"""The knowledge service: debug records and learned memory written with the outbox (SDD §18.4).

Owns ``KnowledgeService`` (``learn_from_debug``, ``known_fixes``, ``mine``, ``propose``,
``promote``, ``archive_stale``, ``recover``), ``recover_knowledge`` (the one call recovery makes
at start-up) and the deterministic ids that make every step idempotent (IMPL-LEARN-1):

- a debug record's id is a hash of (session, debug task), written with INSERT OR IGNORE into
  ``debug-records.db``, then ``debug.record.created`` unless the session log already has it;
- a candidate's id is a hash of its evidence (``cand_sig_`` + failure signature for the
  repeated-fix candidates, ``cand_min_`` + type and text for an ExperienceMiner's statements);
  the memory promoted from it is ``mem_`` + the same suffix;
- a promotion / archival writes ``learned-memory.db`` (row + ``memory_outbox`` row naming the
  session, one transaction), then the rule file under ``.air/shared/rules/`` (temp + rename),
  then ``memory.promoted`` / ``memory.archived`` in that session only.

A crash anywhere leaves a state ``recover`` converges from: an external write without its
event gets the event, a candidate without a promotion is re-queued, and no step is done twice.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Protocol

from air.artifacts.knowledge import DebugKnowledgeStore, LearnedMemoryStore, OutboxRow
from air.contracts.artifact import DebugRecord, LearnedMemory, MemoryStatus, MemoryType
from air.contracts.error import AirError, AirException, ErrorKind
from air.contracts.event import RuntimeEvent
from air.contracts.ids import Clock, SystemClock
from air.contracts.worker_result import WorkerResult, WorkerStatus

__all__ = [
    "EVIDENCE_THRESHOLD",
    "POLICY_PROMOTER",
    "STALE_AFTER",
    "KnowledgeLedger",
    "KnowledgeRecovery",
    "KnowledgeService",
    "candidate_id_for_signature",
    "candidate_id_for_statement",
    "debug_record_id",
    "memory_id_for",
    "recover_knowledge",
]

EVIDENCE_THRESHOLD = 3
"""IMPL-LEARN-1: fixed debug records of one signature in this many distinct tasks make a
candidate (the IDEA's N=3 for repeated occurrences)."""

STALE_AFTER = timedelta(days=90)
"""IMPL-LEARN-3: a repeated-fix memory whose failure has not recurred this long is archived."""

POLICY_PROMOTER = "experience_miner:repeated-evidence"
_RULE_TEXT_MAX = 400
_RECORD_TEXT_MAX = 2000
_CONTROL = re.compile(r"[\x00-\x1f\x7f]+")


class KnowledgeLedger(Protocol):
    """What the service needs of the session's ledger (``air.nursery.ledger.SessionLedger``)."""

    session_id: str

    async def record(self, type: str, payload: dict[str, Any]) -> RuntimeEvent: ...

    def history(self) -> list[RuntimeEvent]: ...


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:24]


def debug_record_id(session_id: str, debug_task_id: str) -> str:
    return f"dbg_{_digest(session_id, debug_task_id)}"


def candidate_id_for_signature(signature: str) -> str:
    return f"cand_sig_{_digest('signature', signature)}"


def candidate_id_for_statement(memory_type: MemoryType, text: str) -> str:
    return f"cand_min_{_digest(memory_type.value, _one_line(text).casefold())}"


def memory_id_for(candidate_id: str) -> str:
    return "mem_" + candidate_id.removeprefix("cand_")


def _one_line(text: str, limit: int = _RULE_TEXT_MAX) -> str:
    """Model-written text made one plain line: it lands in L3 of later prompts (rule files),
    so it may not open headings, front matter or fences of its own."""
    flat = " ".join(_CONTROL.sub(" ", text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _text(value: object, limit: int = _RECORD_TEXT_MAX) -> str:
    """A worker-written field of a DebugRecord as bounded text."""
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
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
    def _events(self, event_type: str, key: str) -> dict[str, RuntimeEvent]:
        return {str(e.payload.get(key)): e for e in self.ledger.history() if e.type == event_type}

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
            diagnosis=_text(body.get("diagnosis") or result.summary),
            root_cause=_text(body["root_cause"]) if body.get("root_cause") else None,
            fix_summary=_text(result.summary),
            fixed=True,
            created_at=now,
            updated_at=now,
            metadata={"debug_task_id": debug_task_id, "changed_files": result.changed_files},
        )
        self.debug.insert_if_absent(record)
        stored = self.debug.get(record.debug_record_id) or record
        await self._announce_record(stored)
        await self.mine(stored.failure_signature)
        return stored

    async def _announce_record(self, record: DebugRecord) -> bool:
        if record.debug_record_id in self._events("debug.record.created", "debug_record_id"):
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
        event = self._events("memory.candidate.created", "candidate_id").get(cid)
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
            meta = latest.metadata or {}
            event = await self.ledger.record(
                "memory.candidate.created",
                {
                    "candidate_id": cid,
                    "memory_type": MemoryType.RULE.value,
                    "content": _one_line(text),
                    "task_id": meta.get("debug_task_id") or latest.task_id,
                },
            )
        await self._promote(event, POLICY_PROMOTER, occurrences=len(seen))
        return cid

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
            content = _one_line(text)
            if not content:
                continue
            cid = candidate_id_for_statement(memory_type, content)
            if cid in created:
                continue
            created.append(cid)
            if self.memory.get(memory_id_for(cid)) is not None:
                continue
            if cid not in self._events("memory.candidate.created", "candidate_id"):
                await self.ledger.record(
                    "memory.candidate.created",
                    {
                        "candidate_id": cid,
                        "memory_type": memory_type.value,
                        "content": content,
                        "task_id": task_id,
                    },
                )
        return created

    async def promote(self, candidate_id: str, *, promoted_by: str) -> str:
        """Promote a candidate of this session (after a person's or the miner's approval).

        Returns the target_ref. Raises ``validation_error`` for a candidate the log lacks.
        """
        event = self._events("memory.candidate.created", "candidate_id").get(candidate_id)
        if event is None:
            raise AirException.of(
                kind=ErrorKind.VALIDATION_ERROR,
                message=f"no memory candidate {candidate_id} in session {self.ledger.session_id}",
                user_action="Promote a candidate listed by memory.candidate.created.",
            )
        row = await self._promote(event, promoted_by, occurrences=1)
        return row.target_ref or ""

    def _rule_path(self, memory_id: str) -> Path:
        return self.shared_root / "rules" / f"learned-{memory_id}.md"

    async def _promote(
        self, candidate: RuntimeEvent, promoted_by: str, *, occurrences: int
    ) -> OutboxRow:
        p = candidate.payload
        cid = str(p["candidate_id"])
        mid = memory_id_for(cid)
        kind = MemoryType(p["memory_type"])
        target = (
            f".air/shared/rules/learned-{mid}.md"
            if kind == MemoryType.RULE
            else f"learned-memory://{mid}"
        )
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
            await self._complete_promotion(row)
        return row

    async def _complete_promotion(self, row: OutboxRow) -> bool:
        memory = self.memory.get(row.memory_id)
        assert memory is not None  # the outbox row and the memory commit together
        if memory.status == MemoryStatus.ACTIVE and memory.memory_type == MemoryType.RULE:
            self._write_rule(memory)
        if str(row.candidate_id) in self._events("memory.promoted", "candidate_id"):
            return False
        await self.ledger.record(
            "memory.promoted",
            {
                "candidate_id": row.candidate_id,
                "target_ref": row.target_ref or memory.target_ref or "",
                "promoted_by": row.detail or POLICY_PROMOTER,
                "summary": _one_line(memory.content, 160),
            },
        )
        return True

    def _rules_dir(self) -> Path:
        """``.air/shared/rules`` after checking it resolves inside the project's shared root."""
        rules = self.shared_root / "rules"
        rules.mkdir(parents=True, exist_ok=True)
        expected = Path(os.path.realpath(self.shared_root)) / "rules"
        if Path(os.path.realpath(rules)) != expected:
            raise AirException.of(
                kind=ErrorKind.PERMISSION_DENIED,
                message=f"{rules} resolves outside the project ({os.path.realpath(rules)})",
                user_action=f"Replace the link {rules} with a directory, then run air again.",
            )
        return rules

    def _write_rule(self, memory: LearnedMemory) -> None:
        """Write the rule file (same bytes on every replay): temp file, fsync, rename."""
        rules = self._rules_dir()
        final = rules / f"learned-{memory.memory_id}.md"
        text = (
            f"<!-- air learned memory {memory.memory_id}; archived memories are removed -->\n"
            f"# Learned rule\n\n- {_one_line(memory.content)}\n"
        ).encode()
        if final.is_file() and not final.is_symlink() and final.read_bytes() == text:
            return
        temp = rules / f".learned-{memory.memory_id}.md.tmp"
        temp.unlink(missing_ok=True)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temp, final)

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
                await self._complete_archive(row)
                done.append(memory.memory_id)
        return done

    async def _complete_archive(self, row: OutboxRow) -> bool:
        if row.target_ref and not row.target_ref.startswith("learned-memory://"):
            self._rule_path(row.memory_id).unlink(missing_ok=True)
        if row.memory_id in self._events("memory.archived", "memory_id"):
            return False
        await self.ledger.record(
            "memory.archived",
            {"memory_id": row.memory_id, "target_ref": row.target_ref, "reason": row.detail},
        )
        return True

    # -- recovery (§18.4 step 4 / 5) --------------------------------------------------------
    async def recover(self) -> KnowledgeRecovery:
        """Converge this session's knowledge writes after a crash. Idempotent."""
        report = KnowledgeRecovery()
        if not self.enabled:
            return report
        sid = self.ledger.session_id
        for debug_task, failed_task, result, error in _completed_debug_tasks(self.ledger.history()):
            rid = debug_record_id(sid, debug_task)
            # a record of this fix under another id (written by an older air) counts as well
            earlier = [
                r
                for r in self.debug.lookup_by_task(failed_task)
                if r.session_id == sid and (r.metadata or {}).get("debug_task_id") == debug_task
            ]
            if not earlier:
                if await self.learn_from_debug(debug_task, failed_task, result, error):
                    report.debug_records_created.append(rid)
        announced = self._events("debug.record.created", "debug_record_id")
        records = self.debug.lookup_by_session(sid)
        for record in records:
            if record.debug_record_id not in announced:
                await self._announce_record(record)
                report.debug_events_emitted.append(record.debug_record_id)
        ours = self.memory.outbox(session_id=sid)
        for row in sorted(ours, key=lambda r: r.action != "promoted"):
            if row.action == "promoted" and await self._complete_promotion(row):
                report.promotions_completed.append(str(row.candidate_id))
            elif row.action == "archived" and await self._complete_archive(row):
                report.archives_completed.append(row.memory_id)
        known = set(self._events("memory.candidate.created", "candidate_id"))
        for signature in dict.fromkeys(r.failure_signature for r in records):
            cid = await self.mine(signature)
            if cid is not None and cid not in known:
                report.candidates_created.append(cid)
        promoted = self._events("memory.promoted", "candidate_id")
        for cid, event in self._events("memory.candidate.created", "candidate_id").items():
            if cid in promoted:
                continue
            if self.memory.get(memory_id_for(cid)) is not None:
                report.superseded.append(cid)
            elif cid.startswith("cand_sig_"):
                await self._promote(event, POLICY_PROMOTER, occurrences=self.threshold)
                report.requeued.append(cid)
            else:
                report.awaiting_confirmation.append(cid)
        rules = self.shared_root / "rules"
        for temp in sorted(rules.glob(".learned-*.md.tmp")) if rules.is_dir() else []:
            temp.unlink(missing_ok=True)
            report.temp_files_removed.append(temp.name)
        for rid in self._events("debug.record.created", "debug_record_id"):
            if self.debug.get(rid) is None:
                report.orphan_debug_events.append(rid)
        report.archived = await self.archive_stale()
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
                result = WorkerResult.model_validate(p["worker_result"])
                parent = parents[task_id]
                found.append((task_id, parent, result, last_error.get(parent)))
    return found


async def recover_knowledge(
    ledger: KnowledgeLedger, project_root: str | os.PathLike[str]
) -> KnowledgeRecovery:
    """The start-up step (``open_runtime()`` recovery): converge, archive stale, close."""
    service = KnowledgeService.for_project(ledger, project_root)
    try:
        return await service.recover()
    finally:
        service.close()
