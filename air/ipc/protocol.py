"""IPC envelopes: encode, decode, direction and version checks (SDD §8.2).

Owns: ``LineEncoder``, the one encoder of an envelope line (parent, worker and the worker's
start alike); the ``TypeAdapter``s of the envelope and the per-kind payloads (built once, on
first use, so a worker's start-up does not pay for them before ``worker.ready``),
``make_envelope`` and ``WorkerProtocol`` (decoding; its ``encode`` is ``LineEncoder``'s). Pure
code, no I/O.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import to_json

from air.contracts.error import AirError
from air.contracts.ipc import (
    IPC_PROTOCOL_VERSION,
    PARENT_TO_WORKER,
    WORKER_TO_PARENT,
    IpcDirection,
    IpcEnvelope,
    ToolCallPayload,
)
from air.ipc.framing import InvalidEnvelope, InvalidJson, VersionMismatch, WrongDirection

if TYPE_CHECKING:
    from air.contracts.ipc_messages import ControlPayload
    from air.contracts.tool_runs import ToolResultEnvelope

__all__ = [
    "LineEncoder",
    "WorkerProtocol",
    "control_adapter",
    "decode_tool_result",
    "envelope_adapter",
    "make_envelope",
    "message_id",
]


@cache
def envelope_adapter() -> TypeAdapter[IpcEnvelope]:
    return TypeAdapter(IpcEnvelope)


@cache
def _envelope_validator() -> Any:
    """The envelope's schema validator, built (``validate_json`` without ``TypeAdapter``'s
    Python-level wrapper)."""
    IpcEnvelope.model_rebuild()
    return IpcEnvelope.__pydantic_validator__


@cache
def control_adapter() -> TypeAdapter[ControlPayload]:
    from air.contracts.ipc_messages import ControlPayload

    return TypeAdapter(ControlPayload)


@cache
def _tool_result_validator() -> Any:
    """The validator of a ``tool.result`` line with its payload typed: the envelope's own checks
    (the model is an ``IpcEnvelope``) and the ``ToolResultEnvelope`` in one validation. Built
    at the first call (a worker's first tool result), so no process creates the model sooner."""
    from air.contracts.tool_runs import ToolResultEnvelope  # noqa: F401 (the annotation below)

    class _ToolResultLine(IpcEnvelope):
        """Never leaves this function (its ``payload`` is no ``JsonObject``)."""

        kind: Literal["tool.result"]
        payload: ToolResultEnvelope  # type: ignore[assignment]

    _ToolResultLine.model_rebuild()
    return _ToolResultLine.__pydantic_validator__


_RESULT_KIND = b'"kind":"tool.result"'


def decode_tool_result(line: bytes) -> tuple[str, ToolResultEnvelope] | None:
    """Worker side: ``(correlation id, result)`` of a ``tool.result`` line as ``LineEncoder``
    writes it, parsed and checked in one strict ``validate_json`` (IMPL-IPC-4); ``None`` for any
    other line or one that fails, which then takes ``WorkerProtocol.decode``'s path (and gets
    its typed error). The ``kind`` test only picks the model; the validation decides: a line
    whose real ``kind`` is another fails the ``Literal`` and falls back."""
    if line[:7] != _FAST_PREFIXES[0] or line.find(_RESULT_KIND, 7, 160) < 0:
        return None
    try:
        msg = _tool_result_validator().validate_json(line, strict=True)
    except ValidationError:
        return None
    if msg.correlation_id is None:
        return None
    return msg.correlation_id, msg.payload


@cache
def _payload_models() -> dict[str, type[BaseModel]]:
    """Each kind's payload model, imported at the first payload checked (IMPL-BOOT-12: a parent
    checks none before its first model request, so it builds none of these classes before)."""
    from air.contracts.ipc_messages import (
        LogPayload,
        ProtocolErrorPayload,
        ToolStreamPayload,
        WorkerCheckpointPayload,
        WorkerEventPayload,
    )
    from air.contracts.tool_runs import ToolResultEnvelope
    from air.contracts.worker_result import WorkerResult

    return {
        "tool.result": ToolResultEnvelope,
        "tool.stream": ToolStreamPayload,
        "event": WorkerEventPayload,
        "log": LogPayload,
        "tool.call": ToolCallPayload,
        "worker.result": WorkerResult,
        "worker.checkpoint": WorkerCheckpointPayload,
        "protocol.error": ProtocolErrorPayload,
    }


_decode_json = json.JSONDecoder().decode

_FAST_PREFIXES = (b'{"v":1,', '{"v":1,')
_ENVELOPE_FIELDS_SET = frozenset(
    {"v", "id", "kind", "ts", "session_id", "agent_id", "correlation_id", "payload"}
)


def _envelope(values: dict[str, Any]) -> IpcEnvelope:
    """An ``IpcEnvelope`` from this module's own values (every field present, right types).

    What ``model_construct`` ends with, minus its per-field default and alias handling
    (a third of the cost of building an outgoing line); never used on received data.
    """
    msg = IpcEnvelope.__new__(IpcEnvelope)
    object.__setattr__(msg, "__dict__", values)
    object.__setattr__(msg, "__pydantic_fields_set__", set(_ENVELOPE_FIELDS_SET))
    object.__setattr__(msg, "__pydantic_extra__", None)
    object.__setattr__(msg, "__pydantic_private__", None)
    return msg


_PREFIX = f"m{os.getpid():x}{os.urandom(4).hex()}_"
_COUNTER = itertools.count(1)


def message_id() -> str:
    """A pipe-unique message id: process prefix + counter (cheaper than a ULID per line)."""
    return f"{_PREFIX}{next(_COUNTER)}"


_SECOND: list[Any] = [-1, ""]


def _now_iso() -> str:
    """UTC now, ISO 8601 with microseconds; the formatted second is reused within a second."""
    now = time.time()
    sec = int(now)
    if sec != _SECOND[0]:
        _SECOND[0], _SECOND[1] = sec, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec))
    return f"{_SECOND[1]}.{int((now - sec) * 1e6):06d}Z"


def make_envelope(
    kind: str,
    payload: dict[str, Any],
    *,
    session_id: str,
    agent_id: str,
    correlation_id: str | None = None,
    id: str | None = None,
) -> IpcEnvelope:
    return _envelope(
        {
            "v": 1,
            "id": id or message_id(),
            "kind": kind,
            "ts": _now_iso(),
            "session_id": session_id,
            "agent_id": agent_id,
            "correlation_id": correlation_id,
            "payload": payload,
        }
    )


class LineEncoder:
    """The one encoder of an NDJSON envelope line (IMPL-IPC-4, IMPL-STRUCT-2), for one channel:
    its session and agent ids are encoded once, and a line is the concatenation of its parts.
    Keys in the order ``v``, ``id``, ``kind``, ``ts``, ``session_id``, ``agent_id``,
    ``correlation_id`` (when set), ``payload``; every value but a ``ts`` and an id of this
    module's own goes through ``to_json``, so a peer's id is escaped. A model ``payload`` is
    serialised as ``model_dump(mode="json")`` would dump it, in the same pass."""

    __slots__ = ("_ids", "_kinds")

    def __init__(self, *, session_id: str, agent_id: str) -> None:
        self._ids = b',"session_id":' + to_json(session_id) + b',"agent_id":' + to_json(agent_id)
        self._kinds: dict[str, bytes] = {}

    def line(
        self,
        kind: str,
        payload: dict[str, Any] | BaseModel,
        *,
        correlation_id: str | None = None,
        id: str | None = None,
        ts: str | None = None,
    ) -> bytes:
        """One line; ``id`` and ``ts`` default to a new message id and now."""
        head = self._kinds.get(kind)
        if head is None:
            head = self._kinds[kind] = b',"kind":' + to_json(kind) + b',"ts":'
        ident = to_json(id) if id is not None else b'"' + message_id().encode() + b'"'
        stamp = to_json(ts) if ts is not None else b'"' + _now_iso().encode() + b'"'
        corr = b"" if correlation_id is None else b',"correlation_id":' + to_json(correlation_id)
        return b"".join(
            (
                b'{"v":1,"id":',
                ident,
                head,
                stamp,
                self._ids,
                corr,
                b',"payload":',
                to_json(payload),
                b"}\n",
            )
        )


_TOOL_CALL_FIELDS = frozenset({"name", "input"})


def _tool_call(name: str, input: dict[str, Any]) -> ToolCallPayload:
    """A ``ToolCallPayload`` of a checked ``str`` name and ``dict`` input (both fields, right
    types: what ``model_construct`` would build, minus its per-field default handling)."""
    call = ToolCallPayload.__new__(ToolCallPayload)
    object.__setattr__(call, "__dict__", {"name": name, "input": input})
    object.__setattr__(call, "__pydantic_fields_set__", set(_TOOL_CALL_FIELDS))
    object.__setattr__(call, "__pydantic_extra__", None)
    object.__setattr__(call, "__pydantic_private__", None)
    return call


class WorkerProtocol:
    """Encode (through ``LineEncoder``) and decode NDJSON envelopes for one side of the pipe.

    Args:
        side: ``parent`` decodes worker→parent messages, ``worker`` the other direction.
    """

    def __init__(self, side: Literal["parent", "worker"]) -> None:
        self.side = side
        self.incoming: IpcDirection = "worker_to_parent" if side == "parent" else "parent_to_worker"
        self._allowed = WORKER_TO_PARENT if side == "parent" else PARENT_TO_WORKER

    @staticmethod
    def encode(msg: IpcEnvelope) -> bytes:
        """``msg``'s line, as ``LineEncoder`` writes every line."""
        return LineEncoder(session_id=msg.session_id, agent_id=msg.agent_id).line(
            msg.kind, msg.payload, correlation_id=msg.correlation_id, id=msg.id, ts=msg.ts
        )

    def decode(self, line: bytes | str) -> IpcEnvelope:
        """Parse one line into an envelope checked for shape and direction.

        The common case — a line starting ``{"v":1,`` as every encoder here writes it — is one
        strict ``validate_json`` of the whole envelope (pydantic-core parses and checks in one
        pass; the prefix test keeps ``true`` or ``1.0`` from passing as version 1). Any other
        line, or one that fails, goes through the step-by-step path, which names the problem
        with a typed error.

        Raises:
            InvalidJson, InvalidEnvelope, VersionMismatch, WrongDirection: typed
            ``ProtocolViolation``s.
        """
        if line[:7] in _FAST_PREFIXES:
            try:
                msg: IpcEnvelope = _envelope_validator().validate_json(line, strict=True)
            except ValidationError:
                msg = self._decode_checked(line)
        else:
            msg = self._decode_checked(line)
        if msg.kind not in self._allowed:
            self.validate_direction(msg)
        return msg

    def _decode_checked(self, line: bytes | str) -> IpcEnvelope:
        try:
            raw = _decode_json(line.decode() if isinstance(line, bytes) else line)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise InvalidJson("a worker line is not JSON", detail=str(exc)[:200]) from None
        if not isinstance(raw, dict):
            raise InvalidEnvelope("a worker line is not a JSON object")
        if type(raw.get("v")) is not int or raw.get("v") != 1:
            raise VersionMismatch(
                "an envelope has an unsupported version", detail=repr(raw.get("v"))[:50]
            )
        try:
            return envelope_adapter().validate_python(raw, strict=True)
        except ValidationError as exc:
            raise InvalidEnvelope("an envelope is malformed", detail=_short(exc)) from None

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
                return _tool_call(p["name"], p["input"])
        try:
            if msg.kind == "control":
                return control_adapter().validate_python(msg.payload)
            return _payload_models()[msg.kind].model_validate(msg.payload)
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


def _short(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5])[
        :500
    ]
