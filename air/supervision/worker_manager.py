"""WorkerManager: supervises worker processes (SDD §8.1, §20.4; ARCHITECTURE §2-§3).

Owns: ``WorkerManager`` — the real ``TaskRunner`` of the Scheduler seam: ``supervise`` (one
attempt, start to end), ``spawn``, and the controls ``cancel`` / ``extend_timeout`` / ``pause`` /
``resume`` / ``steer`` (``air.supervision.steering``) of a live worker, plus the provider's
retry notices as ``assistant.message.failed``.
The parts it composes, each one concern: ``worker_run`` (config, collaborator protocols, the
run's state and deadlines), ``worker_start`` (launch through the ``Launcher`` seam + handshake),
``worker_watch`` (hard / soft / stall / cancel-grace deadlines as cancel scopes),
``worker_loop`` (read loop, dispatch, worker events), ``worker_tools`` (tool and provider
routing on a fixed server pool, output caps), ``worker_checks`` (result checks, redaction),
``worker_finish`` (kill, outcome, run record). Failures are ``TaskOutcome`` values; only
cancellation propagates.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import trio

from air.contracts.error import AirError, AirException, ErrorKind
from air.contracts.event import EventSource, new_event
from air.contracts.ids import new_id
from air.contracts.progress import QUEUED_FOR_SLOT
from air.contracts.runtime import ContextPack
from air.contracts.task import AGENT_TYPE_FOR_TASK
from air.ipc.launcher import Launcher, LocalLauncher
from air.ipc.process import WorkerProcess
from air.ipc.spare import SpareWorker
from air.security.redact import SecretRedactor
from air.supervision.deadline import deadline_error
from air.supervision.runs import RunRecordStore
from air.supervision.seams import SuperviseRequest
from air.supervision.slots import Slot, SlotPool
from air.supervision.steering import SteeredTask, steer_runs
from air.supervision.worker_checks import cap_text
from air.supervision.worker_finish import finish, reap
from air.supervision.worker_loop import read_loop
from air.supervision.worker_run import (
    ArtifactSink,
    ContextProvider,
    End,
    EventSink,
    ProviderRouter,
    SupervisionConfig,
    ToolRouter,
    ToolStreamRouter,
    WorkerRun,
    control,
    dump,
    emit,
    err,
    is_cancel,
    new_run,
    say_progress,
)
from air.supervision.worker_start import record_started, start, timeout_of
from air.supervision.worker_watch import watch

if TYPE_CHECKING:
    from air.supervision.task_outcome import TaskOutcome

__all__ = [
    "AGENT_TYPE_FOR_TASK",
    "QUEUED_MESSAGE",
    "ArtifactSink",
    "EventSink",
    "ProviderRouter",
    "SupervisionConfig",
    "ToolRouter",
    "ToolStreamRouter",
    "WorkerManager",
    "cap_text",
]

QUEUED_MESSAGE = QUEUED_FOR_SLOT
"""The ``task.progress`` message of a task waiting for a machine-wide worker slot."""


def _queued_out(run: WorkerRun) -> TaskOutcome:
    """The outcome of an attempt whose task's deadline passed while it waited for a slot."""
    from air.supervision.task_outcome import TaskOutcome

    req = run.request
    return TaskOutcome(
        task_id=req.task_spec.id,
        agent_id=req.agent_id,
        kind="hard_timeout",
        error=deadline_error("queued", timeout_of(req)),
        timeout_phase="queued",
    )


class WorkerManager:
    """The real TaskRunner: one worker process per supervised attempt.

    Args:
        tools: the tool router (``ToolRegistry.call``).
        provider: the provider router (``ProviderManager``) serving ``provider.complete``.
        events: the EventIngestor (``ingest`` / ``ingest_ephemeral``).
        artifacts: the ArtifactStore (stderr logs, capped outputs).
        model: default ``provider_id/model_id`` when the task names none.
        tool_streams: optional streaming router (``ToolRegistry.call_streaming``); its progress
            items reach the worker as ``tool.stream``.
        tool_specs: tool definitions offered to the model (Anthropic ``ToolSpec`` dicts).
        context: builds the ContextPack of a request (``air run`` passes the session's
            ``WorkerContextBuilder``; default: tools only). An AirException it raises fails
            the attempt with that error before any process starts.
        state_dir: where run records live (default ``<project>/.air/local/state/runs``).
        redactor: applied to everything the parent ingests from a worker — its result, its
            events, its log lines and stderr — before it is recorded (IMPL-API-4).
        spare: a worker started ahead (``SpareWorker.start``); the first standard launch
            adopts it instead of spawning (IMPL-START-2). Only with the default launcher.
        launcher: how workers start (default ``LocalLauncher(spare)``: local subprocesses;
            ``air.testing.launcher.FakeLauncher`` runs scripted workers over memory streams).
        slots: the machine-wide worker slot pool (``SlotPool.for_user()``; IMPL-SLOT-1); each
            attempt holds one from before its launch until its worker is reaped. None: no cap
            beyond the Scheduler's ``--max-workers``.
    """

    def __init__(
        self,
        *,
        tools: ToolRouter,
        provider: ProviderRouter,
        events: EventSink,
        artifacts: ArtifactSink,
        model: str = "scripted/scripted",
        tool_streams: ToolStreamRouter | None = None,
        tool_specs: Iterable[dict[str, Any]] = (),
        context: ContextProvider | None = None,
        config: SupervisionConfig | None = None,
        state_dir: str | None = None,
        redactor: SecretRedactor | None = None,
        spare: SpareWorker | None = None,
        launcher: Launcher | None = None,
        slots: SlotPool | None = None,
    ) -> None:
        self.tools = tools
        self.tool_streams = tool_streams
        self.provider = provider
        self.events = events
        self.artifacts = artifacts
        self.model = model
        self.tool_specs = [dict(t) for t in tool_specs]
        self.context = context
        self.config = config or SupervisionConfig()
        self.state_dir = state_dir
        self.redactor = redactor
        if launcher is None:
            launcher = LocalLauncher(spare)
        elif spare is not None:
            spare.close()
        self.launcher: Launcher = launcher
        self.slots = slots
        self._live: dict[str, WorkerRun] = {}
        listen = getattr(provider, "add_retry_listener", None)
        if listen is not None:
            listen(self._provider_retry)

    @property
    def spare(self) -> SpareWorker | None:
        """The spare the default launcher still holds (None once adopted or let go)."""
        return self.launcher.spare if isinstance(self.launcher, LocalLauncher) else None

    @spare.setter
    def spare(self, spare: SpareWorker | None) -> None:
        if isinstance(self.launcher, LocalLauncher):
            self.launcher.spare = spare
        elif spare is not None:
            spare.close()

    # -- controls of a live worker -------------------------------------------------------------

    async def cancel(self, agent_id: str, reason: str) -> None:
        """Ask a live worker to stop (``agent.cancel``); it is killed if it does not end within
        ``exit_grace_s`` (the run's grace scope gets that deadline). A worker still being
        placed (a queued Slurm job: no process yet) stops waiting at once (IMPL-SLURM-4)."""
        run = self._live.get(agent_id)
        if run is not None and run.proc is None and run.launch_scope is not None:
            run.cancel_reason = reason
            run.launch_scope.cancel()
            return
        if run is None or run.proc is None:
            return
        run.cancel_reason = reason
        run.grace_scope.deadline = trio.current_time() + self.config.exit_grace_s
        await control(run, {"type": "agent.cancel", "reason": reason})

    async def extend_timeout(self, agent_id: str, extra_ms: int, reason: str) -> None:
        """Move a live worker's soft and hard deadlines and tell it (``agent.extend_timeout``)."""
        run = self._live.get(agent_id)
        if run is None:
            return
        run.extend(extra_ms / 1000)
        await control(run, {"type": "agent.extend_timeout", "extra_ms": extra_ms, "reason": reason})

    def hold_clock(self, agent_id: str) -> None:
        """A permission prompt for ``agent_id``'s call is open: its deadlines stand still."""
        run = self._live.get(agent_id)
        if run is not None:
            run.hold()

    def release_clock(self, agent_id: str, waited_s: float) -> None:
        """The person answered after ``waited_s``: ``agent_id``'s deadlines move by it."""
        run = self._live.get(agent_id)
        if run is not None:
            run.release(waited_s)

    async def pause(self, agent_id: str, reason: str) -> None:
        run = self._live.get(agent_id)
        if run is not None:
            await control(run, {"type": "agent.pause", "reason": reason})

    async def resume(self, agent_id: str) -> None:
        run = self._live.get(agent_id)
        if run is not None:
            await control(run, {"type": "agent.resume"})

    async def steer(self, session_id: str, note_id: str, text: str) -> list[SteeredTask]:
        """Send a correction to every running worker of ``session_id``; the tasks it reached."""
        return await steer_runs(
            self._live.values(), session_id=session_id, note_id=note_id, text=text
        )

    # -- attempts ------------------------------------------------------------------------------

    async def spawn(self, request: SuperviseRequest, context_pack: ContextPack) -> WorkerProcess:
        """Start a worker and complete the handshake (raises AirException on failure)."""
        run = new_run(request)
        end = await start(self, run, context_pack, self._records(request))
        if end is not None:
            if run.proc is not None:
                with trio.move_on_after(self.config.kill_grace_s + 3, shield=True):
                    await run.proc.kill_tree(self.config.kill_grace_s)
                    await run.proc.wait()
                    await run.proc.aclose()
            raise AirException(end.error or err(ErrorKind.WORKER_CRASHED, "worker start failed"))
        assert run.proc is not None
        return run.proc

    async def supervise(self, request: SuperviseRequest) -> TaskOutcome:
        """Run one attempt to its end (see ``TaskRunner.supervise``): with a slot pool, first
        wait for a machine-wide slot (``task.progress`` "queued for a slot"), held until the
        worker is reaped; the task's deadline ends the wait as a ``queued`` timeout."""
        run = new_run(request)
        self._live[request.agent_id] = run
        records = self._records(request)
        slot: Slot | None = None
        try:
            try:
                if self.slots is not None:
                    slot = await self._take_slot(run, self.slots)
                    if slot is None:
                        return _queued_out(run)
                outcome = await self._attempt(run, records)
            except BaseException as exc:
                await self._abandon(run, records, exc)
                raise
            return outcome
        finally:
            if slot is not None:
                slot.release()  # after the reap: a slot counts a live worker
            self._live.pop(request.agent_id, None)

    async def _take_slot(self, run: WorkerRun, pool: SlotPool) -> Slot | None:
        """A machine-wide slot for this attempt; None when the task's deadline passed first."""
        req = run.request
        owner = {
            "session_id": req.session_id,
            "task_id": req.task_spec.id,
            "agent_id": req.agent_id,
            "project_root": req.project_root,
        }
        deadline = req.deadline_at if req.deadline_at is not None else math.inf
        since = trio.current_time()
        queued: list[bool] = []

        async def on_wait() -> None:
            queued.append(True)
            await say_progress(self.events, run, QUEUED_MESSAGE)

        slot: Slot | None = None
        with trio.move_on_at(deadline):
            slot = await pool.acquire(req.depth, owner, on_wait=on_wait)
        if slot is None or not queued:
            return slot
        try:  # the task view stops showing it queued
            waited = trio.current_time() - since
            await say_progress(self.events, run, f"got a worker slot after {waited:.1f} s")
        except BaseException:
            slot.release()  # a cancel here must not keep the slot
            raise
        return slot

    async def _attempt(self, run: WorkerRun, records: RunRecordStore) -> TaskOutcome:
        try:
            pack = await self.context(run.request) if self.context else ContextPack()
        except AirException as exc:  # e.g. an unreadable rules file: the attempt fails
            return await finish(self, run, End("spawn_error", exc.error), records, started=False)
        if not pack.tools and self.tool_specs:
            pack = pack.model_copy(update={"tools": self.tool_specs})
        agent = run.request.task_spec.agent
        if agent is not None and agent.tools is not None:  # IMPL-AGENTFILE-1: only the file's tools
            offered = [t for t in pack.tools or [] if t.get("name") in agent.tools]
            pack = pack.model_copy(update={"tools": offered})
        end = await start(self, run, pack, records)
        if end is not None:
            return await finish(self, run, end, records, started=run.proc is not None)
        await record_started(self, run)

        await watch(self, run, lambda: read_loop(self, run))
        return await finish(self, run, run.end or End("result"), records, started=True)

    async def _abandon(self, run: WorkerRun, records: RunRecordStore, exc: BaseException) -> None:
        """The supervising scope was cancelled (or supervision itself failed): kill the tree
        under a bounded shield and record how the attempt ended."""
        cancelled = is_cancel(exc)
        with trio.move_on_after(self.config.kill_grace_s + 5, shield=True):
            code = await reap(self, run)
            if run.proc is not None:
                await run.proc.aclose()
            reason = run.cancel_reason or "the supervising scope was cancelled"
            if run.proc is None and not run.started_recorded:
                # never launched: the log holds no agent to end (the task's end says why; an
                # agent.failed here was refused by the projection: a system_error ended the run)
                records.finish(run.request.agent_id, "cancelled" if cancelled else "failed")
                return
            if not run.started_recorded:
                await record_started(self, run, "starting")
            if cancelled:
                await emit(self, run, "agent.cancelled", {"exit_code": code, "reason": reason})
            else:
                error = err(ErrorKind.SYSTEM_ERROR, f"supervision failed: {exc!r}")
                await emit(self, run, "agent.failed", {"exit_code": code, "error": dump(error)})
            records.finish(run.request.agent_id, "cancelled" if cancelled else "failed")

    def _records(self, request: SuperviseRequest) -> RunRecordStore:
        root = self.state_dir or os.path.join(
            request.project_root, ".air", "local", "state", "runs"
        )
        return RunRecordStore(root)

    async def _provider_retry(self, notice: Any) -> None:
        """Record a retried model turn of a live worker as ``assistant.message.failed`` (durable:
        history, ``--json`` and the stderr progress show it with its reason; IMPL-API-5)."""
        run = self._live.get(str(notice.request.agent_id))
        if run is None:
            return
        req = run.request
        error: AirError = notice.error
        meta = {
            **(error.metadata or {}),
            "task_id": req.task_spec.id,
            "agent_id": req.agent_id,
            "attempt": notice.attempt,
            "wait_s": round(float(notice.wait_s), 3),
            "reason": notice.reason,
            "will_retry": True,
        }
        event = new_event(
            "assistant.message.failed",
            {
                "message_id": new_id("msg"),
                "error": dump(error.model_copy(update={"metadata": meta})),
            },
            session_id=req.session_id,
            project_id=req.project_id,
            source=EventSource(kind="scheduler", id="worker_manager"),
            route=["scheduler", "worker_manager"],
        )
        await self.events.ingest(event)
