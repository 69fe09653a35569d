"""Event payload models, group ``knowledge`` (``air.events.payloads``; IMPL-BOOT-7).

What a session learns and keeps: context compaction and summaries, memory candidates and
promotions, debug records.
"""

from air.contracts.artifact_records import MemoryType
from air.contracts.error import AirError
from air.contracts.task import (
    TaskSpec,
)
from air.events.payloads.start import EventPayload

__all__ = [
    "CompactionCompletedPayload",
    "CompactionFailedPayload",
    "CompactionRequestedPayload",
    "CompactionStartedPayload",
    "DebugRecordCreatedPayload",
    "MemoryArchivedPayload",
    "MemoryCandidateCreatedPayload",
    "MemoryPromotedPayload",
    "SummaryCreatedPayload",
]


# --- context / summaries ------------------------------------------------------------------


class CompactionRequestedPayload(EventPayload):
    accepted: bool
    reason: str | None = None
    task_spec: TaskSpec | None = None
    """The compaction task (type ``compact``) inserted into ``tasks`` when accepted."""


class CompactionStartedPayload(EventPayload):
    task_id: str
    agent_id: str | None = None


class CompactionCompletedPayload(EventPayload):
    task_id: str
    summary_id: str


class CompactionFailedPayload(EventPayload):
    task_id: str
    error: AirError
    blocked: bool = False
    """True: the compaction task ends ``blocked`` instead of ``failed``."""


class SummaryCreatedPayload(EventPayload):
    summary_id: str
    content: str
    artifact_id: str | None = None
    task_id: str | None = None
    covers_until_message_id: str | None = None
    token_count: int | None = None


# --- memory / debug knowledge -------------------------------------------------------------


class MemoryCandidateCreatedPayload(EventPayload):
    candidate_id: str
    memory_type: MemoryType
    content: str
    task_id: str | None = None


class MemoryPromotedPayload(EventPayload):
    """Fixed by SDD §18.4: exactly {candidate_id, target_ref, promoted_by, summary}."""

    candidate_id: str
    target_ref: str
    promoted_by: str
    summary: str


class MemoryArchivedPayload(EventPayload):
    memory_id: str
    target_ref: str | None = None
    reason: str | None = None


class DebugRecordCreatedPayload(EventPayload):
    debug_record_id: str
    failure_signature: str
    task_id: str | None = None
