"""WorkerManager: spawns and supervises worker subprocesses (SDD §8.1, §20.4; ARCHITECTURE §2-§3).

Owns: ``WorkerManager`` (``spawn``, ``cancel``, ``extend_timeout`` and ``supervise`` — the real
``TaskRunner`` of the Scheduler seam), ``SupervisionConfig`` and the injected-collaborator
protocols. ``supervise`` runs one attempt: spawn ``python -m air.roles`` in its own session, the
``agent.start`` → ``worker.ready`` handshake under a deadline, routing of ``tool.call`` to the
tool router and of the internal streaming tool ``provider.complete`` to the provider router,
worker events validated then handed to the EventIngestor, the soft / hard timeouts, the stall
watchdog (silence → ``agent.get_state`` probe → kill, transient), output caps (50 KB / 2,000
lines, the full text in an artifact), the durable ``agent.*`` events, the run record and the
process-tree kill. Failures are ``TaskOutcome`` values; only cancellation propagates.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

import trio
from pydantic import ValidationError

from air.contracts import (
    AGENT_TYPE_FOR_TASK,
    AgentRuntimeContext,
    AgentStartControl,
    AgentType,
    AirError,
    ArtifactContext,
    ArtifactCreateInput,
    ArtifactRef,
    ArtifactType,
    ContextPack,
    ErrorKind,
    EventSource,
    IpcEnvelope,
    PermissionTemplate,
    ProviderCompletionInput,
    ProviderStreamEvent,
    Retryability,
    RuntimeEvent,
    ToolCallPayload,
    ToolEvent,
    ToolExecutionContext,
    ToolResultEnvelope,
    WorkerResult,
    WorkerStatus,
    make_air_error,
    new_event,
    new_id,
)
from air.contracts.error import AirException, WorkerExit
from air.contracts.worker_result import ROLE_RESULT_MODELS
from air.events.payloads import PAYLOADS
from air.ipc.framing import DEFAULT_MAX_LINE_BYTES, ProtocolViolation
from air.ipc.process import WorkerProcess, worker_command
from air.ipc.protocol import make_envelope
from air.ipc.spare import SpareWorker
from air.nursery.runs import RunRecordStore
from air.nursery.seams import SuperviseRequest, TaskOutcome
from air.security.redact import SecretRedactor

__all__ = [
    "AGENT_TYPE_FOR_TASK",
    "ArtifactSink",
    "EventSink",
    "ProviderRouter",
    "SupervisionConfig",
    "ToolRouter",
    "ToolStreamRouter",
    "WorkerManager",
    "cap_text",
]

_TEMPLATE: dict[AgentType, PermissionTemplate] = {
    AgentType.EXECUTOR: PermissionTemplate.EXECUTOR,
    AgentType.REVIEWER: PermissionTemplate.REVIEWER,
    AgentType.DEBUGGER: PermissionTemplate.DEBUGGER,
    AgentType.COMPACTOR: PermissionTemplate.REVIEWER,
    AgentType.EXPERIENCE_MINER: PermissionTemplate.REVIEWER,
}
_CONTRACT: dict[AgentType, str] = {
    AgentType.EXECUTOR: "ExecutorResult",
    AgentType.REVIEWER: "ReviewerResult",
    AgentType.DEBUGGER: "DebuggerResult",
    AgentType.COMPACTOR: "CompactorResult",
    AgentType.EXPERIENCE_MINER: "ExperienceMinerResult",
}
_PARENT_OWNED = (
    "task.",
    "session.",
    "tool.",
    "command.",
    "permission.",
    "workspace.",
    "artifact.",
    "evidence.",
    "diagnostic.",
    "capability.",
    "debug.",
)
_PARENT_OWNED_AGENT = frozenset(
    {"agent.started", "agent.completed", "agent.failed", "agent.lost", "agent.cancelled"}
)


class EventSink(Protocol):
    async def ingest(self, event: RuntimeEvent) -> Any: ...

    async def ingest_ephemeral(self, event: RuntimeEvent) -> Any: ...


class ArtifactSink(Protocol):
    def create(self, input: ArtifactCreateInput, context: ArtifactContext) -> ArtifactRef: ...


class ProviderRouter(Protocol):
    def complete(self, request: ProviderCompletionInput) -> AsyncIterator[ProviderStreamEvent]: ...


ToolRouter = Callable[[str, dict[str, Any], ToolExecutionContext], Awaitable[ToolResultEnvelope]]
ToolStreamRouter = Callable[
    [str, dict[str, Any], ToolExecutionContext],
    AbstractAsyncContextManager[AsyncIterator[ToolEvent | ToolResultEnvelope]],
]
"""``ToolRegistry.call_streaming``: ``async with router(...) as items: async for item in items``."""
ContextProvider = Callable[[SuperviseRequest], Awaitable[ContextPack]]


@dataclass
class SupervisionConfig:
    """Timings and limits of supervision (runner-contract defaults, baselines §B.3)."""

    handshake_timeout_s: float = 15.0
    stall_after_s: float = 90.0
    stall_kill_after_s: float = 90.0
    kill_grace_s: float = 3.0
    exit_grace_s: float = 5.0
    """How long a worker may take to exit after its result (or after agent.cancel)."""
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    max_result_bytes: int = 50 * 1024
    max_result_lines: int = 2000
    heartbeat_s: float = 5.0
    grace_turns: int = 2
    max_tokens: int | None = None
    """A cap on each turn's max_tokens; ``None``: the model's max_output_tokens (models.yaml)."""
    command: list[str] | None = None
    """The worker command; default ``[sys.executable, "-m", "air.roles"]``."""
    env: dict[str, str] | None = None
    """Variables added to the worker's allowlisted environment (``air.ipc.process``)."""


def cap_text(text: str, max_bytes: int, max_lines: int) -> tuple[str, bool]:
    """Cut ``text`` to ``max_bytes`` UTF-8 bytes and ``max_lines`` lines (runner invariant 6)."""
    lines = text.split("\n")
    cut = False
    if len(lines) > max_lines:
        text, cut = "\n".join(lines[:max_lines]), True
    data = text.encode("utf-8")
    if len(data) > max_bytes:
        text, cut = data[:max_bytes].decode("utf-8", "ignore"), True
    return text, cut


@dataclass
class _End:
    kind: str
    error: AirError | None = None
    transient: bool = False


@dataclass
class _Run:
    request: SuperviseRequest
    agent_type: AgentType
    marker: str
    proc: WorkerProcess | None = None
    result: WorkerResult | None = None
    end: _End | None = None
    last_seen: float = 0.0
    probed: bool = False
    soft_at: float = 0.0
    hard_at: float = 0.0
    soft_sent: bool = False
    cancel_reason: str | None = None
    cancel_deadline: float | None = None
    logs: list[str] = field(default_factory=list)
    verified: dict[str, bool] = field(default_factory=dict)
    checkpoint: dict[str, Any] | None = None
    started_recorded: bool = False
    ctx: ToolExecutionContext | None = None
    read_scope: trio.CancelScope = field(default_factory=trio.CancelScope)


class WorkerManager:
    """The real TaskRunner: one worker subprocess per supervised attempt.

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
        spare: a worker started ahead (``SpareWorker.start``); the first attempt adopts it
            instead of spawning (IMPL-START-2).
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
        self.spare = spare
        self._live: dict[str, _Run] = {}
        listen = getattr(provider, "add_retry_listener", None)
        if listen is not None:
            listen(self._provider_retry)

    # -- public API ----------------------------------------------------------------------------

    async def cancel(self, agent_id: str, reason: str) -> None:
        """Ask a live worker to stop (``agent.cancel``); it is killed if it does not end in time."""
        run = self._live.get(agent_id)
        if run is None or run.proc is None:
            return
        run.cancel_reason = reason
        run.cancel_deadline = trio.current_time() + self.config.exit_grace_s
        await self._control(run, {"type": "agent.cancel", "reason": reason})

    async def extend_timeout(self, agent_id: str, extra_ms: int, reason: str) -> None:
        """Move a live worker's soft and hard deadlines and tell it (``agent.extend_timeout``)."""
        run = self._live.get(agent_id)
        if run is None:
            return
        run.soft_at += extra_ms / 1000
        run.hard_at += extra_ms / 1000
        run.soft_sent = False
        await self._control(
            run, {"type": "agent.extend_timeout", "extra_ms": extra_ms, "reason": reason}
        )

    async def pause(self, agent_id: str, reason: str) -> None:
        run = self._live.get(agent_id)
        if run is not None:
            await self._control(run, {"type": "agent.pause", "reason": reason})

    async def resume(self, agent_id: str) -> None:
        run = self._live.get(agent_id)
        if run is not None:
            await self._control(run, {"type": "agent.resume"})

    async def spawn(self, request: SuperviseRequest, context_pack: ContextPack) -> WorkerProcess:
        """Start a worker and complete the handshake (raises AirException on failure)."""
        run = self._new_run(request)
        end = await self._start(run, context_pack)
        if end is not None:
            if run.proc is not None:
                with trio.move_on_after(self.config.kill_grace_s + 3, shield=True):
                    await run.proc.kill_tree(self.config.kill_grace_s)
                    await run.proc.wait()
            raise AirException(end.error or _err(ErrorKind.WORKER_CRASHED, "worker start failed"))
        assert run.proc is not None
        return run.proc

    async def supervise(self, request: SuperviseRequest) -> TaskOutcome:
        """Run one attempt to its end (see ``TaskRunner.supervise``)."""
        run = self._new_run(request)
        self._live[request.agent_id] = run
        records = self._records(request)
        finished = False
        try:
            try:
                pack = await self.context(request) if self.context else ContextPack()
            except AirException as exc:  # e.g. an unreadable rules file: the attempt fails
                outcome = await self._finish(
                    run, _End("spawn_error", exc.error), records, started=False
                )
                finished = True
                return outcome
            if not pack.tools and self.tool_specs:
                pack = pack.model_copy(update={"tools": self.tool_specs})
            end = await self._start(run, pack)
            if end is not None:
                outcome = await self._finish(run, end, records, started=run.proc is not None)
            else:
                await self._record_started(run)
                async with trio.open_nursery() as nursery:
                    assert run.proc is not None
                    nursery.start_soon(run.proc.pump_stderr)
                    nursery.start_soon(self._watchdog, run)
                    await self._read_loop(run, nursery)
                    nursery.cancel_scope.cancel()
                outcome = await self._finish(run, run.end or _End("result"), records, started=True)
            finished = True
            return outcome
        except BaseException as exc:
            if finished:
                raise
            cancelled = _is_cancel(exc)
            with trio.move_on_after(self.config.kill_grace_s + 5, shield=True):
                code = await self._reap(run)
                reason = run.cancel_reason or "the supervising scope was cancelled"
                if run.proc is not None and not run.started_recorded:
                    await self._record_started(run, "starting")
                if cancelled:
                    await self._emit(run, "agent.cancelled", {"exit_code": code, "reason": reason})
                else:
                    error = _err(ErrorKind.SYSTEM_ERROR, f"supervision failed: {exc!r}")
                    await self._emit(
                        run, "agent.failed", {"exit_code": code, "error": _dump(error)}
                    )
                records.finish(request.agent_id, "cancelled" if cancelled else "failed")
            raise
        finally:
            self._live.pop(request.agent_id, None)

    # -- start ---------------------------------------------------------------------------------

    def _new_run(self, request: SuperviseRequest) -> _Run:
        agent_type = AGENT_TYPE_FOR_TASK[request.task_spec.type]
        return _Run(
            request=request, agent_type=agent_type, marker=f"{request.agent_id}.{new_id('run')}"
        )

    def _records(self, request: SuperviseRequest) -> RunRecordStore:
        root = self.state_dir or os.path.join(
            request.project_root, ".air", "local", "state", "runs"
        )
        return RunRecordStore(root)

    async def _start(self, run: _Run, pack: ContextPack) -> _End | None:
        req = run.request
        cfg = self.config
        spare = self._take_spare()
        try:
            if spare is not None:
                run.marker = spare.marker
                run.proc = spare.adopt(req.agent_id, cfg.max_line_bytes)
            else:
                run.proc = await WorkerProcess.spawn(
                    agent_id=req.agent_id,
                    marker=run.marker,
                    cwd=req.workspace.path or None,
                    command=cfg.command or worker_command(),
                    env=cfg.env,
                    max_line_bytes=cfg.max_line_bytes,
                )
        except OSError as exc:
            return _End(
                "spawn_error",
                _err(
                    ErrorKind.ENVIRONMENT_ERROR, f"cannot start the worker: {exc}", transient=True
                ),
                True,
            )
        self._records(req).begin(run)
        start = AgentStartControl(
            task_spec=req.task_spec,
            context_pack=pack,
            runtime=AgentRuntimeContext(
                session_id=req.session_id,
                project_id=req.project_id,
                agent_id=req.agent_id,
                worktree_path=req.workspace.path,
                permission_template=_TEMPLATE[run.agent_type],
            ),
            options={
                "heartbeat_s": cfg.heartbeat_s,
                "grace_turns": cfg.grace_turns,
                **({"max_tokens": cfg.max_tokens} if cfg.max_tokens else {}),
            },
        )
        await self._control(run, start.model_dump(mode="json"))
        msg: IpcEnvelope | ProtocolViolation | None = None
        with trio.move_on_after(cfg.handshake_timeout_s):
            msg = await run.proc.receive()
        if msg is None or isinstance(msg, ProtocolViolation):
            if isinstance(msg, ProtocolViolation):
                return _End("protocol_error", msg.error, False)
            return _End(
                "spawn_error",
                _err(
                    ErrorKind.WORKER_CRASHED,
                    "the worker did not answer agent.start with worker.ready",
                    transient=True,
                ),
                True,
            )
        if msg.kind == "protocol.error":
            return _End("protocol_error", _worker_error(msg), False)
        if msg.kind != "event" or msg.payload.get("type") != "worker.ready":
            return _End(
                "protocol_error",
                _err(ErrorKind.PROTOCOL_ERROR, f"expected worker.ready, got {msg.kind}"),
                False,
            )
        version = (msg.payload.get("payload") or {}).get("protocol_version")
        if not isinstance(version, int) or not run.proc.protocol.check_protocol_version(version):
            return _End(
                "protocol_error",
                _err(
                    ErrorKind.PROTOCOL_ERROR,
                    f"protocol version mismatch: worker speaks {version!r}, parent 1",
                    user_action="Run the worker from the same air installation as the parent.",
                ),
                False,
            )
        now = trio.current_time()
        run.last_seen = now
        limits = req.task_spec.constraints
        run.soft_at = now + limits.soft_timeout_ms / 1000
        run.hard_at = now + limits.hard_timeout_ms / 1000
        return None

    def _take_spare(self) -> SpareWorker | None:
        """The spare worker, once, if it is alive and was started as this manager would start
        one (default command and environment; IMPL-START-2)."""
        spare, self.spare = self.spare, None
        if spare is None:
            return None
        if self.config.command is None and self.config.env is None and spare.alive():
            return spare
        spare.close()
        return None

    async def _record_started(self, run: _Run, status: str = "running") -> None:
        assert run.proc is not None
        ident = run.proc.identity
        run.started_recorded = True
        await self._emit(
            run,
            "agent.started",
            {
                "agent_type": run.agent_type.value,
                "status": status,
                "pid": ident.pid,
                "pid_start_time": ident.start_time,
                "boot_id": ident.boot_id,
            },
        )

    # -- the running worker --------------------------------------------------------------------

    async def _watchdog(self, run: _Run) -> None:
        cfg = self.config
        tick = min(max(min(cfg.stall_after_s, cfg.stall_kill_after_s) / 3, 0.02), 1.0)
        while True:
            now = trio.current_time()
            wake = [tick, run.hard_at - now]
            if not run.soft_sent:
                wake.append(run.soft_at - now)
            if run.cancel_deadline is not None:
                wake.append(run.cancel_deadline - now)
            await trio.sleep(max(min(wake), 0.005))
            now = trio.current_time()
            if now >= run.hard_at:
                run.end = _End(
                    "hard_timeout",
                    _err(ErrorKind.TIMEOUT, "the task reached its hard timeout", transient=False),
                )
                run.read_scope.cancel()
                return
            if run.cancel_deadline is not None and now >= run.cancel_deadline:
                run.end = _End("cancelled", None)
                run.read_scope.cancel()
                return
            if now >= run.soft_at and not run.soft_sent:
                run.soft_sent = True
                await self._control(run, {"type": "agent.wrap_up", "reason": "soft_timeout"})
            silence = now - run.last_seen
            if cfg.stall_after_s > 0 and silence >= cfg.stall_after_s and not run.probed:
                run.probed = True
                await self._control(run, {"type": "agent.get_state"})
            if (
                cfg.stall_after_s > 0
                and cfg.stall_kill_after_s > 0
                and silence >= cfg.stall_after_s + cfg.stall_kill_after_s
            ):
                run.end = _End(
                    "stalled",
                    _err(
                        ErrorKind.WORKER_STALLED,
                        f"the worker was silent for {silence:.1f}s and did not answer a probe",
                        transient=True,
                    ),
                    True,
                )
                run.read_scope.cancel()
                return

    async def _read_loop(self, run: _Run, nursery: trio.Nursery) -> None:
        assert run.proc is not None
        with run.read_scope:
            while True:
                msg = await run.proc.receive()
                run.last_seen = trio.current_time()
                run.probed = False
                if msg is None:
                    return
                if isinstance(msg, ProtocolViolation):
                    run.end = _End("protocol_error", msg.error, False)
                    return
                try:
                    if await self._handle(run, msg, nursery):
                        return
                except ProtocolViolation as exc:
                    run.end = _End("protocol_error", exc.error, False)
                    return

    async def _handle(self, run: _Run, msg: IpcEnvelope, nursery: trio.Nursery) -> bool:
        assert run.proc is not None
        if msg.agent_id != run.request.agent_id or msg.session_id != run.request.session_id:
            # a worker speaks for itself only: its stdout is its own agent's channel
            raise ProtocolViolation(
                f"a message names agent {msg.agent_id} of session {msg.session_id}, not this "
                f"worker's ({run.request.agent_id})"
            )
        kind = msg.kind
        if kind == "event":
            await self._worker_event(run, msg)
        elif kind == "log":
            run.logs.append(self._redact(str(msg.payload.get("message", ""))[:2000]))
        elif kind == "tool.call":
            call = run.proc.protocol.payload(msg)
            assert isinstance(call, ToolCallPayload)
            nursery.start_soon(self._serve_tool, run, msg.id, call)
        elif kind == "worker.checkpoint":
            run.checkpoint = dict(msg.payload)
        elif kind == "protocol.error":
            run.end = _End("protocol_error", _worker_error(msg), False)
            return True
        elif kind == "worker.result":
            run.result = self._check_result(run, run.proc.protocol.payload(msg))
            run.end = _End("result")
            return True
        return False

    async def _worker_event(self, run: _Run, msg: IpcEnvelope) -> None:
        etype = str(msg.payload.get("type", ""))
        version = int(msg.payload.get("version", 1))
        inner = dict(msg.payload.get("payload") or {})
        if etype == "worker.ready":
            return
        if etype in _PARENT_OWNED_AGENT or etype.startswith(_PARENT_OWNED):
            raise ProtocolViolation(f"a worker may not emit {etype}")
        if self.redactor is not None:
            inner = self.redactor.redact_obj(inner)
        model = PAYLOADS.get((etype, version))
        if model is None:
            raise ProtocolViolation(f"a worker emitted an unknown event type {etype} v{version}")
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
        event = new_event(
            etype,
            inner,
            version=version,
            session_id=run.request.session_id,
            project_id=run.request.project_id,
            source=EventSource(kind="agent", id=run.request.agent_id, agent_type=run.agent_type),
            route=["agent", "worker_manager"],
        )
        if etype == "agent.heartbeat":
            await self.events.ingest_ephemeral(event)
        else:
            await self.events.ingest(event)

    def _check_result(self, run: _Run, result: WorkerResult) -> WorkerResult:
        """Validate a result on the parent side (runner invariant 25: no self-attestation)."""
        spec = run.request.task_spec
        if result.task_id != spec.id or result.agent_id != run.request.agent_id:
            raise ProtocolViolation("a worker result names another task or agent")
        update: dict[str, Any] = {}
        if result.result is not None:
            try:
                ROLE_RESULT_MODELS[_CONTRACT[run.agent_type]].model_validate(result.result)
            except ValidationError as exc:
                if result.status == WorkerStatus.COMPLETED:
                    update["status"] = WorkerStatus.PARTIAL
                    update["error"] = _err(
                        ErrorKind.VALIDATION_ERROR,
                        f"the result does not match {_CONTRACT[run.agent_type]}: "
                        + str(exc.errors()[0]["msg"]),
                    )
        changes = bool(result.changed_files) or bool((result.result or {}).get("changes_made"))
        commands = list(spec.verification.commands or [])
        if (
            result.status == WorkerStatus.COMPLETED
            and changes
            and commands
            and run.agent_type == AgentType.EXECUTOR
        ):
            skipped = {v.name for v in result.verification if v.status == "skipped"}
            missing = [
                c
                for c in commands
                if not run.verified.get(c)
                and not (
                    spec.verification.fallback_allowed and c in skipped and c not in run.verified
                )
            ]
            if missing:
                update["status"] = WorkerStatus.FAILED
                update["error"] = _err(
                    ErrorKind.VERIFICATION_FAILED,
                    "verification commands did not pass through shell.run: " + ", ".join(missing),
                    user_action="Fix the change so the verification commands pass.",
                )
        cfg = self.config
        for name in ("summary", "raw_text"):
            value = getattr(result, name)
            if isinstance(value, str):
                capped, cut = cap_text(value, cfg.max_result_bytes, cfg.max_result_lines)
                if cut:
                    ref = self._artifact(run, f"result-{name}", value)
                    update[name] = (
                        capped + f"\n[truncated; full text in artifact {ref.artifact_id}]"
                    )
                    update["artifacts"] = [*result.artifacts, *update.get("artifacts", []), ref]
        checked = result.model_copy(update=update) if update else result
        if self.redactor is None:
            return checked
        # what the model wrote may hold a key it saw: redact before anything records it
        return WorkerResult.model_validate(
            self.redactor.redact_obj(checked.model_dump(mode="json"))
        )

    def _redact(self, text: str) -> str:
        return self.redactor.redact(text) if self.redactor is not None else text

    async def _serve_tool(self, run: _Run, call_id: str, call: ToolCallPayload) -> None:
        req = run.request
        if call.name == "provider.complete":
            env = await self._serve_provider(run, call_id, call.input)
        else:
            if run.ctx is None:
                run.ctx = ToolExecutionContext(
                    session_id=req.session_id,
                    task_id=req.task_spec.id,
                    agent_id=req.agent_id,
                    project_root=req.project_root,
                    workspace_root=req.workspace.path,
                    permission_template=_TEMPLATE[run.agent_type],
                    write_area=req.task_spec.scope.write_area,
                    allowed_paths=req.task_spec.scope.allowed_paths,
                    denied_paths=req.task_spec.scope.denied_paths,
                    headless=req.headless,
                )
            ctx = run.ctx
            env = await self._call_tool(run, call_id, call, ctx)
            if call.name == "shell.run":
                out = env.output if isinstance(env.output, dict) else {}
                command = str(call.input.get("command", ""))
                run.verified[command] = env.status == "ok" and out.get("exit_code") == 0
            env = self._cap(run, env)
        await self._send(run, "tool.result", env.model_dump(mode="json"), correlation_id=call_id)

    async def _call_tool(
        self, run: _Run, call_id: str, call: ToolCallPayload, ctx: ToolExecutionContext
    ) -> ToolResultEnvelope:
        try:
            if self.tool_streams is None:
                return await self.tools(call.name, dict(call.input), ctx)
            final: ToolResultEnvelope | None = None
            async with self.tool_streams(call.name, dict(call.input), ctx) as items:
                async for item in items:
                    if isinstance(item, ToolResultEnvelope):
                        final = item
                    else:
                        await self._send(
                            run,
                            "tool.stream",
                            {"event": item.model_dump(mode="json")},
                            correlation_id=call_id,
                        )
            if final is None:
                raise AirException(
                    _err(ErrorKind.TOOL_ERROR, f"tool {call.name} ended without a result")
                )
            return final
        except AirException as exc:
            return ToolResultEnvelope(
                tool_run_id=new_id("tr"), tool_name=call.name, status="error", error=exc.error
            )

    async def _serve_provider(
        self, run: _Run, call_id: str, input: dict[str, Any]
    ) -> ToolResultEnvelope:
        req = run.request
        model_ref = req.task_spec.constraints.model_id or self.model
        provider_id, _, model_id = model_ref.partition("/")
        if not model_id:
            provider_id, model_id = self.model.partition("/")[0], model_ref
        run_id = new_id("tr")
        try:
            request = ProviderCompletionInput.model_validate(
                {
                    "messages": input.get("messages") or [],
                    "system": input.get("system"),
                    "tools": input.get("tools") or [],
                    # the parent owns the model's limits: models.yaml's max_output_tokens,
                    # unless SupervisionConfig.max_tokens caps it
                    **({"max_tokens": self.config.max_tokens} if self.config.max_tokens else {}),
                    "provider_id": provider_id,
                    "model_id": model_id,
                    "session_id": req.session_id,
                    "task_id": req.task_spec.id,
                    "agent_id": req.agent_id,
                }
            )
        except ValidationError as exc:
            return ToolResultEnvelope(
                tool_run_id=run_id,
                tool_name="provider.complete",
                status="error",
                error=_err(
                    ErrorKind.VALIDATION_ERROR,
                    f"invalid provider.complete input: {exc.errors()[0]['msg']}",
                ),
            )
        try:
            async for ev in self.provider.complete(request):
                if ev.type == "message_stop":
                    return ToolResultEnvelope(
                        tool_run_id=run_id,
                        tool_name="provider.complete",
                        status="ok",
                        output={
                            "content": [
                                b.model_dump(mode="json", exclude_none=True) for b in ev.content
                            ],
                            "stop_reason": ev.stop_reason.value,
                            "usage": ev.usage.model_dump(mode="json"),
                        },
                    )
                if ev.type == "error":
                    return ToolResultEnvelope(
                        tool_run_id=run_id,
                        tool_name="provider.complete",
                        status="error",
                        error=ev.error,
                    )
                await self._send(
                    run,
                    "tool.stream",
                    {"event": ev.model_dump(mode="json")},
                    correlation_id=call_id,
                )
        except AirException as exc:
            return ToolResultEnvelope(
                tool_run_id=run_id, tool_name="provider.complete", status="error", error=exc.error
            )
        return ToolResultEnvelope(
            tool_run_id=run_id,
            tool_name="provider.complete",
            status="error",
            error=_err(
                ErrorKind.PROVIDER_ERROR,
                "the provider stream ended without message_stop",
                transient=True,
            ),
        )

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
                "error": _dump(error.model_copy(update={"metadata": meta})),
            },
            session_id=req.session_id,
            project_id=req.project_id,
            source=EventSource(kind="scheduler", id="worker_manager"),
            route=["scheduler", "worker_manager"],
        )
        await self.events.ingest(event)

    def _cap(self, run: _Run, env: ToolResultEnvelope) -> ToolResultEnvelope:
        out = env.output
        if out is None or isinstance(out, (int, float, bool)):
            return env
        if isinstance(out, str) and len(out) * 4 <= self.config.max_result_bytes:
            if out.count("\n") < self.config.max_result_lines:
                return env
        text = (
            env.output
            if isinstance(env.output, str)
            else json.dumps(env.output, ensure_ascii=False, default=str)
        )
        capped, cut = cap_text(text, self.config.max_result_bytes, self.config.max_result_lines)
        if not cut:
            return env
        ref = self._artifact(run, f"{env.tool_name}-output", text, tool_run_id=env.tool_run_id)
        return env.model_copy(
            update={"output": capped, "truncated": True, "artifacts": [*env.artifacts, ref]}
        )

    # -- ending --------------------------------------------------------------------------------

    async def _reap(self, run: _Run) -> int | None:
        if run.proc is None:
            return None
        await run.proc.close_stdin()
        await run.proc.kill_tree(self.config.kill_grace_s)
        with trio.move_on_after(2):
            return await run.proc.wait()
        return run.proc.process.returncode

    async def _finish(
        self, run: _Run, end: _End, records: RunRecordStore, *, started: bool
    ) -> TaskOutcome:
        req = run.request
        proc = run.proc
        code: int | None = None
        with trio.move_on_after(self.config.kill_grace_s + 10, shield=True):
            if proc is not None:
                if end.kind == "result":
                    with trio.move_on_after(self.config.exit_grace_s):
                        await proc.close_stdin()
                        code = await proc.wait()
                code_after = await self._reap(run)
                code = code if code is not None else code_after
                with trio.move_on_after(0.5):
                    await proc.pump_stderr()
            if end.kind == "hard_timeout":
                code = WorkerExit.HARD_TIMEOUT
            log_ref = self._stderr_artifact(run)
            outcome = self._outcome(run, end, code)
            if (
                outcome.kind == "result"
                and outcome.result
                and outcome.result.status == WorkerStatus.CANCELLED
            ):
                await self._emit(
                    run,
                    "agent.cancelled",
                    {"exit_code": code, "reason": run.cancel_reason or outcome.result.summary},
                )
                state = "cancelled"
            elif end.kind == "cancelled" and outcome.kind != "result":
                await self._emit(
                    run, "agent.cancelled", {"exit_code": code, "reason": run.cancel_reason}
                )
                state = "cancelled"
            elif outcome.kind == "result":
                await self._emit(run, "agent.completed", {"exit_code": code})
                state = "completed"
            elif started:
                if not run.started_recorded:
                    await self._record_started(run, "starting")
                assert outcome.error is not None
                error = outcome.error
                if log_ref is not None:
                    error = error.model_copy(
                        update={
                            "metadata": {
                                **(error.metadata or {}),
                                "stderr_artifact_id": log_ref.artifact_id,
                            }
                        }
                    )
                    outcome = outcome.model_copy(update={"error": error})
                await self._emit(run, "agent.failed", {"exit_code": code, "error": _dump(error)})
                state = "failed"
            else:
                state = "failed"
            records.finish(req.agent_id, state)
        return outcome

    def _outcome(self, run: _Run, end: _End, code: int | None) -> TaskOutcome:
        req = run.request
        base = {"task_id": req.task_spec.id, "agent_id": req.agent_id, "exit_code": code}
        if run.result is not None:
            return TaskOutcome(kind="result", result=run.result, **base)
        if end.kind == "cancelled":
            error = _err(ErrorKind.CANCELLED, f"cancelled: {run.cancel_reason}")
            return TaskOutcome(kind="crashed", error=error, transient=False, **base)
        if end.kind == "result":
            # EOF (or a cancel) without a result: the worker crashed or died.
            tail = (
                bytes(run.proc.stderr_tail[-2000:]).decode("utf-8", "replace") if run.proc else ""
            )
            error = _err(
                ErrorKind.WORKER_CRASHED,
                f"the worker exited with code {code} without a result",
                detail=self._redact(tail) or None,
                transient=True,
            )
            return TaskOutcome(kind="crashed", error=error, transient=True, **base)
        kind = (
            end.kind
            if end.kind in ("protocol_error", "spawn_error", "stalled", "hard_timeout")
            else "crashed"
        )
        error = end.error or _err(ErrorKind.WORKER_CRASHED, end.kind)
        return TaskOutcome(kind=kind, error=error, transient=end.transient, **base)

    def _stderr_artifact(self, run: _Run) -> ArtifactRef | None:
        if run.proc is None:
            return None
        text = bytes(run.proc.stderr_tail).decode("utf-8", "replace")
        if run.logs:
            text = "\n".join(run.logs) + ("\n--- stderr ---\n" + text if text else "")
        if not text.strip():
            return None
        return self._artifact(run, "worker-stderr", text, artifact_type=ArtifactType.LOG)

    def _artifact(
        self,
        run: _Run,
        slug: str,
        text: str,
        *,
        tool_run_id: str | None = None,
        artifact_type: ArtifactType = ArtifactType.OTHER,
    ) -> ArtifactRef:
        req = run.request
        return self.artifacts.create(
            ArtifactCreateInput(
                type=artifact_type,
                slug=slug,
                extension=".txt",
                content=self._redact(text).encode("utf-8"),
            ),
            ArtifactContext(
                session_id=req.session_id,
                task_id=req.task_spec.id,
                agent_id=req.agent_id,
                tool_run_id=tool_run_id,
            ),
        )

    # -- plumbing ------------------------------------------------------------------------------

    async def _control(self, run: _Run, payload: dict[str, Any]) -> None:
        await self._send(run, "control", payload)

    async def _send(
        self, run: _Run, kind: str, payload: dict[str, Any], correlation_id: str | None = None
    ) -> None:
        if run.proc is None:
            return
        env = make_envelope(
            kind,
            payload,
            session_id=run.request.session_id,
            agent_id=run.request.agent_id,
            correlation_id=correlation_id,
        )
        await run.proc.send(env)

    async def _emit(self, run: _Run, type: str, payload: dict[str, Any]) -> None:
        req = run.request
        event = new_event(
            type,
            {"agent_id": req.agent_id, "task_id": req.task_spec.id, **payload},
            session_id=req.session_id,
            project_id=req.project_id,
            source=EventSource(kind="scheduler", id="worker_manager"),
            route=["scheduler", "worker_manager"],
        )
        await self.events.ingest(event)


def _err(
    kind: ErrorKind,
    message: str,
    *,
    detail: str | None = None,
    transient: bool = False,
    user_action: str | None = None,
) -> AirError:
    return make_air_error(
        kind=kind,
        message=message,
        detail=detail,
        retryability=Retryability.TRANSIENT if transient else Retryability.UNKNOWN,
        user_action=user_action or "See the worker's stderr log artifact; a retry may succeed.",
    )


def _worker_error(msg: IpcEnvelope) -> AirError:
    try:
        return AirError.model_validate(msg.payload.get("error"))
    except ValidationError:
        return _err(ErrorKind.PROTOCOL_ERROR, "the worker reported a protocol error")


def _dump(error: AirError) -> dict[str, Any]:
    return error.model_dump(mode="json")


def _is_cancel(exc: BaseException) -> bool:
    if isinstance(exc, trio.Cancelled):
        return True
    if isinstance(exc, BaseExceptionGroup):
        rest = exc.split(trio.Cancelled)[1]
        return rest is None
    return False
