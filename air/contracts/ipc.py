"""IPC contracts between the parent and a worker (contracts §10): envelope, kinds, payloads.

Owns: ``IPC_PROTOCOL_VERSION``, ``IpcKind`` and the two direction sets, ``IpcEnvelope`` (the one
NDJSON line shape), the control payloads (``agent.start`` / ``cancel`` / ``pause`` / ``resume`` /
``extend_timeout`` and the IMPL controls ``agent.wrap_up`` and ``agent.get_state``), and the
payloads of ``tool.call`` / ``tool.result`` / ``tool.stream`` / ``worker.result`` /
``worker.checkpoint`` / ``event`` / ``log`` / ``protocol.error``. ``worker.ready`` travels as an
``event`` whose inner type is ``worker.ready`` (IMPL-IPC-1): a live signal, never persisted.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import Field

from air.contracts.error import AirError
from air.contracts.ids import AgentID, Contract, ISOTimeString, JsonObject, SessionID
from air.contracts.runtime import AgentRuntimeContext, ContextPack
from air.contracts.task import TaskSpec

__all__ = [
    "IPC_PROTOCOL_VERSION",
    "PARENT_TO_WORKER",
    "WORKER_READY_EVENT",
    "WORKER_TO_PARENT",
    "AgentCancelControl",
    "AgentExtendTimeoutControl",
    "AgentGetStateControl",
    "AgentPauseControl",
    "AgentResumeControl",
    "AgentStartControl",
    "AgentWrapUpControl",
    "ControlPayload",
    "IpcDirection",
    "IpcEnvelope",
    "IpcKind",
    "LogPayload",
    "ProtocolErrorPayload",
    "ToolCallPayload",
    "ToolStreamPayload",
    "WorkerCheckpointPayload",
    "WorkerEventPayload",
    "WorkerReadyPayload",
]

IPC_PROTOCOL_VERSION = 1
WORKER_READY_EVENT = "worker.ready"

IpcKind = Literal[
    "control",
    "tool.result",
    "tool.stream",
    "event",
    "log",
    "tool.call",
    "worker.result",
    "worker.checkpoint",
    "protocol.error",
]
IpcDirection = Literal["parent_to_worker", "worker_to_parent"]

PARENT_TO_WORKER: frozenset[str] = frozenset({"control", "tool.result", "tool.stream"})
WORKER_TO_PARENT: frozenset[str] = frozenset(
    {"event", "log", "tool.call", "worker.result", "worker.checkpoint", "protocol.error"}
)


class IpcEnvelope(Contract):
    """One NDJSON line. ``payload`` is checked per kind by ``WorkerProtocol``."""

    v: Literal[1] = 1
    id: str
    kind: IpcKind
    ts: ISOTimeString
    session_id: SessionID
    agent_id: AgentID
    correlation_id: str | None = None
    payload: JsonObject = Field(default_factory=dict)


# --- control (parent → worker) ------------------------------------------------------------


class AgentStartControl(Contract):
    type: Literal["agent.start"] = "agent.start"
    version: int = IPC_PROTOCOL_VERSION
    task_spec: TaskSpec
    context_pack: ContextPack
    runtime: AgentRuntimeContext
    options: JsonObject = Field(default_factory=dict)
    """IMPL: loop tuning (``heartbeat_s``, ``grace_turns``, ``max_tokens``)."""


class AgentCancelControl(Contract):
    type: Literal["agent.cancel"] = "agent.cancel"
    reason: str


class AgentPauseControl(Contract):
    type: Literal["agent.pause"] = "agent.pause"
    reason: str


class AgentResumeControl(Contract):
    type: Literal["agent.resume"] = "agent.resume"


class AgentExtendTimeoutControl(Contract):
    type: Literal["agent.extend_timeout"] = "agent.extend_timeout"
    extra_ms: int
    reason: str


class AgentWrapUpControl(Contract):
    """IMPL: the soft timeout fired; checkpoint and give the final answer now."""

    type: Literal["agent.wrap_up"] = "agent.wrap_up"
    reason: str


class AgentGetStateControl(Contract):
    """IMPL: the stall watchdog's liveness probe; answered by an ``agent.heartbeat`` event."""

    type: Literal["agent.get_state"] = "agent.get_state"


ControlPayload: TypeAlias = Annotated[
    AgentStartControl
    | AgentCancelControl
    | AgentPauseControl
    | AgentResumeControl
    | AgentExtendTimeoutControl
    | AgentWrapUpControl
    | AgentGetStateControl,
    Field(discriminator="type"),
]


# --- worker → parent ----------------------------------------------------------------------


class WorkerReadyPayload(Contract):
    protocol_version: int
    worker_version: str


class WorkerEventPayload(Contract):
    """An ``event`` message: a runtime event the parent validates and ingests."""

    type: str
    version: int = 1
    payload: JsonObject = Field(default_factory=dict)


class LogPayload(Contract):
    level: Literal["debug", "info", "warning", "error"] = "info"
    message: str


class ToolCallPayload(Contract):
    """``tool.call``; the envelope ``id`` is the correlation id of the answers."""

    name: str
    input: JsonObject = Field(default_factory=dict)


class ToolStreamPayload(Contract):
    """``tool.stream``: a ToolEvent (tools) or a ProviderStreamEvent (``provider.complete``)."""

    event: JsonObject


class WorkerCheckpointPayload(Contract):
    turn: int = 0
    state: str = "running"
    reason: str | None = None
    data: JsonObject = Field(default_factory=dict)


class ProtocolErrorPayload(Contract):
    error: AirError
    detail: Any | None = None
