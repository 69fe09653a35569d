"""The per-run read loop and message dispatch of one worker (SDD §8.1, runner invariants 4-8).

Owns: ``read_loop`` (each decoded message stamps ``run.last_seen`` for the stall watch and goes
to ``handle``; a protocol violation or the worker's ``worker.result`` ends the running phase)
and ``worker_event`` (a worker event is checked against the types a worker may emit and the
payload registry, gets the parent's agent and task ids, is redacted, validated once and handed
to the EventIngestor — heartbeats as ephemeral). The read loop is the worker's serving loop: a
``tool.call`` is served in place (``air.supervision.worker_tools.serve_tool``), one at a time, in
the order sent — no Trio task per call, nothing unbounded for a worker that floods calls, and
one scheduler wake-up per round trip (IMPL-LAUNCH-3). While a call is served the worker is
waiting on the parent, which the stall watch counts as activity (``run.serving``). The call runs
in ``run.call_scope``, which ``exit_watch`` cancels when the worker's process ends meanwhile: the
attempt ends as a transient crash at once, not when the call returns (IMPL-DEADCALL-1).
"""

from __future__ import annotations

from typing import Any

import trio
from pydantic import ValidationError

from air.contracts.error import AirException, ErrorKind
from air.contracts.event import RuntimeEvent
from air.contracts.ids import new_uuid, utc_now_iso
from air.contracts.ipc import IpcEnvelope, ToolCallPayload
from air.events.payloads import PAYLOADS
from air.ipc.framing import ProtocolViolation
from air.supervision.checkpoints import checkpoint_event
from air.supervision.worker_checks import check_result
from air.supervision.worker_run import (
    End,
    Supervisor,
    WorkerRun,
    emit,
    err,
    keep_log,
    worker_error,
)
from air.supervision.worker_tools import serve_tool

__all__ = ["WORKER_EVENTS", "read_loop", "worker_event"]

WORKER_EVENTS = frozenset({"agent.heartbeat"})
"""The event types a worker may emit: its own liveness (IMPL-IPC-1). Every other fact of a
session is recorded by the parent — tasks, agents' ends, tools, workspaces, and the session's
own conversation, knowledge and usage too: a worker's ``user.message.created`` entered the Main
Agent's conversation when it was next rebuilt, its ``memory.promoted`` the knowledge recovery
reads, its ``model.usage.recorded`` the session's cost. An allow-list, so a type added later
is the parent's until it is named here."""
_KNOWN_TYPES = frozenset(etype for etype, _ in PAYLOADS)
LOG_CUT = 2000
"""The characters of one worker ``log`` message the parent keeps (``LOG_KEEP_BYTES`` in all)."""


async def read_loop(sup: Supervisor, run: WorkerRun) -> None:
    """Read until the worker's result, its end of stream or a protocol violation."""
    assert run.proc is not None
    proc = run.proc
    now = trio.lowlevel.current_clock().current_time  # trio.current_time, minus two calls
    agent_id, session_id = run.request.agent_id, run.request.session_id
    while True:
        msg = await proc.receive()
        run.last_seen = now()
        if msg is None:
            return
        if isinstance(msg, ProtocolViolation):
            run.end = End("protocol_error", msg.error, False)
            return
        try:
            if msg.agent_id != agent_id or msg.session_id != session_id:
                # a worker speaks for itself only: its stdout is its own agent's channel
                raise ProtocolViolation(
                    f"a message names agent {msg.agent_id} of session {msg.session_id}, not "
                    f"this worker's ({agent_id})"
                )
            if msg.kind == "tool.call":
                call = proc.protocol.payload(msg)
                assert isinstance(call, ToolCallPayload)
                run.serving = True
                run.call_scope = scope = trio.CancelScope()
                if run.exit_code is not None:  # it ended after sending the call: serve nothing
                    scope.cancel()
                try:
                    with scope:
                        await serve_tool(sup, run, msg.id, call)
                finally:
                    run.serving = False
                    run.call_scope = None
                    run.last_seen = now()
                if scope.cancelled_caught:
                    run.end = _died_mid_call(run, call.name)
                    return
            elif await _handle(sup, run, msg):
                return
        except ProtocolViolation as exc:
            run.end = End("protocol_error", exc.error, False)
            return


def _died_mid_call(run: WorkerRun, tool: str) -> End:
    """The worker's process ended while the parent served its call: a transient crash."""
    return End(
        "crashed",
        err(
            ErrorKind.WORKER_CRASHED,
            f"the worker exited with code {run.exit_code} while the parent served its {tool} call",
            transient=True,
        ),
        True,
    )


async def _handle(sup: Supervisor, run: WorkerRun, msg: IpcEnvelope) -> bool:
    """Any message but a ``tool.call`` (served by the loop itself); True ends the loop."""
    assert run.proc is not None
    kind = msg.kind
    if kind == "event":
        await worker_event(sup, run, msg)
    elif kind == "log":
        text = str(msg.payload.get("message", ""))
        keep_log(run, sup.redactor.redact_cut(text, LOG_CUT) if sup.redactor else text[:LOG_CUT])
    elif kind == "worker.checkpoint":
        run.checkpoint = dict(msg.payload)
        ident = run.proc.identity
        event = checkpoint_event(
            run.pacer,
            trio.current_time(),
            run.checkpoint,
            attempt_index=run.request.attempt_index,
            identity=ident,
        )
        if event is not None:
            await emit(sup, run, "agent.checkpointed", event)
    elif kind == "protocol.error":
        run.end = End("protocol_error", worker_error(msg), False)
        return True
    elif kind == "worker.result":
        run.result = check_result(sup, run, run.proc.protocol.payload(msg))
        run.end = End("result")
        return True
    return False


async def worker_event(sup: Supervisor, run: WorkerRun, msg: IpcEnvelope) -> None:
    etype = msg.payload.get("type")
    version = msg.payload.get("version", 1)
    raw = msg.payload.get("payload")
    if type(etype) is not str or type(version) is not int or not isinstance(raw or {}, dict):
        raise ProtocolViolation("a worker event needs a string type, an int version, an object")
    inner: dict[str, Any] = dict(raw or {})
    if etype == "worker.ready":
        return
    if etype not in WORKER_EVENTS and etype in _KNOWN_TYPES:
        raise ProtocolViolation(f"a worker may not emit {etype}")
    model = PAYLOADS.get((etype, version)) if etype in WORKER_EVENTS else None
    if model is None:
        raise ProtocolViolation(f"a worker emitted an unknown event type {etype} v{version}")
    if sup.redactor is not None:
        inner = sup.redactor.redact_obj(inner)
    # the parent names whose event it is: a worker cannot speak for another agent or task
    if "agent_id" in model.model_fields:
        inner["agent_id"] = run.request.agent_id
    if "task_id" in model.model_fields:
        inner["task_id"] = run.request.task_spec.id
    try:
        model.model_validate(inner)
    except ValidationError as exc:
        raise ProtocolViolation(
            f"a worker event {etype} has an invalid payload", detail=str(exc)[:300]
        ) from None
    event = _event(run, etype, version, inner)
    try:
        await sup.events.ingest_ephemeral(event)  # no durable fact is a worker's word
    except AirException as exc:
        if exc.error.kind != ErrorKind.VALIDATION_ERROR:
            raise
        # e.g. a heartbeat of 10**30 tokens, which no column holds: the worker's fault
        raise ProtocolViolation(
            f"a worker event {etype} has an invalid payload", detail=exc.error.message
        ) from None


def _event(run: WorkerRun, etype: str, version: int, inner: dict[str, Any]) -> RuntimeEvent:
    """The RuntimeEvent of a checked worker event, assembled without a second validation pass:
    its type and version are a registry key, its payload was just validated, the rest is the
    parent's own (IMPL-LAUNCH-3)."""
    req = run.request
    return RuntimeEvent.model_construct(
        id=new_uuid(),
        type=etype,
        version=version,
        timestamp=utc_now_iso(),
        session_id=req.session_id,
        project_id=req.project_id,
        source=run.source,
        route=["agent", "worker_manager"],
        payload=inner,
    )
