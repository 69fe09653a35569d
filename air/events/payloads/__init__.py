"""Event payload schemas: one frozen pydantic model per event type and version (baselines §A.7).

Owns the ``PAYLOADS`` table keyed by ``(type, version)``, the ``PERSISTENCE`` policy per type
(durable or ephemeral), ``EPHEMERAL_TYPES``, ``DURABLE_TYPES`` and ``payload_model``. Every model
is version 1 (IMPL-EVT-1). A payload change is a new version: add a new model and a new
``PAYLOADS`` entry, never edit a published one.

The models live in six group modules, each imported with its first model used (IMPL-BOOT-7):
``start`` (what a headless run records before its first model request), ``ends`` (heartbeats,
progress, and tasks', agents', workspaces' and sessions' ends, with the ``WorkerResult`` they
carry), ``tools`` (tool and command runs, permissions, artifacts, diagnostics, evidence),
``conversation`` (messages, the Main Agent, requirements, architecture, the HUD), ``knowledge``
(compaction, summaries, memory, debug records) and ``doctor``. This module itself is plain
data: the tables name each type's group and model, ``PAYLOADS`` is a read-only mapping that
imports a model's group when the model is looked up (membership, iteration and ``len`` import
nothing). A model is imported from its group module (IMPL-STRUCT-1).

Ids in payloads are plain strings; the projection (``air.events.projection``) decides which
domain rows they touch. Failure payloads always carry ``error: AirError``.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from air.contracts.event import EventPersistence

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["DURABLE_TYPES", "EPHEMERAL_TYPES", "PAYLOADS", "PERSISTENCE", "payload_model"]

_V1: dict[str, tuple[str, str]] = {
    "session.created": ("start", "SessionCreatedPayload"),
    "session.archived": ("ends", "SessionArchivedPayload"),
    "session.deleted": ("ends", "SessionDeletedPayload"),
    "session.model.changed": ("conversation", "SessionModelChangedPayload"),
    "user.message.created": ("conversation", "UserMessageCreatedPayload"),
    "assistant.message.started": ("conversation", "AssistantMessageStartedPayload"),
    "assistant.message.delta": ("conversation", "AssistantMessageDeltaPayload"),
    "assistant.message.created": ("conversation", "AssistantMessageCreatedPayload"),
    "assistant.message.failed": ("conversation", "AssistantMessageFailedPayload"),
    "agent.started": ("start", "AgentStartedPayload"),
    "agent.heartbeat": ("ends", "AgentHeartbeatPayload"),
    "agent.completed": ("ends", "AgentCompletedPayload"),
    "agent.failed": ("ends", "AgentFailedPayload"),
    "agent.lost": ("ends", "AgentLostPayload"),
    "agent.checkpointed": ("ends", "AgentCheckpointedPayload"),
    "agent.cancelled": ("ends", "AgentCancelledPayload"),
    "task.created": ("start", "TaskCreatedPayload"),
    "task.dependency.added": ("start", "TaskDependencyAddedPayload"),
    "task.started": ("start", "TaskStartedPayload"),
    "task.progress": ("ends", "TaskProgressPayload"),
    "task.completed": ("ends", "TaskCompletedPayload"),
    "task.blocked": ("ends", "TaskBlockedPayload"),
    "task.failed": ("ends", "TaskFailedPayload"),
    "task.cancelled": ("ends", "TaskCancelledPayload"),
    "task.interrupted": ("ends", "TaskInterruptedPayload"),
    "tool.started": ("tools", "ToolStartedPayload"),
    "tool.progress": ("tools", "ToolProgressPayload"),
    "tool.completed": ("tools", "ToolCompletedPayload"),
    "tool.failed": ("tools", "ToolFailedPayload"),
    "tool.cancelled": ("tools", "ToolCancelledPayload"),
    "command.started": ("tools", "CommandStartedPayload"),
    "command.stdout.delta": ("tools", "CommandStreamDeltaPayload"),
    "command.stderr.delta": ("tools", "CommandStreamDeltaPayload"),
    "command.completed": ("tools", "CommandCompletedPayload"),
    "command.failed": ("tools", "CommandFailedPayload"),
    "artifact.created": ("tools", "ArtifactCreatedPayload"),
    "diagnostic.created": ("tools", "DiagnosticCreatedPayload"),
    "evidence.created": ("tools", "EvidenceCreatedPayload"),
    "context.compaction.requested": ("knowledge", "CompactionRequestedPayload"),
    "context.compaction.started": ("knowledge", "CompactionStartedPayload"),
    "context.compaction.completed": ("knowledge", "CompactionCompletedPayload"),
    "context.compaction.failed": ("knowledge", "CompactionFailedPayload"),
    "summary.created": ("knowledge", "SummaryCreatedPayload"),
    "permission.decision.recorded": ("tools", "PermissionDecisionRecordedPayload"),
    "permission.prompt.requested": ("tools", "PermissionPromptRequestedPayload"),
    "permission.prompt.resolved": ("tools", "PermissionPromptResolvedPayload"),
    "doctor.run.started": ("doctor", "DoctorRunStartedPayload"),
    "doctor.issue.found": ("doctor", "DoctorIssueFoundPayload"),
    "doctor.run.completed": ("doctor", "DoctorRunCompletedPayload"),
    "requirement.changed": ("conversation", "RequirementChangedPayload"),
    "requirement.delivered": ("conversation", "RequirementDeliveredPayload"),
    "architecture.plan.updated": ("conversation", "ArchitecturePlanUpdatedPayload"),
    "architecture.impact.completed": ("conversation", "ArchitectureImpactCompletedPayload"),
    "main_agent.state.changed": ("conversation", "MainAgentStateChangedPayload"),
    "workspace.created": ("start", "WorkspaceCreatedPayload"),
    "workspace.merge.started": ("ends", "WorkspaceMergeStartedPayload"),
    "workspace.merge.completed": ("ends", "WorkspaceMergeCompletedPayload"),
    "workspace.merge.conflicted": ("ends", "WorkspaceMergeConflictedPayload"),
    "workspace.abandoned": ("ends", "WorkspaceAbandonedPayload"),
    "workspace.cleaned": ("ends", "WorkspaceCleanedPayload"),
    "memory.candidate.created": ("knowledge", "MemoryCandidateCreatedPayload"),
    "memory.promoted": ("knowledge", "MemoryPromotedPayload"),
    "memory.archived": ("knowledge", "MemoryArchivedPayload"),
    "debug.record.created": ("knowledge", "DebugRecordCreatedPayload"),
    "capability.state.changed": ("start", "CapabilityStateChangedPayload"),
    "hud.frame.rendered": ("conversation", "HudFrameRenderedPayload"),
    "model.usage.recorded": ("ends", "ModelUsageRecordedPayload"),
}
"""Per event type (version 1): the group module that defines its model, and the model's name."""


class _PayloadTable(Mapping[tuple[str, int], "type[BaseModel]"]):
    """``PAYLOADS``: the payload model per ``(event type, version)``, imported on first lookup.

    The keys are plain data; ``table[key]`` imports the key's group module once and keeps the
    model. ``in``, iteration and ``len`` import nothing; ``items()`` and ``values()`` import
    every group. Read-only, like the dict it replaces was to every caller.
    """

    __slots__ = ("_homes", "_models")

    def __init__(self, homes: Mapping[tuple[str, int], tuple[str, str]]) -> None:
        self._homes = dict(homes)
        self._models: dict[tuple[str, int], type[BaseModel]] = {}

    def __getitem__(self, key: tuple[str, int]) -> type[BaseModel]:
        model = self._models.get(key)
        if model is None:
            group, name = self._homes[key]
            module = importlib.import_module(f"{__name__}.{group}")
            model = self._models[key] = getattr(module, name)
        return model

    def __contains__(self, key: object) -> bool:
        return key in self._homes

    def __iter__(self) -> Iterator[tuple[str, int]]:
        return iter(self._homes)

    def __len__(self) -> int:
        return len(self._homes)

    def __repr__(self) -> str:
        return f"_PayloadTable({len(self._homes)} event types)"


EPHEMERAL_TYPES: frozenset[str] = frozenset(
    {
        "agent.heartbeat",
        "task.progress",
        "assistant.message.delta",
        "tool.progress",
        "command.stdout.delta",
        "command.stderr.delta",
        "hud.frame.rendered",
    }
)
"""The seven ephemeral types (SDD §5.5): published on the bus, never stored."""

DURABLE_TYPES: frozenset[str] = frozenset(t for t in _V1 if t not in EPHEMERAL_TYPES)

PAYLOADS: Mapping[tuple[str, int], type[BaseModel]] = _PayloadTable(
    {(t, 1): home for t, home in _V1.items()}
)
"""Payload model per (event type, version)."""

PERSISTENCE: dict[str, EventPersistence] = {
    t: (EventPersistence.EPHEMERAL if t in EPHEMERAL_TYPES else EventPersistence.DURABLE)
    for t in _V1
}
"""Persistence policy per event type (the same for every version of a type)."""


def payload_model(event_type: str, version: int = 1) -> type[BaseModel] | None:
    """Return the payload model of ``(event_type, version)``, or None when unknown."""
    return PAYLOADS.get((event_type, version))
