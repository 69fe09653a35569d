"""The IPC messages a parent does not build before its first model request (contracts §10;
IMPL-BOOT-12): the controls after ``agent.start`` (``agent.cancel`` / ``pause`` / ``resume`` /
``extend_timeout`` and the IMPL controls ``agent.wrap_up``, ``agent.get_state`` and
``agent.steer``), the
``ControlPayload`` union a worker decodes, and the payloads of the worker's messages
(``tool.stream``, ``event`` with ``worker.ready``, ``log``, ``worker.checkpoint``,
``protocol.error``).

Its users import it where they use one of its models.
"""

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import Field

from air.contracts.error import AirError
from air.contracts.ids import Contract, JsonObject
from air.contracts.ipc import AgentStartControl

__all__ = [
    "AgentCancelControl",
    "AgentExtendTimeoutControl",
    "AgentGetStateControl",
    "AgentPauseControl",
    "AgentResumeControl",
    "AgentSteerControl",
    "AgentWrapUpControl",
    "ControlPayload",
    "LogPayload",
    "ProtocolErrorPayload",
    "ToolStreamPayload",
    "WorkerCheckpointPayload",
    "WorkerEventPayload",
    "WorkerReadyPayload",
]


# --- control (parent → worker), after ``agent.start`` ------------------------------------


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


class AgentSteerControl(Contract):
    """IMPL: a correction from the person for the running work (mid-run steering); the worker
    adds ``text`` to its conversation before its next model turn."""

    type: Literal["agent.steer"] = "agent.steer"
    note_id: str
    text: str = Field(min_length=1, max_length=20_000)


ControlPayload: TypeAlias = Annotated[
    AgentStartControl
    | AgentCancelControl
    | AgentPauseControl
    | AgentResumeControl
    | AgentExtendTimeoutControl
    | AgentWrapUpControl
    | AgentGetStateControl
    | AgentSteerControl,
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
