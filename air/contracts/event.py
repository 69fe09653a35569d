"""Runtime events: the envelope of every fact air records, and the filter to query them.

Owns: ``EntityType``, ``EntityRef``, ``EventSource`` (with the runtime-role literal set that is
never an AgentType), ``RuntimeEvent``, ``EventPersistence``, ``EventFilter`` and the
``PersistedEventRecord`` row shape (contracts §5, §7; SDD §5).
"""

from enum import StrEnum
from typing import Literal

from pydantic import Field

from air.contracts.ids import (
    UUID,
    Contract,
    ISOTimeString,
    JsonObject,
    ProjectID,
    SessionID,
    empty_list,
    new_uuid,
    utc_now_iso,
)
from air.contracts.runtime import AgentType

__all__ = [
    "EntityRef",
    "EntityType",
    "EventFilter",
    "EventPersistence",
    "EventSource",
    "EventSourceKind",
    "PersistedEventRecord",
    "RuntimeEvent",
    "RuntimeRole",
    "new_event",
]


RuntimeRole = Literal["main", "architecture_designer", "scheduler"]
EventSourceKind = Literal["main", "architecture_designer", "scheduler", "agent", "tool", "system"]


class EntityType(StrEnum):
    """Kinds of entity an event or error can point at (IMPL)."""

    SESSION = "session"
    MESSAGE = "message"
    TASK = "task"
    AGENT = "agent"
    TOOL_RUN = "tool_run"
    COMMAND_RUN = "command_run"
    ARTIFACT = "artifact"
    DIAGNOSTIC = "diagnostic"
    EVIDENCE = "evidence"
    WORKSPACE = "workspace"
    SUMMARY = "summary"
    PERMISSION = "permission"
    MEMORY = "memory"
    DEBUG_RECORD = "debug_record"


class EntityRef(Contract):
    entity_type: EntityType
    entity_id: str


class EventSource(Contract):
    """Who produced an event."""

    kind: EventSourceKind
    id: str | None = None
    agent_type: AgentType | None = None


class EventPersistence(StrEnum):
    DURABLE = "durable"
    EPHEMERAL = "ephemeral"


class RuntimeEvent(Contract):
    """One fact. Durability is decided by the registry from ``type``, never by the producer."""

    id: UUID
    type: str
    version: int = 1
    timestamp: ISOTimeString
    session_id: SessionID
    project_id: ProjectID | None = None
    source: EventSource
    route: list[str] = Field(default_factory=empty_list)
    """Append-only path of components the event passed through; stored also as ``route_text``."""
    payload: JsonObject = Field(default_factory=dict)


def new_event(
    type: str,
    payload: JsonObject,
    *,
    session_id: SessionID,
    source: EventSource,
    version: int = 1,
    project_id: ProjectID | None = None,
    route: list[str] | None = None,
    timestamp: ISOTimeString | None = None,
) -> RuntimeEvent:
    """Build a RuntimeEvent with a fresh id and the current UTC timestamp."""
    return RuntimeEvent(
        id=new_uuid(),
        type=type,
        version=version,
        timestamp=timestamp or utc_now_iso(),
        session_id=session_id,
        project_id=project_id,
        source=source,
        route=list(route) if route else [source.kind],
        payload=payload,
    )


class EventFilter(Contract):
    """Query filter for ``EventStore.query`` and ``EventBus.subscribe`` (all fields ANDed)."""

    session_id: SessionID | None = None
    types: list[str] | None = None
    type_prefix: str | None = None
    """Match every type that starts with this text, e.g. ``"task."``."""
    task_id: str | None = None
    agent_id: str | None = None
    since_seq: int | None = None
    """Only events stored after this sequence number (exclusive)."""
    limit: int | None = None


class PersistedEventRecord(Contract):
    """A row of the ``events`` table (db-schema §6)."""

    seq: int | None = None
    id: UUID
    type: str
    version: int
    timestamp: ISOTimeString
    session_id: SessionID
    project_id: ProjectID | None = None
    source_kind: EventSourceKind
    source_id: str | None = None
    source_agent_type: AgentType | None = None
    task_id: str | None = None
    agent_id: str | None = None
    tool_run_id: str | None = None
    command_run_id: str | None = None
    route_json: str
    route_text: str
    payload_json: str
