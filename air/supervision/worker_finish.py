"""Ending one attempt: the process-tree kill, the outcome value and the durable record.

Owns: ``reap`` (close stdin, kill the worker's tree — SIGTERM to the group, ``kill_grace_s``,
SIGKILL — and collect its exit code), ``finish`` (under a shield, the reaping bounded: a worker
that sent its result gets ``exit_grace_s`` to exit on its own, then is reaped and every stream
of it closed; a hard timeout reports exit code 5; the stderr log artifact; ``agent.completed`` /
``agent.failed`` / ``agent.cancelled``; the run record's terminal state) and ``outcome`` (how
the attempt ended, as a ``TaskOutcome``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from air.contracts.artifact import ArtifactType
from air.contracts.error import ErrorKind, WorkerExit
from air.supervision.deadline import phase_of
from air.supervision.runs import RunRecordStore
from air.supervision.worker_checks import artifact
from air.supervision.worker_run import End, Supervisor, WorkerRun, dump, emit, err, redact
from air.supervision.worker_start import record_started

if TYPE_CHECKING:  # built once an attempt ends, not at import (IMPL-BOOT-12)
    from air.contracts.artifact_records import ArtifactRef
    from air.supervision.task_outcome import TaskOutcome

__all__ = ["HARD_TIMEOUT_EXIT", "finish", "outcome", "reap"]

HARD_TIMEOUT_EXIT = WorkerExit.HARD_TIMEOUT
"""The exit code an attempt killed at its hard timeout reports (runner contract)."""


async def reap(sup: Supervisor, run: WorkerRun) -> int | None:
    if run.proc is None:
        return None
    await run.proc.close_stdin()
    await run.proc.kill_tree(sup.config.kill_grace_s)
    with trio.move_on_after(2):
        return await run.proc.wait()
    return run.proc.returncode


async def finish(
    sup: Supervisor, run: WorkerRun, end: End, records: RunRecordStore, *, started: bool
) -> TaskOutcome:
    req = run.request
    proc = run.proc
    code: int | None = None
    with trio.CancelScope(shield=True):
        # only the reaping is bounded: a sweep of a black-holed host may use all of it, and the
        # attempt's end is recorded and returned all the same (IMPL-REAP-1)
        with trio.move_on_after(sup.config.kill_grace_s + 10):
            if proc is not None:
                if end.kind == "result":
                    with trio.move_on_after(sup.config.exit_grace_s):
                        await proc.close_stdin()
                        code = await proc.wait()
                code_after = await reap(sup, run)
                code = code if code is not None else code_after
                with trio.move_on_after(0.5):
                    await proc.pump_stderr()
        if proc is not None:
            await proc.aclose()  # its pipes now, not at garbage collection
        if end.kind == "hard_timeout":
            code = HARD_TIMEOUT_EXIT
        log_ref = _stderr_artifact(sup, run)
        result = outcome(sup, run, end, code)
        state, result = await _record_end(sup, run, end, result, code, log_ref, started)
        records.finish(req.agent_id, state)
    return result


async def _record_end(
    sup: Supervisor,
    run: WorkerRun,
    end: End,
    result: TaskOutcome,
    code: int | None,
    log_ref: ArtifactRef | None,
    started: bool,
) -> tuple[str, TaskOutcome]:
    """Emit the attempt's terminal ``agent.*`` event; its run-record state and the outcome (a
    failure names its stderr log artifact)."""
    from air.contracts.worker_result import WorkerStatus

    if result.kind == "result" and result.result and result.result.status == WorkerStatus.CANCELLED:
        reason = run.cancel_reason or result.result.summary
        await emit(sup, run, "agent.cancelled", {"exit_code": code, "reason": reason})
        return "cancelled", result
    if end.kind == "cancelled" and result.kind != "result":
        await emit(sup, run, "agent.cancelled", {"exit_code": code, "reason": run.cancel_reason})
        return "cancelled", result
    if result.kind == "result":
        returned = None if result.result is None else result.result.model_dump(mode="json")
        await emit(sup, run, "agent.completed", {"exit_code": code, "worker_result": returned})
        return "completed", result
    if started:
        if not run.started_recorded:
            await record_started(sup, run, "starting")
        assert result.error is not None
        error = result.error
        if log_ref is not None:
            meta = {**(error.metadata or {}), "stderr_artifact_id": log_ref.artifact_id}
            error = error.model_copy(update={"metadata": meta})
            result = result.model_copy(update={"error": error})
        await emit(sup, run, "agent.failed", {"exit_code": code, "error": dump(error)})
    return "failed", result


def outcome(sup: Supervisor, run: WorkerRun, end: End, code: int | None) -> TaskOutcome:
    from air.supervision.task_outcome import TaskOutcome

    req = run.request
    base = {"task_id": req.task_spec.id, "agent_id": req.agent_id, "exit_code": code}
    if run.result is not None:
        return TaskOutcome(kind="result", result=run.result, **base)
    if end.kind == "cancelled":
        error = err(ErrorKind.CANCELLED, f"cancelled: {run.cancel_reason}")
        return TaskOutcome(kind="crashed", error=error, transient=False, **base)
    if end.kind == "result":
        # EOF (or a cancel) without a result: the worker crashed or died.
        tail = bytes(run.proc.stderr_tail[-2000:]).decode("utf-8", "replace") if run.proc else ""
        error = err(
            ErrorKind.WORKER_CRASHED,
            f"the worker exited with code {code} without a result",
            detail=redact(sup, tail) or None,
            transient=True,
        )
        return TaskOutcome(kind="crashed", error=error, transient=True, **base)
    kind = (
        end.kind
        if end.kind in ("protocol_error", "spawn_error", "stalled", "hard_timeout")
        else "crashed"
    )
    error = end.error or err(ErrorKind.WORKER_CRASHED, end.kind)
    phase = phase_of(error) if kind == "hard_timeout" else None
    return TaskOutcome(kind=kind, error=error, transient=end.transient, timeout_phase=phase, **base)


def _stderr_artifact(sup: Supervisor, run: WorkerRun) -> ArtifactRef | None:
    if run.proc is None:
        return None
    text = bytes(run.proc.stderr_tail).decode("utf-8", "replace")
    if run.logs:
        logs = "\n".join(run.logs)
        if run.logs_dropped:
            logs = f"[{run.logs_dropped} earlier log messages not kept]\n{logs}"
        text = logs + ("\n--- stderr ---\n" + text if text else "")
    if not text.strip():
        return None
    return artifact(sup, run, "worker-stderr", text, artifact_type=ArtifactType.LOG)
