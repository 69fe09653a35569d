"""The artifact records (``ArtifactRef``, ``ArtifactCreateInput``, ``ArtifactContext``,
``ArtifactReadResult``) and the knowledge records SDD §3 merges into ``air.contracts.artifact``
(``DebugRecord``, ``LearnedMemory``, ``MemoryType``, ``MemoryStatus``).

Its users import it where they use one of its models; a run builds none of them before its first
model request (IMPL-BOOT-12).
"""

from enum import StrEnum

from air.contracts.artifact import ArtifactType
from air.contracts.ids import (
    AgentID,
    ArtifactID,
    CommandRunID,
    Contract,
    ISOTimeString,
    JsonObject,
    SessionID,
    TaskID,
    ToolRunID,
)

__all__ = [
    "ArtifactContext",
    "ArtifactCreateInput",
    "ArtifactReadResult",
    "ArtifactRef",
    "DebugRecord",
    "LearnedMemory",
    "MemoryStatus",
    "MemoryType",
]


class ArtifactRef(Contract):
    artifact_id: ArtifactID
    uri: str
    path: str
    type: ArtifactType
    sha256: str | None = None
    size_bytes: int | None = None


class ArtifactCreateInput(Contract):
    type: ArtifactType
    slug: str
    """A short name that becomes part of the filename (``<ts>-<id>-<slug><ext>``)."""
    extension: str = ".txt"
    content: bytes
    mime_type: str | None = None


class ArtifactContext(Contract):
    session_id: SessionID
    task_id: TaskID | None = None
    agent_id: AgentID | None = None
    tool_run_id: ToolRunID | None = None
    command_run_id: CommandRunID | None = None


class ArtifactReadResult(Contract):
    ref: ArtifactRef
    content: bytes
    truncated: bool = False


class MemoryType(StrEnum):
    RULE = "rule"
    SKILL = "skill"
    PREFERENCE = "preference"
    FACT = "fact"


class MemoryStatus(StrEnum):
    CANDIDATE = "candidate"
    ACTIVE = "active"
    STALE = "stale"
    ARCHIVED = "archived"


class DebugRecord(Contract):
    """A row of ``debug-records.db`` (contracts §20)."""

    debug_record_id: str
    failure_signature: str
    task_id: TaskID | None = None
    session_id: SessionID | None = None
    diagnosis: str
    root_cause: str | None = None
    fix_summary: str | None = None
    fixed: bool = False
    hit_count: int = 0
    created_at: ISOTimeString
    updated_at: ISOTimeString
    metadata: JsonObject | None = None


class LearnedMemory(Contract):
    """A row of ``learned-memory.db`` (contracts §20)."""

    memory_id: str
    memory_type: MemoryType
    status: MemoryStatus
    content: str
    source_session_id: SessionID | None = None
    occurrences: int = 1
    target_ref: str | None = None
    created_at: ISOTimeString
    updated_at: ISOTimeString
    last_used_at: ISOTimeString | None = None
