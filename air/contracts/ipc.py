"""IPC contracts between the parent and a worker (contracts §10): envelope, kinds, payloads.

Owns: ``IPC_PROTOCOL_VERSION``, ``IpcKind`` and the two direction sets, ``IpcEnvelope`` (the one
NDJSON line shape), ``agent.start``'s control and ``tool.call``'s payload. ``worker.ready``
travels as an ``event`` whose inner type is ``worker.ready`` (IMPL-IPC-1): a live signal, never
persisted.

The controls after ``agent.start``, ``ControlPayload`` and the worker's payloads but
``tool.call``'s (which carries the first ``provider.complete``) are
``air.contracts.ipc_messages``': a parent builds none of them before its first model request
(IMPL-BOOT-12).
"""

from typing import Literal

from pydantic import Field

from air.contracts.ids import AgentID, Contract, ISOTimeString, JsonObject, SessionID
from air.contracts.runtime import AgentRuntimeContext, ContextPack
from air.contracts.task import TaskSpec

__all__ = [
    "IPC_PROTOCOL_VERSION",
    "PARENT_TO_WORKER",
    "WORKER_READY_EVENT",
    "WORKER_TO_PARENT",
    "AgentStartControl",
    "IpcDirection",
    "IpcEnvelope",
    "IpcKind",
    "ToolCallPayload",
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


# --- worker → parent ----------------------------------------------------------------------


class ToolCallPayload(Contract):
    """``tool.call``; the envelope ``id`` is the correlation id of the answers."""

    name: str
    input: JsonObject = Field(default_factory=dict)
