"""Every public contract of air as frozen pydantic v2 models (SDD §3).

Owns nothing itself: it re-exports the 16 contract modules (ids, error, event, runtime, ipc,
task, worker_result, tool, permission, artifact, evidence, project, provider, ui, capability,
platform). Imports pydantic only; no Trio, no I/O.

The re-export is lazy (IMPL-BOOT-2): ``from air.contracts import X`` imports only the contract
module ``_HOMES`` names for ``X`` (which imports what it needs itself), so a process that never
names a console contract never builds the ``ui`` models, and naming a provider contract does not
build the task, worker-result or permission ones.

Seven more modules hold the models a run builds only after its first model request
(IMPL-BOOT-12): ``ipc_messages``, ``task_results``, ``doctor_report``, ``tool_runs``,
``artifact_records``, ``evidence_records`` and ``permission_records``. They are no home of
``_HOMES``: each of their names is public from its home module (``ipc``, ``task``, ``platform``,
``tool``, ``artifact``, ``evidence``, ``permission``), whose own ``__getattr__`` imports it.
``display`` holds no model: the one rule for showing untrusted exact text (IMPL-UI-7).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from air.contracts.exports import lazy_export

if TYPE_CHECKING:
    from air.contracts.artifact import *  # noqa: F403
    from air.contracts.capability import *  # noqa: F403
    from air.contracts.error import *  # noqa: F403
    from air.contracts.event import *  # noqa: F403
    from air.contracts.evidence import *  # noqa: F403
    from air.contracts.ids import *  # noqa: F403
    from air.contracts.ipc import *  # noqa: F403
    from air.contracts.permission import *  # noqa: F403
    from air.contracts.platform import *  # noqa: F403
    from air.contracts.project import *  # noqa: F403
    from air.contracts.provider import *  # noqa: F403
    from air.contracts.runtime import *  # noqa: F403
    from air.contracts.task import *  # noqa: F403
    from air.contracts.tool import *  # noqa: F403
    from air.contracts.ui import *  # noqa: F403
    from air.contracts.worker_result import *  # noqa: F403

_MODULES = (
    # a name two modules list (``PermissionAnswer``) is taken from the first
    "ids",
    "error",
    "event",
    "runtime",
    "task",
    "ipc",
    "worker_result",
    "tool",
    "permission",
    "artifact",
    "evidence",
    "provider",
    "project",
    "capability",
    "platform",
    "ui",
)


_HOMES: dict[str, str] = {
    "AgentID": "ids",
    "empty_list": "ids",
    "ArtifactID": "ids",
    "Clock": "ids",
    "CommandRunID": "ids",
    "Contract": "ids",
    "EvidenceRefID": "ids",
    "ISOTimeString": "ids",
    "IdGenerator": "ids",
    "JsonObject": "ids",
    "MessageID": "ids",
    "ProjectID": "ids",
    "ProviderID": "ids",
    "SessionID": "ids",
    "SystemClock": "ids",
    "TaskID": "ids",
    "ToolRunID": "ids",
    "UUID": "ids",
    "UlidGenerator": "ids",
    "WorkspaceID": "ids",
    "new_id": "ids",
    "new_ulid": "ids",
    "new_uuid": "ids",
    "utc_now_iso": "ids",
    "AirError": "error",
    "AirException": "error",
    "BAD_INPUT_KINDS": "error",
    "CliExit": "error",
    "ErrorKind": "error",
    "ErrorSeverity": "error",
    "Retryability": "error",
    "WorkerExit": "error",
    "exit_code_for": "error",
    "first_air_exception": "error",
    "is_bad_input": "error",
    "make_air_error": "error",
    "normalize_message": "error",
    "semantic_signature_for": "error",
    "EntityRef": "event",
    "EntityType": "event",
    "EventFilter": "event",
    "EventPersistence": "event",
    "EventSource": "event",
    "EventSourceKind": "event",
    "PersistedEventRecord": "event",
    "RuntimeEvent": "event",
    "RuntimeRole": "event",
    "new_event": "event",
    "AgentRuntimeContext": "runtime",
    "AgentType": "runtime",
    "AssembledContext": "runtime",
    "CompactionResult": "runtime",
    "ContextAssembleInput": "runtime",
    "ContextPack": "runtime",
    "ContextPackRefs": "runtime",
    "LayerOmission": "runtime",
    "PermissionTemplate": "runtime",
    "PromptLayer": "runtime",
    "PromptLayerLevel": "runtime",
    "AGENT_TYPE_FOR_TASK": "task",
    "DependencySource": "task",
    "DependencyType": "task",
    "MergeResult": "task",
    "ModelPolicy": "task",
    "OUTPUT_CONTRACT_FOR_TASK": "task",
    "RetryAction": "task",
    "RetryDecision": "task",
    "SchedulerRunResult": "task",
    "SchedulerState": "task",
    "SchedulerWavePlan": "task",
    "TERMINAL_TASK_STATUSES": "task",
    "TaskConstraints": "task",
    "TaskContextRefs": "task",
    "TaskDependencySpec": "task",
    "TaskScope": "task",
    "TaskSpec": "task",
    "TaskStatus": "task",
    "TaskType": "task",
    "VerificationPolicy": "task",
    "WavePlanEntry": "task",
    "WorkerOutputContract": "task",
    "WorkspacePlan": "task",
    "WorkspaceRef": "task",
    "WorkspaceStatus": "task",
    "WorkspaceStrategy": "task",
    "AgentCancelControl": "ipc",
    "AgentExtendTimeoutControl": "ipc",
    "AgentGetStateControl": "ipc",
    "AgentPauseControl": "ipc",
    "AgentResumeControl": "ipc",
    "AgentStartControl": "ipc",
    "AgentWrapUpControl": "ipc",
    "ControlPayload": "ipc",
    "IPC_PROTOCOL_VERSION": "ipc",
    "IpcDirection": "ipc",
    "IpcEnvelope": "ipc",
    "IpcKind": "ipc",
    "LogPayload": "ipc",
    "PARENT_TO_WORKER": "ipc",
    "ProtocolErrorPayload": "ipc",
    "ToolCallPayload": "ipc",
    "ToolStreamPayload": "ipc",
    "WORKER_READY_EVENT": "ipc",
    "WORKER_TO_PARENT": "ipc",
    "WorkerCheckpointPayload": "ipc",
    "WorkerEventPayload": "ipc",
    "WorkerReadyPayload": "ipc",
    "BlockerReport": "worker_result",
    "CompactorResult": "worker_result",
    "DebuggerResult": "worker_result",
    "ExecutorResult": "worker_result",
    "ExperienceMinerResult": "worker_result",
    "FollowUpTask": "worker_result",
    "ROLE_RESULT_MODELS": "worker_result",
    "ReviewerResult": "worker_result",
    "Risk": "worker_result",
    "VerificationResult": "worker_result",
    "WorkerResult": "worker_result",
    "WorkerStatus": "worker_result",
    "Diagnostic": "tool",
    "DiagnosticSeverity": "tool",
    "ToolCategory": "tool",
    "ToolDefinition": "tool",
    "ToolEvent": "tool",
    "ToolExecutionContext": "tool",
    "ToolPermissionSpec": "tool",
    "ToolResultEnvelope": "tool",
    "ToolResultStatus": "tool",
    "ToolRunStatus": "tool",
    "CommandCategory": "permission",
    "CommandRiskAnalysis": "permission",
    "CommandSegment": "permission",
    "DeclaredPermissions": "permission",
    "FailClosedPrompt": "permission",
    "PathCategory": "permission",
    "PathPolicy": "permission",
    "PathRiskClassification": "permission",
    "PermissionAction": "permission",
    "PermissionAnswer": "permission",
    "PermissionDecision": "permission",
    "PermissionGrantScope": "permission",
    "PermissionPrompt": "permission",
    "PermissionPromptRequest": "permission",
    "PermissionPromptResponse": "permission",
    "PermissionRecordResult": "permission",
    "PermissionRequestContext": "permission",
    "RiskLevel": "permission",
    "ArtifactContext": "artifact",
    "ArtifactCreateInput": "artifact",
    "ArtifactReadResult": "artifact",
    "ArtifactRef": "artifact",
    "ArtifactType": "artifact",
    "DebugRecord": "artifact",
    "LearnedMemory": "artifact",
    "MemoryStatus": "artifact",
    "MemoryType": "artifact",
    "EvidenceCreateInput": "evidence",
    "EvidenceKind": "evidence",
    "EvidenceRef": "evidence",
    "CacheControl": "provider",
    "CanonicalMessage": "provider",
    "ContentBlock": "provider",
    "MessageStartEvent": "provider",
    "MessageStopEvent": "provider",
    "ModelAssignment": "provider",
    "ModelConfig": "provider",
    "ModelPrice": "provider",
    "ModelRequirement": "provider",
    "ModelsConfig": "provider",
    "ProviderCapabilityMatrix": "provider",
    "ProviderCompletionInput": "provider",
    "ProviderConfig": "provider",
    "ProviderErrorEvent": "provider",
    "ProviderKind": "provider",
    "ProviderStreamEvent": "provider",
    "RetryConfig": "provider",
    "StopReason": "provider",
    "TextBlock": "provider",
    "TextDeltaEvent": "provider",
    "ToolChoice": "provider",
    "ToolResultBlock": "provider",
    "ToolSpec": "provider",
    "ToolUseBlock": "provider",
    "ToolUseInputDeltaEvent": "provider",
    "ToolUseStartEvent": "provider",
    "ToolUseStopEvent": "provider",
    "Usage": "provider",
    "OpenSessionOptions": "project",
    "PROJECT_SCHEMA_VERSION": "project",
    "ProjectContext": "project",
    "ProjectInitOptions": "project",
    "SessionContext": "project",
    "SessionStatus": "project",
    "CapabilityManifestV1": "capability",
    "CapabilityState": "capability",
    "CapabilityTrust": "capability",
    "ValidationResult": "capability",
    "DoctorIssue": "platform",
    "DoctorMode": "platform",
    "DoctorRunInput": "platform",
    "DoctorRunOutput": "platform",
    "PlatformTier": "platform",
    "ProcessIdentity": "platform",
    "AgentProjection": "ui",
    "ArtifactProjection": "ui",
    "BlockerProjection": "ui",
    "CommandRunProjection": "ui",
    "DiffProjection": "ui",
    "EvidenceProjection": "ui",
    "MainAgentProjection": "ui",
    "MessageProjection": "ui",
    "PERMISSION_ANSWERS": "ui",
    "PermissionPromptProjection": "ui",
    "PermissionSegmentProjection": "ui",
    "ProjectionClient": "ui",
    "ProjectionSnapshot": "ui",
    "ProjectionSubscription": "ui",
    "SessionProjection": "ui",
    "TaskProjection": "ui",
    "ToolRunProjection": "ui",
    "TotalsProjection": "ui",
    "UiCommand": "ui",
    "UiCommandChannel": "ui",
    "UiCommandKind": "ui",
    "WaveProjection": "ui",
}
"""Every re-exported name and the contract module it is taken from: the first in ``_MODULES``
order whose ``__all__`` lists it (a test checks this table against the modules)."""


def __getattr__(name: str) -> Any:
    """The public name ``name`` from its contract module (``_HOMES``), or a contract module
    itself; cached in this module afterwards."""
    if name in _MODULES:  # ``air.contracts.ui`` asked for as an attribute
        return importlib.import_module(f"{__name__}.{name}")
    return lazy_export(__name__, _HOMES, globals(), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
