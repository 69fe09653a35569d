"""A person's side of learned memory: list, show, promote and reject memory candidates.

Owns ``MemoryBook`` over a project's ``learned-memory.db``: an ExperienceMiner's statements
are stored there as ``candidate`` rows (``KnowledgeService.propose``); a person promotes one
(it becomes ``active``; a rule's file is written under ``.air/shared/rules/``, which the
context loader puts into every worker's prompt as L3) or rejects one (``archived``: it is not
proposed again). Both go through the knowledge outbox (IMPL-LEARN-2): the row and its outbox
row in one transaction naming the candidate's session, which records ``memory.promoted`` /
``memory.archived`` when it is next opened (IMPL-LEARN-6). No session is needed here.
"""

from __future__ import annotations

import os
from pathlib import Path

from air.artifacts.knowledge import LearnedMemoryStore
from air.artifacts.rules import RuleFiles
from air.contracts.artifact_records import LearnedMemory, MemoryStatus, MemoryType
from air.contracts.error import AirException, ErrorKind
from air.session.knowledge import own_rule_write

__all__ = ["PROMOTED_BY_USER", "MemoryBook"]

PROMOTED_BY_USER = "user:air memory promote"
REJECTED_BY_USER = "rejected by the user (air memory reject)"


class MemoryBook:
    """The learned memory of one project, for ``air memory``.

    Args:
        project_root: the project directory (its ``.air/local/learned-memory.db`` is read).
    """

    def __init__(self, project_root: str | os.PathLike[str]) -> None:
        root = Path(project_root)
        self.shared_root = root / ".air" / "shared"
        self.store = LearnedMemoryStore.open(root / ".air" / "local" / LearnedMemoryStore.FILENAME)

    def close(self) -> None:
        self.store.close()

    def all(self) -> list[LearnedMemory]:
        """Every memory, candidates first, then oldest first."""
        rows = [m for kind in MemoryType for m in self.store.lookup_by_type(kind)]
        rows.sort(key=lambda m: m.created_at)
        return sorted(rows, key=lambda m: m.status != MemoryStatus.CANDIDATE)

    def get(self, memory_id: str) -> LearnedMemory:
        """The memory ``memory_id`` (``mem_...``; a candidate's ``cand_...`` id names it too).

        Raises:
            AirException: ``not_found`` for an id the project has no memory of.
        """
        mid = (
            "mem_" + memory_id.removeprefix("cand_") if memory_id.startswith("cand_") else memory_id
        )
        found = self.store.get(mid)
        if found is None:
            raise AirException.of(
                kind=ErrorKind.NOT_FOUND,
                message=f"no learned memory {memory_id} in this project",
                user_action="Pick an id from `air memory list`.",
                metadata={"field": "ID"},
            )
        return found

    def _candidate(self, memory_id: str, verb: str) -> LearnedMemory:
        memory = self.get(memory_id)
        if memory.status != MemoryStatus.CANDIDATE:
            raise AirException.of(
                kind=ErrorKind.VALIDATION_ERROR,
                message=f"{memory.memory_id} is {memory.status.value}, not a candidate",
                user_action=f"Only a candidate can be {verb}: see `air memory list`.",
                metadata={"field": "ID"},
            )
        return memory

    def promote(self, memory_id: str) -> LearnedMemory:
        """Make a candidate an active memory (a rule gets its rule file now).

        Raises:
            AirException: ``not_found``; ``validation_error`` for a memory that is no candidate.
        """
        memory = self._candidate(memory_id, "promoted")
        mid = memory.memory_id
        target = (
            RuleFiles.target_ref(mid)
            if memory.memory_type == MemoryType.RULE
            else f"learned-memory://{mid}"
        )
        active = memory.model_copy(update={"status": MemoryStatus.ACTIVE, "target_ref": target})
        self.store.record_action(
            "promoted",
            memory=active,
            session_id=memory.source_session_id or "",
            candidate_id="cand_" + mid.removeprefix("mem_"),
            detail=PROMOTED_BY_USER,
        )
        stored = self.store.get(mid) or active
        if stored.memory_type == MemoryType.RULE and stored.status == MemoryStatus.ACTIVE:
            rules = RuleFiles(self.shared_root)
            own_rule_write(self.shared_root, lambda: rules.write(stored), mid)
        return stored

    def reject(self, memory_id: str) -> LearnedMemory:
        """Archive a candidate: it reaches no prompt and is not proposed again.

        Raises:
            AirException: ``not_found``; ``validation_error`` for a memory that is no candidate.
        """
        memory = self._candidate(memory_id, "rejected")
        self.store.record_action(
            "archived",
            memory_id=memory.memory_id,
            session_id=memory.source_session_id or "",
            candidate_id="cand_" + memory.memory_id.removeprefix("mem_"),
            detail=REJECTED_BY_USER,
        )
        return self.store.get(memory.memory_id) or memory
