"""What a worker returns: ``WorkerResult`` and the five role result payloads.

Owns: ``WorkerStatus``, ``WorkerResult``, ``VerificationResult``, ``Risk``, ``FollowUpTask``,
``BlockerReport`` and ``ExecutorResult`` / ``ReviewerResult`` / ``DebuggerResult`` /
``CompactorResult`` / ``ExperienceMinerResult`` (contracts §11; fields IMPL where the baseline
is silent, see docs/decisions.md).
"""

from enum import StrEnum
from typing import Any, Literal

from pydantic import Field

from air.contracts.artifact_records import ArtifactRef
from air.contracts.error import AirError
from air.contracts.evidence_records import EvidenceRef
from air.contracts.ids import AgentID, Contract, TaskID, empty_list
from air.contracts.runtime import AgentType

__all__ = [
    "ROLE_RESULT_MODELS",
    "BlockerReport",
    "CompactorResult",
    "DebuggerResult",
    "ExecutorResult",
    "ExperienceMinerResult",
    "FollowUpTask",
    "ReviewerResult",
    "Risk",
    "VerificationResult",
    "WorkerResult",
    "WorkerStatus",
]


class WorkerStatus(StrEnum):
    COMPLETED = "completed"
    FAILED = "failed"
    BLOCKED = "blocked"
    CANCELLED = "cancelled"
    PARTIAL = "partial"
    """IMPL: a budget or stall stop after useful work (runner contract); scheduled as failed."""


class VerificationResult(Contract):
    name: str
    status: Literal["passed", "failed", "skipped", "unknown"]
    evidence_refs: list[EvidenceRef] | None = None
    notes: str | None = None


class Risk(Contract):
    severity: Literal["low", "medium", "high"]
    summary: str


class FollowUpTask(Contract):
    title: str
    description: str
    type: Literal["execute", "review", "debug", "docs"] | None = None


class BlockerReport(Contract):
    reason: str
    needs: Literal["user_decision", "architecture_decision", "permission", "environment", "other"]
    options: list[str] = Field(default_factory=empty_list)
    evidence_ref_ids: list[str] = Field(default_factory=empty_list)


class ExecutorResult(Contract):
    changes_made: bool
    """True when the task changed project files (then verification must have passed)."""
    notes: str | None = None
    blocker: BlockerReport | None = None


class ReviewerResult(Contract):
    verdict: Literal["approved", "changes_requested", "blocked"]
    findings: list[str] = Field(default_factory=empty_list)


class DebuggerResult(Contract):
    diagnosis: str
    root_cause: str | None = None
    fixed: bool
    failure_signature: str | None = None


class CompactorResult(Contract):
    summary_id: str
    summary_text: str


class ExperienceMinerResult(Contract):
    candidates: list[str] = Field(default_factory=empty_list)
    """Short statements proposed as learned memory (rules, skills, preferences)."""


ROLE_RESULT_MODELS: dict[str, type[Contract]] = {
    "ExecutorResult": ExecutorResult,
    "ReviewerResult": ReviewerResult,
    "DebuggerResult": DebuggerResult,
    "CompactorResult": CompactorResult,
    "ExperienceMinerResult": ExperienceMinerResult,
}


class WorkerResult(Contract):
    task_id: TaskID
    agent_id: AgentID
    agent_type: AgentType
    status: WorkerStatus
    summary: str
    changed_files: list[str] = Field(default_factory=empty_list)
    diff_ref: str | None = None
    artifacts: list[ArtifactRef] = Field(default_factory=empty_list)
    verification: list[VerificationResult] = Field(default_factory=empty_list)
    risks: list[Risk] = Field(default_factory=empty_list)
    follow_up_tasks: list[FollowUpTask] = Field(default_factory=empty_list)
    evidence_refs: list[EvidenceRef] = Field(default_factory=empty_list)
    result: dict[str, Any] | None = None
    """The role payload (ExecutorResult, ...) as a mapping, validated by ROLE_RESULT_MODELS."""
    error: AirError | None = None
    stop_reason: str | None = None
    """IMPL: why the worker stopped when not by its own choice (max_turns, stalled, ...)."""
    raw_text: str | None = None
    """The model's last text when structured output failed validation."""
    usage: dict[str, Any] | None = None
