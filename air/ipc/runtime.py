"""WorkerRuntime: the child's only side-effect surface (SDD §8.3, ARCHITECTURE §3).

Owns: the child end of the pipe — ``emit`` (events), ``call_tool`` (correlated, with streamed
``tool.stream`` items), ``checkpoint``, ``log``, the heartbeat loop, and the controls
``agent.cancel`` / ``pause`` / ``resume`` / ``extend_timeout`` / ``wrap_up`` / ``get_state``.
Imports contracts and Trio only — never the store, tools or providers.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from air.contracts.error import AirException, ErrorKind, WorkerExit, make_air_error
from air.contracts.ipc import (
    AgentCancelControl,
    AgentExtendTimeoutControl,
    AgentGetStateControl,
    AgentPauseControl,
    AgentResumeControl,
    AgentStartControl,
    AgentWrapUpControl,
    IpcEnvelope,
)
from air.contracts.runtime import AgentType
from air.contracts.tool import ToolResultEnvelope
from air.contracts.worker_result import WorkerResult, WorkerStatus
from air.ipc.framing import (
    RECEIVE_BYTES,
    LineDecoder,
    ProtocolViolation,
    locked_send,
    receive_chunk,
)
from air.ipc.protocol import WorkerProtocol, make_envelope, message_id

__all__ = ["EXIT_CANCELLED", "EXIT_CRASH", "EXIT_OK", "EXIT_PROTOCOL", "WorkerRuntime"]

EXIT_OK = WorkerExit.OK
EXIT_CRASH = WorkerExit.CRASH
EXIT_PROTOCOL = WorkerExit.PROTOCOL
EXIT_PERMISSION = WorkerExit.PERMISSION
EXIT_CANCELLED = WorkerExit.PARENT_CANCELLED

StreamHandler = Callable[[dict[str, Any]], Awaitable[None] | None]


class WorkerRuntime:
    """The child's connection to its parent; create it after the handshake and ``run`` a body."""

    def __init__(
        self,
        start: AgentStartControl,
        *,
        session_id: str,
        agent_id: str,
        agent_type: AgentType,
        receive: trio.abc.ReceiveStream,
        send: trio.abc.SendStream,
        leftover: bytes = b"",
    ) -> None:
        self.start = start
        self.session_id = session_id
        self.agent_id = agent_id
        self.task_id = start.task_spec.id
        self.agent_type = agent_type
        self._receive = receive
        self._send = send
        self._leftover = leftover
        self._protocol = WorkerProtocol("worker")
        self._lock = trio.Lock()
        self._pending: dict[str, _Call] = {}
        self._running = trio.Event()
        self._running.set()
        self.state = "running"
        self.turn = 0
        self.tokens = 0
        self.cost_usd = 0.0
        self.cancel_reason: str | None = None
        self.wrap_up_reason: str | None = None
        self.extra_timeout_ms = 0
        self._body_scope: trio.CancelScope | None = None
        self.heartbeat_s = float(start.options.get("heartbeat_s", 5.0))

    # -- sending -------------------------------------------------------------------------------

    async def _write(
        self,
        kind: str,
        payload: dict[str, Any],
        correlation_id: str | None = None,
        id: str | None = None,
    ) -> None:
        env = make_envelope(
            kind,
            payload,
            session_id=self.session_id,
            agent_id=self.agent_id,
            correlation_id=correlation_id,
            id=id,
        )
        data = self._protocol.encode(env)
        await locked_send(self._lock, self._send, data)

    async def emit(self, type: str, payload: dict[str, Any], version: int = 1) -> None:
        """Send a runtime event for the parent's EventIngestor."""
        await self._write("event", {"type": type, "version": version, "payload": payload})

    async def log(self, message: str, level: str = "info") -> None:
        await self._write("log", {"level": level, "message": message})

    async def checkpoint(self, data: dict[str, Any], reason: str | None = None) -> None:
        await self._write(
            "worker.checkpoint",
            {"turn": self.turn, "state": self.state, "reason": reason, "data": data},
        )

    async def heartbeat(self) -> None:
        await self.emit(
            "agent.heartbeat",
            {
                "agent_id": self.agent_id,
                "task_id": self.task_id,
                "state": self.state,
                "turn": self.turn,
                "tokens": self.tokens,
            },
        )

    async def call_tool(
        self, name: str, input: dict[str, Any], on_stream: StreamHandler | None = None
    ) -> ToolResultEnvelope:
        """Ask the parent to run tool ``name``; stream items go to ``on_stream``."""
        if not self._running.is_set():
            await self._running.wait()
        call_id = message_id()
        call = _Call()
        self._pending[call_id] = call
        try:
            await self._write("tool.call", {"name": name, "input": input}, id=call_id)
            while not call.closed or call.items:
                if not call.items:
                    call.event = trio.Event()
                    await call.event.wait()
                    continue
                msg = call.items.popleft()
                if msg.kind == "tool.stream":
                    if on_stream is not None:
                        res = on_stream(dict(msg.payload.get("event") or {}))
                        if res is not None:
                            await res
                    continue
                return ToolResultEnvelope.model_validate(msg.payload)
        finally:
            self._pending.pop(call_id, None)
        raise AirException.of(
            kind=ErrorKind.PROTOCOL_ERROR,
            message=f"the parent closed the pipe during tool call {name}",
            user_action="None; the parent is shutting down.",
        )

    # -- receiving -----------------------------------------------------------------------------

    async def _reader(self, body_scope: trio.CancelScope) -> None:
        decoder = LineDecoder()
        items = decoder.feed(self._leftover) if self._leftover else []
        drained = False
        while True:
            for item in items:
                if isinstance(item, ProtocolViolation):
                    await self._protocol_error(item)
                    continue
                try:
                    msg = self._protocol.decode(item)
                except ProtocolViolation as exc:
                    await self._protocol_error(exc)
                    continue
                await self._dispatch(msg)
            try:
                chunk = await receive_chunk(self._receive, drained=drained)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                chunk = b""
            if not chunk:
                self.cancel_reason = self.cancel_reason or "parent closed the pipe"
                body_scope.cancel()
                for pending in list(self._pending.values()):
                    pending.close()
                return
            drained = len(chunk) < RECEIVE_BYTES
            items = decoder.feed(chunk)

    async def _protocol_error(self, exc: ProtocolViolation) -> None:
        await self._write("protocol.error", {"error": exc.error.model_dump(mode="json")})

    async def _dispatch(self, msg: IpcEnvelope) -> None:
        if msg.kind in ("tool.result", "tool.stream"):
            pending = self._pending.get(msg.correlation_id or "")
            if pending is not None:
                pending.put(msg)
            return
        try:
            control = self._protocol.payload(msg)
        except ProtocolViolation as exc:
            await self._protocol_error(exc)
            return
        if isinstance(control, AgentCancelControl):
            self.cancel_reason = control.reason
            self._running.set()
            if self._body_scope is not None:
                self._body_scope.cancel()
        elif isinstance(control, AgentPauseControl):
            self.state = "paused"
            self._running = trio.Event()
        elif isinstance(control, AgentResumeControl):
            self.state = "running"
            self._running.set()
        elif isinstance(control, AgentExtendTimeoutControl):
            self.extra_timeout_ms += control.extra_ms
        elif isinstance(control, AgentWrapUpControl):
            self.wrap_up_reason = control.reason
            await self.checkpoint({"wrap_up": control.reason}, reason="soft_timeout")
        elif isinstance(control, AgentGetStateControl):
            await self.heartbeat()

    async def _heartbeats(self) -> None:
        while True:
            await trio.sleep(self.heartbeat_s)
            await self.heartbeat()

    # -- running -------------------------------------------------------------------------------

    def _cancelled_result(self) -> WorkerResult:
        return WorkerResult(
            task_id=self.task_id,
            agent_id=self.agent_id,
            agent_type=self.agent_type,
            status=WorkerStatus.CANCELLED,
            summary=f"cancelled: {self.cancel_reason}",
            stop_reason="cancelled",
        )

    async def run(self, body: Callable[[WorkerRuntime], Awaitable[WorkerResult]]) -> int:
        """Run ``body`` with the reader and heartbeats; send its result; return the exit code."""
        exit_code = EXIT_OK
        result: WorkerResult | None = None
        async with trio.open_nursery() as nursery:
            scope = trio.CancelScope()
            self._body_scope = scope
            nursery.start_soon(self._reader, scope)
            nursery.start_soon(self._heartbeats)
            try:
                with scope:
                    result = await body(self)
            except Exception as exc:
                traceback.print_exc(file=sys.stderr)
                error = (
                    exc.error
                    if isinstance(exc, AirException)
                    else make_air_error(
                        kind=ErrorKind.WORKER_CRASHED,
                        message=f"{type(exc).__name__}: {exc}",
                        retryability="transient",
                    )
                )
                await self.log(f"uncaught exception: {error.message}", level="error")
                exit_code = EXIT_CRASH
            if result is None and exit_code == EXIT_OK:
                result = self._cancelled_result()
                exit_code = EXIT_CANCELLED
            if result is not None:
                with trio.move_on_after(5):
                    try:
                        await self._write("worker.result", result.model_dump(mode="json"))
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        pass
            nursery.cancel_scope.cancel()
        return exit_code


class _Call:
    """One outstanding tool call: its answers in arrival order, and a wake-up."""

    __slots__ = ("closed", "event", "items")

    def __init__(self) -> None:
        self.items: deque[IpcEnvelope] = deque()
        self.event: trio.Event | None = None
        self.closed = False

    def put(self, msg: IpcEnvelope) -> None:
        self.items.append(msg)
        if self.event is not None:
            self.event.set()

    def close(self) -> None:
        self.closed = True
        if self.event is not None:
            self.event.set()


def stdio_streams() -> tuple[trio.lowlevel.FdStream, trio.lowlevel.FdStream]:
    """Protocol streams on dups of fd 0/1; fd 1 then points at stderr so stray prints are safe."""
    rx = trio.lowlevel.FdStream(os.dup(0))
    tx = trio.lowlevel.FdStream(os.dup(1))
    os.dup2(2, 1)
    return rx, tx
