"""Primitive identifiers, the clock and id generation shared by every contract.

Owns: the ID aliases of the contracts (SessionID, TaskID, ...), the ``Contract`` base model
(frozen, ``extra="forbid"``), the JSON aliases, and the tiny pure helpers that mint ids and
timestamps. No I/O beyond reading the clock and the OS random source.
"""

import os
import time
import uuid
from datetime import UTC, datetime
from typing import Any, Protocol, TypeAlias

from pydantic import BaseModel, ConfigDict

__all__ = [
    "UUID",
    "AgentID",
    "ArtifactID",
    "Clock",
    "CommandRunID",
    "Contract",
    "EvidenceRefID",
    "ISOTimeString",
    "IdGenerator",
    "JsonObject",
    "MessageID",
    "ProjectID",
    "ProviderID",
    "SessionID",
    "SystemClock",
    "TaskID",
    "ToolRunID",
    "UlidGenerator",
    "WorkspaceID",
    "empty_list",
    "new_id",
    "new_ulid",
    "new_uuid",
    "utc_now_iso",
]

ISOTimeString: TypeAlias = str
UUID: TypeAlias = str
ProjectID: TypeAlias = str
SessionID: TypeAlias = str
TaskID: TypeAlias = str
AgentID: TypeAlias = str
ToolRunID: TypeAlias = str
CommandRunID: TypeAlias = str
ArtifactID: TypeAlias = str
MessageID: TypeAlias = str
EvidenceRefID: TypeAlias = str
ProviderID: TypeAlias = str
WorkspaceID: TypeAlias = str
JsonObject: TypeAlias = dict[str, Any]


class Contract(BaseModel):
    """Base of every public contract: immutable, unknown fields are an error, and a float field
    holds a finite number (JSON has no NaN or Infinity: Python's ``json`` and YAML's ``.nan`` /
    ``.inf`` make them, and one stored would come back ``null``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True, allow_inf_nan=False)


_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def empty_list() -> list[Any]:
    """A new empty list: the ``default_factory`` of a model's list field. Not ``list`` itself:
    building a field's schema, pydantic asks ``inspect.signature`` whether the factory takes the
    validated data, and for ``list`` that parses its text signature (~95 us a field, ~5 ms of
    every start; a function answers in ~5 us; IMPL-BOOT-15)."""
    return []


def new_ulid() -> str:
    """Return a 26-character ULID: 48 bits of milliseconds, then 80 random bits."""
    value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def new_uuid() -> UUID:
    """Return a random UUID4 as a string."""
    return str(uuid.uuid4())


def new_id(prefix: str) -> str:
    """Return ``<prefix>_<ulid>``, the id form of every air entity (``art_01J...``)."""
    return f"{prefix}_{new_ulid()}"


def utc_now_iso() -> ISOTimeString:
    """Return the current UTC time as an ISO-8601 string with microseconds and ``Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Clock(Protocol):
    """Source of wall-clock time (injected so tests can pin it)."""

    def now_iso(self) -> ISOTimeString: ...


class SystemClock:
    """The real UTC clock."""

    def now_iso(self) -> ISOTimeString:
        return utc_now_iso()


class IdGenerator(Protocol):
    """Mints entity ids."""

    def session_id(self) -> SessionID: ...
    def task_id(self) -> TaskID: ...
    def agent_id(self) -> AgentID: ...
    def artifact_id(self) -> ArtifactID: ...


class UlidGenerator:
    """Default IdGenerator: ``ses_``, ``task_``, ``agt_``, ``art_`` prefixed ULIDs."""

    def session_id(self) -> SessionID:
        return new_id("ses")

    def task_id(self) -> TaskID:
        return new_id("task")

    def agent_id(self) -> AgentID:
        return new_id("agt")

    def artifact_id(self) -> ArtifactID:
        return new_id("art")
