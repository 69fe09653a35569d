"""WorkerProtocol: encode, decode, direction and version checks of IPC envelopes (SDD §8.2).

Owns: the ``TypeAdapter``s of the envelope and the per-kind payloads (built once, on first use,
so a worker's start-up does not pay for them before ``worker.ready``), ``make_envelope`` and
``WorkerProtocol``. Pure code, no I/O.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, TypeAdapter, ValidationError

from air.contracts.error import AirError
from air.contracts.ipc import (
    IPC_PROTOCOL_VERSION,
    PARENT_TO_WORKER,
    WORKER_TO_PARENT,
    ControlPayload,
    IpcDirection,
    IpcEnvelope,
    LogPayload,
    ProtocolErrorPayload,
    ToolCallPayload,
    ToolStreamPayload,
    WorkerCheckpointPayload,
    WorkerEventPayload,
)
from air.contracts.tool import ToolResultEnvelope
from air.contracts.worker_result import WorkerResult
from air.ipc.framing import InvalidEnvelope, InvalidJson, VersionMismatch, WrongDirection

__all__ = [
    "WorkerProtocol",
    "control_adapter",
    "envelope_adapter",
    "make_envelope",
    "message_id",
]


@cache
def envelope_adapter() -> TypeAdapter[IpcEnvelope]:
    return TypeAdapter(IpcEnvelope)


@cache
def control_adapter() -> TypeAdapter[ControlPayload]:
    return TypeAdapter(ControlPayload)


_PAYLOAD_MODELS: dict[str, type[BaseModel]] = {
    "tool.result": ToolResultEnvelope,
    "tool.stream": ToolStreamPayload,
    "event": WorkerEventPayload,
    "log": LogPayload,
    "tool.call": ToolCallPayload,
    "worker.result": WorkerResult,
    "worker.checkpoint": WorkerCheckpointPayload,
    "protocol.error": ProtocolErrorPayload,
}


_PREFIX = f"m{os.getpid():x}{os.urandom(4).hex()}_"
_COUNTER = itertools.count(1)


def message_id() -> str:
    """A pipe-unique message id: process prefix + counter (cheaper than a ULID per line)."""
    return f"{_PREFIX}{next(_COUNTER)}"


def _now_iso() -> str:
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1e6):06d}Z"


def make_envelope(
    kind: str,
    payload: dict[str, Any],
    *,
    session_id: str,
    agent_id: str,
    correlation_id: str | None = None,
    id: str | None = None,
) -> IpcEnvelope:
    return IpcEnvelope.model_construct(
        v=1,
        id=id or message_id(),
        kind=kind,  # type: ignore[arg-type]
        ts=_now_iso(),
        session_id=session_id,
        agent_id=agent_id,
        correlation_id=correlation_id,
        payload=payload,
    )


class WorkerProtocol:
    """Encode and decode NDJSON envelopes for one side of the pipe.

    Args:
        side: ``parent`` decodes worker→parent messages, ``worker`` the other direction.
    """

    def __init__(self, side: Literal["parent", "worker"]) -> None:
        self.side = side
        self.incoming: IpcDirection = "worker_to_parent" if side == "parent" else "parent_to_worker"

    @staticmethod
    def encode(msg: IpcEnvelope) -> bytes:
        data = {
            "v": msg.v,
            "id": msg.id,
            "kind": msg.kind,
            "ts": msg.ts,
            "session_id": msg.session_id,
            "agent_id": msg.agent_id,
            "payload": msg.payload,
        }
        if msg.correlation_id is not None:
            data["correlation_id"] = msg.correlation_id
        return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"

    def decode(self, line: bytes | str) -> IpcEnvelope:
        """Parse one line into an envelope checked for shape and direction.

        Raises:
            InvalidJson, InvalidEnvelope, WrongDirection: typed ``ProtocolViolation``s.
        """
        try:
            raw = json.loads(line)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise InvalidJson("a worker line is not JSON", detail=str(exc)[:200]) from None
        if not isinstance(raw, dict):
            raise InvalidEnvelope("a worker line is not a JSON object")
        if type(raw.get("v")) is not int or raw.get("v") != 1:
            raise VersionMismatch(
                "an envelope has an unsupported version", detail=repr(raw.get("v"))[:50]
            )
        fast = _fast_envelope(raw)
        if fast is not None:
            self.validate_direction(fast)
            return fast
        try:
            msg = envelope_adapter().validate_python(raw)
        except ValidationError as exc:
            raise InvalidEnvelope("an envelope is malformed", detail=_short(exc)) from None
        self.validate_direction(msg)
        return msg

    def validate_direction(self, msg: IpcEnvelope) -> None:
        allowed = WORKER_TO_PARENT if self.incoming == "worker_to_parent" else PARENT_TO_WORKER
        if msg.kind not in allowed:
            raise WrongDirection(
                f"message kind {msg.kind!r} is not allowed {self.incoming.replace('_', ' ')}"
            )

    @staticmethod
    def payload(msg: IpcEnvelope) -> Any:
        """Validate ``msg.payload`` against its kind's model and return the model instance."""
        p = msg.payload
        if msg.kind == "tool.call" and len(p) == 2 and type(p.get("name")) is str:
            if type(p.get("input")) is dict:
                return ToolCallPayload.model_construct(name=p["name"], input=p["input"])
        try:
            if msg.kind == "control":
                return control_adapter().validate_python(msg.payload)
            return _PAYLOAD_MODELS[msg.kind].model_validate(msg.payload)
        except ValidationError as exc:
            raise InvalidEnvelope(
                f"the payload of a {msg.kind} message is invalid", detail=_short(exc)
            ) from None

    @staticmethod
    def check_protocol_version(v: int) -> bool:
        return v == IPC_PROTOCOL_VERSION

    @staticmethod
    def error_payload(error: AirError) -> dict[str, Any]:
        return {"error": error.model_dump(mode="json")}


_FIELDS = frozenset(
    {"v", "id", "kind", "ts", "session_id", "agent_id", "correlation_id", "payload"}
)
_KINDS = PARENT_TO_WORKER | WORKER_TO_PARENT


def _fast_envelope(raw: dict[str, Any]) -> IpcEnvelope | None:
    """The common well-formed case without pydantic; None sends the line to full validation."""
    cid = raw.get("correlation_id")
    if (
        type(raw.get("id")) is str
        and raw.get("kind") in _KINDS
        and type(raw.get("ts")) is str
        and type(raw.get("session_id")) is str
        and type(raw.get("agent_id")) is str
        and (cid is None or type(cid) is str)
        and type(raw.get("payload")) is dict
        and raw.keys() <= _FIELDS
        and all(type(k) is str for k in raw["payload"])
    ):
        return IpcEnvelope.model_construct(
            v=1,
            id=raw["id"],
            kind=raw["kind"],
            ts=raw["ts"],
            session_id=raw["session_id"],
            agent_id=raw["agent_id"],
            correlation_id=cid,
            payload=raw["payload"],
        )
    return None


def _short(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5])[
        :500
    ]
