"""WorkerRuntime: the child's only side-effect surface (SDD §8.3, ARCHITECTURE §3).

Owns: the child end of the pipe — ``emit`` (events), ``call_tool`` (correlated, with streamed
``tool.stream`` items), ``complete`` (a model turn, sent as a delta: IMPL-TURN-1),
``checkpoint``, ``log``, the heartbeat loop, and the controls ``agent.cancel`` / ``pause`` /
``resume`` / ``extend_timeout`` / ``wrap_up`` / ``get_state`` / ``steer`` (a correction kept in
``steering`` until the loop adds it to its next model turn).
One task reads the pipe at a time (the read role: ``_reading`` and its parking lot): a task
waiting in ``call_tool`` reads and dispatches itself, so a round trip wakes one task. The
background reader holds the role while no call waits and hands it over when one starts; once
calls have begun it takes the role back only when the body blocks elsewhere (paused) or at the
next heartbeat tick, not after every call — the body of a role does nothing but call
(IMPL-LAUNCH-3). A reader takes what waits in the pipe before parking and passes through the
scheduler every ``YIELD_EVERY`` messages (IMPL-IPC-4).
Imports contracts and Trio only — never the store, tools or providers.
"""

from __future__ import annotations

import math
import os
import select
import sys
import threading
import traceback
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from air.contracts.error import AirException, ErrorKind, WorkerExit, make_air_error
from air.contracts.ipc import AgentStartControl, IpcEnvelope
from air.contracts.ipc_messages import (
    AgentCancelControl,
    AgentExtendTimeoutControl,
    AgentGetStateControl,
    AgentPauseControl,
    AgentResumeControl,
    AgentSteerControl,
    AgentWrapUpControl,
)
from air.contracts.runtime import AgentType
from air.contracts.tool_runs import ToolResultEnvelope
from air.contracts.worker_result import WorkerResult, WorkerStatus
from air.ipc.framing import (
    YIELD_EVERY,
    LineDecoder,
    ProtocolViolation,
    locked_send,
    read_ready,
    receive_chunk,
)
from air.ipc.protocol import LineEncoder, WorkerProtocol, decode_tool_result, message_id
from air.ipc.turn_delta import TurnDelta

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
        self._encoder = LineEncoder(session_id=session_id, agent_id=agent_id)
        self._lock = trio.Lock()
        self._pending: dict[str, _Call] = {}
        self._turns = TurnDelta()
        self._reading = False
        """The read role is held (by a ``call_tool`` caller or the background reader)."""
        self._role_lot = trio.lowlevel.ParkingLot()
        self._decoder = LineDecoder()
        self._inbox: deque[bytes | ProtocolViolation] = deque(
            self._decoder.feed(leftover) if leftover else ()
        )
        self._unyielded = 0
        self._eof = False
        self._callers = 0
        self._idle = trio.Event()
        self._idle.set()
        self._bg_parked = False
        """The background reader waits for ``_idle`` or the read role, and nothing woke it."""
        self._heartbeat_due = -math.inf
        """When the heartbeat task's sleep ends (``-inf`` while it is awake)."""
        self._own_tasks: int | None = None
        """How many tasks the process has when only this runtime's run; ``None``: unknown."""
        self._bg_scope: trio.CancelScope | None = None
        self._poller: select.poll | None = None
        self._running = trio.Event()
        self._running.set()
        self.state = "running"
        self.turn = 0
        self.tokens = 0
        self.cost_usd = 0.0
        self.cache_read_tokens = 0
        self.cache_write_tokens = 0
        self.cost_known = True
        """False once a turn's price was unknown (``cost_usd`` is then a lower bound)."""
        self.cancel_reason: str | None = None
        self.wrap_up_reason: str | None = None
        self.steering: list[AgentSteerControl] = []
        """Corrections received and not yet given to the model (``air.roles.steering``)."""
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
        data = self._encoder.line(kind, payload, correlation_id=correlation_id, id=id)
        await locked_send(self._lock, self._send, data)

    async def emit(self, type: str, payload: dict[str, Any], version: int = 1) -> None:
        """Send a runtime event for the parent's EventIngestor."""
        await self._write("event", {"type": type, "version": version, "payload": payload})

    async def log(self, message: str, level: str = "info") -> None:
        await self._write("log", {"level": level, "message": message})

    async def checkpoint(self, data: dict[str, Any], reason: str | None = None) -> None:
        """A lightweight checkpoint: turn, state and the usage so far, plus ``data``."""
        usage = {
            "tokens": self.tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "cost_usd": self.cost_usd if self.cost_known else None,
        }
        await self._write(
            "worker.checkpoint",
            {
                "turn": self.turn,
                "state": self.state,
                "reason": reason,
                "data": {"usage": usage, **data},
            },
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
            self._wake_reader()  # paused: the background reader must see agent.resume
            await self._running.wait()
        call_id = message_id()
        call = _Call()
        self._pending[call_id] = call
        self._callers += 1
        try:
            await self._write("tool.call", {"name": name, "input": input}, id=call_id)
            while True:
                if call.items:
                    item = call.items.popleft()
                    if isinstance(item, ToolResultEnvelope):
                        return item
                    if item.kind == "tool.stream":
                        if on_stream is not None:
                            res = on_stream(dict(item.payload.get("event") or {}))
                            if res is not None:
                                await res
                        continue
                    return ToolResultEnvelope.model_validate(item.payload)
                if call.closed:
                    break
                await self._read_for_call(call)
        finally:
            self._pending.pop(call_id, None)
            self._callers -= 1
        await trio.lowlevel.checkpoint_if_cancelled()  # the end of stream cancelled the body
        raise AirException.of(
            kind=ErrorKind.PROTOCOL_ERROR,
            message=f"the parent closed the pipe during tool call {name}",
            user_action="None; the parent is shutting down.",
        )

    async def complete(
        self,
        *,
        system: Any,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        max_tokens: int | None = None,
    ) -> ToolResultEnvelope:
        """One model turn through the parent (``provider.complete``), sending only what the
        parent does not hold yet (``air.ipc.turn_delta``): a message once sent is never changed
        in place (pass a new dict). ``max_tokens`` is a wish the parent may cap."""
        input = self._turns.input(system, messages, tools)
        if max_tokens is not None:
            input["max_tokens"] = max_tokens
        env = await self.call_tool("provider.complete", input)
        if env.status != "ok":
            self._turns.forget()  # it may not have kept the turn: send it all next time
        return env

    async def _read_for_call(self, call: _Call) -> None:
        """Take the read role (from the background reader if it holds it) and read once."""
        if self._bg_scope is not None:
            self._bg_scope.cancel()
        await self._take_role()
        try:
            if not call.items and not call.closed:
                await self._fill(caller=True)
                await self._drain()
        finally:
            self._release_role()

    async def _take_role(self) -> None:
        """Take the read role; free, it is taken without a scheduler round trip (a flag: no
        task switch can come between its test and its set)."""
        while self._reading:
            await self._role_lot.park()
        self._reading = True

    def _release_role(self) -> None:
        self._reading = False
        if self._role_lot:
            self._bg_parked = False  # it may be the background reader that wakes
            self._role_lot.unpark()

    def _wake_reader(self) -> None:
        self._bg_parked = False
        self._idle.set()

    # -- receiving -----------------------------------------------------------------------------

    async def _reader(self, body_scope: trio.CancelScope) -> None:
        """Read while no ``call_tool`` waits (controls, end of stream); yield the role to one."""
        while not self._eof:
            if self._callers or not self._idle.is_set():
                if self._idle.is_set():
                    self._idle = trio.Event()
                self._bg_parked = True
                try:
                    await self._idle.wait()
                finally:
                    self._bg_parked = False
                continue
            self._bg_parked = True
            try:
                await self._take_role()
            finally:
                self._bg_parked = False
            try:
                if self._callers or self._eof:
                    continue
                with trio.CancelScope() as self._bg_scope:
                    await self._fill()
                self._bg_scope = None
                await self._drain()
            finally:
                self._release_role()

    async def _fill(self, *, caller: bool = False) -> None:
        """(Holding the read role.) Read one chunk into the inbox unless it holds lines;
        ``caller``: the role holder is a ``call_tool`` caller (which may wait alone)."""
        if self._inbox or self._eof:
            return
        try:
            chunk = await read_ready(self._receive)
            if chunk is None:  # the pipe is empty: wait for it
                self._unyielded = 0
                alone = caller and self._wait_alone()
                chunk = await receive_chunk(self._receive, drained=not alone)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            chunk = b""
        if not chunk:
            self._eof = True
            self.cancel_reason = self.cancel_reason or "parent closed the pipe"
            if self._body_scope is not None:
                self._body_scope.cancel()
            for pending in list(self._pending.values()):
                pending.close()
            self._wake_reader()
            return
        self._inbox.extend(self._decoder.feed(chunk))

    def _wait_alone(self) -> bool:
        """(A ``call_tool`` caller holding the read role, its pipe empty.) Wait for the pipe in
        ``poll(2)`` if nothing else in this process could run first.

        Alone means: the process holds just this runtime's tasks (Trio's own two, the caller,
        the background reader, the heartbeat task); the background reader waits on the role or
        ``_idle`` and nothing woke it since; the heartbeat task sleeps and its time has not come;
        no task is queued, none but Trio's wake-up task waits on I/O, nothing is queued by
        ``run_sync_soon``, there is one thread. Then the parent's next line or the next deadline
        (a heartbeat) is the only thing that can happen: blocking the loop in poll on the pipe
        until then is what Trio's own wait would do, minus its round trip through the scheduler
        (IMPL-LAUNCH-4). The task states are this runtime's own records, not
        ``tasks_runnable``: that counts the run queue of the next batch, not the rest of the
        batch being run, so a task woken before this batch began is not in it (IMPL-IPC-4). A
        signal handled through Trio's wake-up socket waits for the same line or deadline; a
        worker runs in its own session and is ended by SIGTERM / SIGKILL, whose default actions
        need no loop. False when the stream is no pipe or others are about."""
        stream = self._receive
        if (
            not isinstance(stream, trio.lowlevel.FdStream)
            or self._callers != 1
            or not self._bg_parked
            or trio.current_time() >= self._heartbeat_due
        ):
            return False
        stats = trio.lowlevel.current_statistics()
        io = stats.io_statistics
        if (
            stats.tasks_living != self._own_tasks
            or stats.tasks_runnable
            or stats.run_sync_soon_queue_size
            or getattr(io, "tasks_waiting_read", 2) > 1  # Trio's run_sync_soon task
            or getattr(io, "tasks_waiting_write", 1)
            or threading.active_count() > 1
        ):
            return False
        wait = stats.seconds_to_next_deadline
        timeout = -1 if wait == math.inf else max(0, math.ceil(wait * 1000))
        if self._poller is None:
            self._poller = select.poll()
            self._poller.register(stream.fileno(), select.POLLIN)
        self._poller.poll(timeout)
        return True

    async def _drain(self) -> None:
        """(Holding the read role.) Dispatch every decoded line, in order."""
        while self._inbox:
            if self._unyielded >= YIELD_EVERY:  # a full pipe: let the other tasks run
                self._unyielded = 0
                await trio.lowlevel.checkpoint()
            self._unyielded += 1
            item = self._inbox.popleft()
            if isinstance(item, ProtocolViolation):
                await self._protocol_error(item)
                continue
            answer = decode_tool_result(item)
            if answer is not None:
                pending = self._pending.get(answer[0])
                if pending is not None:
                    pending.put(answer[1])
                continue
            try:
                msg = self._protocol.decode(item)
            except ProtocolViolation as exc:
                await self._protocol_error(exc)
                continue
            await self._dispatch(msg)

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
        elif isinstance(control, AgentSteerControl):
            self.steering.append(control)

    async def _heartbeats(self) -> None:
        while True:
            self._heartbeat_due = trio.current_time() + self.heartbeat_s
            await trio.sleep_until(self._heartbeat_due)
            self._heartbeat_due = -math.inf
            if not self._callers:
                self._wake_reader()  # between calls: let the background reader read again
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
            if self._eof:
                scope.cancel()
            living = trio.lowlevel.current_statistics().tasks_living
            # alone with Trio's own tasks (its init and run_sync_soon tasks) and this one
            self._own_tasks = living + 2 if living <= 3 else None
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
    """One outstanding tool call: its answers in arrival order (``tool.stream`` envelopes, then
    the ``tool.result`` — already its ``ToolResultEnvelope`` when it came the common way)."""

    __slots__ = ("closed", "event", "items")

    def __init__(self) -> None:
        self.items: deque[IpcEnvelope | ToolResultEnvelope] = deque()
        self.event: trio.Event | None = None
        self.closed = False

    def put(self, msg: IpcEnvelope | ToolResultEnvelope) -> None:
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
