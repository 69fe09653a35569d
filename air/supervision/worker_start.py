"""Starting one worker: launch, ``agent.start`` → ``worker.ready`` under the handshake deadline.

Owns: ``start`` (through the manager's ``Launcher``; the run record begins as soon as a process
exists; the handshake is one ``trio.move_on_at`` deadline counted from the launch, so a worker
that never answers ends the attempt as ``spawn_error`` and one that answers with anything else —
or a wrong protocol version — as ``protocol_error``; a launch the machine refuses for want of a
file descriptor or memory raises, ending the run, never a retry; on success the soft and hard
deadlines are armed; a launcher's wait before that — a Slurm allocation — is bounded by the
task's deadline only, reported through ``LaunchSpec.progress``) and ``record_started`` (the
durable ``agent.started`` with the process identity, and where a launcher placed a remote
worker: ``remote``, as the run record keeps it).
"""

from __future__ import annotations

import math
from typing import Any

import trio

from air.contracts.error import ErrorKind, machine_failure
from air.contracts.ipc import AgentStartControl, IpcEnvelope
from air.contracts.runtime import AgentRuntimeContext, ContextPack
from air.ipc.framing import ProtocolViolation
from air.ipc.launcher import LaunchSpec
from air.ipc.process import WorkerProcess
from air.supervision.deadline import deadline_error
from air.supervision.runs import RunRecordStore
from air.supervision.seams import SuperviseRequest
from air.supervision.worker_run import (
    TEMPLATE,
    End,
    Supervisor,
    WorkerRun,
    control,
    emit,
    err,
    say_progress,
    worker_error,
)

__all__ = ["record_started", "start", "timeout_of"]


async def start(
    sup: Supervisor, run: WorkerRun, pack: ContextPack, records: RunRecordStore
) -> End | None:
    """Launch the worker and complete the handshake; an ``End`` when the attempt cannot run."""
    req = run.request
    cfg = sup.config
    deadline = req.deadline_at if req.deadline_at is not None else math.inf
    left = deadline - trio.current_time()

    async def progress(message: str) -> None:
        await say_progress(sup.events, run, message)

    def placed(where: dict[str, Any]) -> None:
        run.remote = {**(run.remote or {}), **where}
        records.place(run)  # a parent killed from here on leaves a record to sweep by

    spec = LaunchSpec(
        agent_id=req.agent_id,
        marker=run.marker,
        cwd=req.workspace.path or None,
        command=cfg.command,
        env=cfg.env,
        time_s=None if math.isinf(left) else max(left, 0.0),
        progress=progress,
        placed=placed,
    )
    launched = None
    # a launcher may wait for an allocation first: the task's deadline bounds that wait, and a
    # cancel ends it at once (the launcher cancels the pending job as it unwinds)
    run.launch_scope = trio.CancelScope(deadline=deadline)
    try:
        with run.launch_scope:
            launched = await sup.launcher.launch(spec)
    except OSError as exc:
        if machine_failure(exc) is not None:
            raise  # no fd or memory left: the run stops, the limit named (open_runtime's edge)
        return End(
            "spawn_error",
            err(ErrorKind.ENVIRONMENT_ERROR, f"cannot start the worker: {exc}", transient=True),
            True,
        )
    finally:
        run.launch_scope = None
    if launched is None and run.cancel_reason is not None:
        return End("cancelled", err(ErrorKind.CANCELLED, f"cancelled: {run.cancel_reason}"))
    if launched is None:
        return End("hard_timeout", deadline_error("queued", timeout_of(req)), False)
    launched_at = trio.current_time()  # the handshake counts from a running worker (IMPL-SLURM-2)
    run.marker = launched.marker
    run.proc = WorkerProcess(launched, agent_id=req.agent_id, max_line_bytes=cfg.max_line_bytes)
    records.begin(run)
    start_msg = AgentStartControl(
        task_spec=req.task_spec,
        context_pack=pack,
        runtime=AgentRuntimeContext(
            session_id=req.session_id,
            project_id=req.project_id,
            agent_id=req.agent_id,
            worktree_path=req.workspace.path,
            permission_template=TEMPLATE[run.agent_type],
        ),
        options={
            "heartbeat_s": cfg.heartbeat_s,
            "grace_turns": cfg.grace_turns,
            **({"max_tokens": cfg.max_tokens} if cfg.max_tokens else {}),
            **({"resume_from": req.resume_from} if req.resume_from else {}),
        },
    )
    msg: IpcEnvelope | ProtocolViolation | None = None
    with trio.move_on_at(min(launched_at + cfg.handshake_timeout_s, deadline)):
        await control(run, start_msg.model_dump(mode="json"))
        msg = await run.proc.receive()
    if msg is None and trio.current_time() >= deadline:
        # the task's deadline passed before the worker was ready (IMPL-DEADLINE-1)
        return End("hard_timeout", deadline_error("starting", timeout_of(req)), False)
    return _check_ready(run, msg)


def timeout_of(req: SuperviseRequest) -> float:
    """The task's whole timeout in seconds (what its deadline was made from)."""
    if req.timeout_s is not None:
        return req.timeout_s
    return req.task_spec.constraints.hard_timeout_ms / 1000


def _check_ready(run: WorkerRun, msg: IpcEnvelope | ProtocolViolation | None) -> End | None:
    assert run.proc is not None
    if msg is None:
        return End(
            "spawn_error",
            err(
                ErrorKind.WORKER_CRASHED,
                "the worker did not answer agent.start with worker.ready",
                transient=True,
            ),
            True,
        )
    if isinstance(msg, ProtocolViolation):
        return End("protocol_error", msg.error, False)
    if msg.kind == "protocol.error":
        return End("protocol_error", worker_error(msg), False)
    if msg.kind != "event" or msg.payload.get("type") != "worker.ready":
        return End(
            "protocol_error",
            err(ErrorKind.PROTOCOL_ERROR, f"expected worker.ready, got {msg.kind}"),
            False,
        )
    version = (msg.payload.get("payload") or {}).get("protocol_version")
    if not isinstance(version, int) or not run.proc.protocol.check_protocol_version(version):
        return End(
            "protocol_error",
            err(
                ErrorKind.PROTOCOL_ERROR,
                f"protocol version mismatch: worker speaks {version!r}, parent 1",
                user_action="Run the worker from the same air installation as the parent.",
            ),
            False,
        )
    run.arm(trio.current_time())
    return None


async def record_started(sup: Supervisor, run: WorkerRun, status: str = "running") -> None:
    assert run.proc is not None
    ident = run.proc.identity
    run.started_recorded = True
    await emit(
        sup,
        run,
        "agent.started",
        {
            "agent_type": run.agent_type.value,
            "status": status,
            "pid": ident.pid,
            "pid_start_time": ident.start_time,
            "boot_id": ident.boot_id,
            **({"remote": _where(run.remote)} if run.remote else {}),
        },
    )


def _where(remote: dict[str, Any]) -> dict[str, Any]:
    """Where a remote worker is, for ``agent.started``: the run record's placement without the
    host's config (the record keeps that for recovery; the event names the host)."""
    return {k: v for k, v in remote.items() if k != "config"}
