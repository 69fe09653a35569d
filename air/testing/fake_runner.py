"""FakeTaskRunner: a ``seams.TaskRunner`` that plays scripted workers over memory streams.

Owns: ``FakeStep`` (what one attempt of a task does: how long, how it ends), ``FakeTaskRunner``
and ``RunLog`` (what the fake saw: starts, ends, concurrency). A fake worker is a Trio task
that writes heartbeat / result messages into a bounded memory channel; the supervising side
reads them, enforces the task's soft timeout (asks a polite worker to wrap up) and hard
timeout (ends the attempt as ``hard_timeout``, exit code 5), and on cancellation stops the
worker and re-raises ``trio.Cancelled`` — the same contract as the real WorkerManager. Use it
under ``trio.testing.MockClock(autojump_threshold=0)`` for exact virtual times.
``load_fake_script`` reads a YAML script of such steps for tests that run the real ``air``
process with fake workers (``air.cli.main(argv, runner_factory=...)``, tests/cli/fake_air.py).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import trio

from air.contracts.error import AirException, ErrorKind, Retryability, make_air_error
from air.contracts.event import EventSource, RuntimeEvent, new_event
from air.contracts.task import AGENT_TYPE_FOR_TASK
from air.contracts.worker_result import ROLE_RESULT_MODELS, WorkerResult, WorkerStatus
from air.events.fold import FoldCursor
from air.events.fold_state import SessionState
from air.events.payloads import PAYLOADS, payload_model
from air.supervision.deadline import deadline_error
from air.supervision.seams import SuperviseRequest
from air.supervision.task_outcome import TaskOutcome

__all__ = [
    "FakeEnding",
    "FakeStep",
    "FakeTaskRunner",
    "MemoryLedger",
    "RunLog",
    "RunRecord",
    "load_fake_script",
]

FakeEnding = Literal[
    "completed",
    "failed",
    "blocked",
    "partial",
    "crashed",
    "stalled",
    "spawn_error",
    "hang",
    "verification_failed",
]


@dataclass(frozen=True)
class FakeStep:
    """One scripted attempt: run ``duration`` seconds (virtual), then end with ``ending``.

    ``hang`` never ends by itself (only the hard timeout or a cancel ends it). A ``polite``
    worker asked to wrap up at the soft timeout ends ``partial`` right away.
    """

    duration: float = 1.0
    ending: FakeEnding = "completed"
    polite: bool = True
    changed_files: tuple[str, ...] = ()
    writes: tuple[tuple[str, str], ...] = ()
    """Files (relative path, text) the worker writes into its workspace before it ends."""
    cancel_delay: float = 0.0
    """Seconds a cancelled worker takes to wrap up (a slow cooperative stop)."""
    result: Mapping[str, Any] | None = None
    """The role payload of a completed result (e.g. a reviewer's verdict); checked against the
    task's output contract as the real worker checks it (a mismatch raises at once)."""
    summary: str | None = None
    """The result's summary (default: ``fake <ending> after <duration>s``)."""


@dataclass
class RunRecord:
    task_id: str
    agent_id: str
    attempt_index: int
    started_at: float
    ended_at: float | None = None
    kind: str | None = None
    cancelled: bool = False
    workspace_path: str = ""
    session_id: str = ""
    notes: list[str] = field(default_factory=list)
    """Corrections ``steer`` sent to this run while it ran (mid-run steering)."""


@dataclass
class RunLog:
    """Everything the fake observed, in start order."""

    records: list[RunRecord] = field(default_factory=list)
    max_concurrency: int = 0
    _active: int = 0

    def running_at(self, t: float) -> list[RunRecord]:
        return [
            r for r in self.records if r.started_at <= t and (r.ended_at is None or r.ended_at > t)
        ]


Heartbeat = Callable[[str, str, Mapping[str, Any]], Awaitable[None]]


class FakeTaskRunner:
    """A TaskRunner whose workers are scripted Trio tasks talking over memory channels.

    Args:
        script: per task id, the steps of its attempts 1, 2, ... (the last step repeats);
            tasks not in the script complete after ``default.duration``.
        default: the step of unscripted tasks.
        heartbeat_interval: virtual seconds between a worker's heartbeats.
        on_heartbeat: optional ``await on_heartbeat(agent_id, task_id, info)`` per heartbeat.
        on_start: optional sync hook called with the request when a worker starts (tests use
            it to check invariants at the moment of start).
    """

    def __init__(
        self,
        script: Mapping[str, Sequence[FakeStep]] | None = None,
        *,
        default: FakeStep | None = None,
        heartbeat_interval: float = 5.0,
        on_heartbeat: Heartbeat | None = None,
        on_start: Callable[[SuperviseRequest], None] | None = None,
    ) -> None:
        self.script = {k: list(v) for k, v in (script or {}).items()}
        self.default = default or FakeStep()
        self.heartbeat_interval = heartbeat_interval
        self.on_heartbeat = on_heartbeat
        self.on_start = on_start
        self.log = RunLog()

    def step_for(self, task_id: str, attempt_index: int) -> FakeStep:
        steps = self.script.get(task_id)
        if not steps:
            return self.default
        return steps[max(0, min(attempt_index - 1, len(steps) - 1))]

    async def steer(self, session_id: str, note_id: str, text: str) -> list[RunRecord]:
        """``WorkerManager.steer``: the correction reaches each running attempt of the session
        (kept in its record's ``notes``); the records it reached."""
        await trio.lowlevel.checkpoint()
        reached = [r for r in self.log.records if r.ended_at is None and r.session_id == session_id]
        for record in reached:
            record.notes.append(text)
        return reached

    async def supervise(self, request: SuperviseRequest) -> TaskOutcome:
        spec = request.task_spec
        step = self.step_for(spec.id, request.attempt_index)
        record = RunRecord(
            task_id=spec.id,
            agent_id=request.agent_id,
            attempt_index=request.attempt_index,
            started_at=trio.current_time(),
            workspace_path=request.workspace.path,
            session_id=request.session_id,
        )
        self.log.records.append(record)
        self.log._active += 1
        self.log.max_concurrency = max(self.log.max_concurrency, self.log._active)
        if self.on_start is not None:
            self.on_start(request)
        try:
            outcome = await self._run(request, step)
        except* trio.Cancelled:
            record.cancelled = True
            record.kind = "cancelled"
            if step.cancel_delay > 0:
                with trio.move_on_after(step.cancel_delay, shield=True):
                    # why shielded: models a worker that takes this long to wrap up
                    await trio.sleep(step.cancel_delay)
            raise
        finally:
            record.ended_at = trio.current_time()
            self.log._active -= 1
        record.kind = outcome.kind if outcome.result is None else outcome.result.status.value
        return outcome

    async def _run(self, request: SuperviseRequest, step: FakeStep) -> TaskOutcome:
        spec = request.task_spec
        if step.ending == "spawn_error":
            return self._failure(request, "spawn_error", ErrorKind.WORKER_CRASHED, True, None)
        to_parent_send, to_parent = trio.open_memory_channel[dict[str, Any]](16)
        to_worker, from_parent = trio.open_memory_channel[dict[str, Any]](4)
        soft = spec.constraints.soft_timeout_ms / 1000
        hard = spec.constraints.hard_timeout_ms / 1000
        result: dict[str, Any] | None = None
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._worker, request, step, to_parent_send, from_parent)
            hard_at = trio.current_time() + hard
            by_deadline = request.deadline_at is not None and request.deadline_at <= hard_at
            if by_deadline:  # the task's whole deadline comes first, as for the real runner
                assert request.deadline_at is not None
                hard_at = request.deadline_at
            with trio.move_on_at(hard_at) as hard_scope:
                soft_deadline = trio.current_time() + soft
                wrapped = False
                async with to_parent:
                    while True:
                        timeout = (
                            soft_deadline - trio.current_time() if not wrapped else float("inf")
                        )
                        message: dict[str, Any] | None = None
                        with trio.move_on_after(max(0.0, timeout)) as soft_scope:
                            try:
                                message = await to_parent.receive()
                            except trio.EndOfChannel:
                                message = {"kind": "eof"}
                        if soft_scope.cancelled_caught:
                            wrapped = True
                            await to_worker.send({"kind": "control", "type": "agent.cancel"})
                            continue
                        if message is None or message["kind"] == "eof":
                            break
                        if message["kind"] == "heartbeat" and self.on_heartbeat is not None:
                            await self.on_heartbeat(request.agent_id, spec.id, message)
                        elif message["kind"] == "result":
                            result = message
                            break
            nursery.cancel_scope.cancel(reason="fake worker ended")
        if hard_scope.cancelled_caught and by_deadline:
            return TaskOutcome(
                task_id=spec.id,
                agent_id=request.agent_id,
                kind="hard_timeout",
                error=deadline_error("running", request.timeout_s or hard),
                exit_code=5,
                timeout_phase="running",
            )
        if hard_scope.cancelled_caught:
            return self._failure(
                request, "hard_timeout", ErrorKind.TIMEOUT, False, 5, "hard timeout: worker killed"
            )
        if result is None:
            if step.ending == "stalled":
                return self._failure(request, "stalled", ErrorKind.WORKER_STALLED, True, None)
            return self._failure(request, "crashed", ErrorKind.WORKER_CRASHED, False, 1)
        if step.writes and result["status"] == "completed":
            await trio.to_thread.run_sync(_write_files, request.workspace.path, step.writes)
        return self._result(request, step, str(result["status"]))

    async def _worker(
        self,
        request: SuperviseRequest,
        step: FakeStep,
        out: trio.MemorySendChannel[dict[str, Any]],
        controls: trio.MemoryReceiveChannel[dict[str, Any]],
    ) -> None:
        try:
            await self._play(step, out, controls)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return  # the supervising side stopped listening (timeout, result already taken)

    async def _play(
        self,
        step: FakeStep,
        out: trio.MemorySendChannel[dict[str, Any]],
        controls: trio.MemoryReceiveChannel[dict[str, Any]],
    ) -> None:
        async with out:
            end = trio.current_time() + step.duration
            turn = 0
            while step.ending == "hang" or trio.current_time() < end:
                wait = self.heartbeat_interval
                if step.ending != "hang":
                    wait = min(wait, end - trio.current_time())
                with trio.move_on_after(wait):
                    await controls.receive()
                    if step.polite:
                        await out.send({"kind": "result", "status": "partial"})
                        return
                turn += 1
                if trio.current_time() < end or step.ending == "hang":
                    await out.send({"kind": "heartbeat", "state": "working", "turn": turn})
            if step.ending in ("crashed", "stalled"):
                await out.send({"kind": "eof"})
                return
            await out.send({"kind": "result", "status": step.ending})

    def _failure(
        self,
        request: SuperviseRequest,
        kind: Literal["spawn_error", "crashed", "stalled", "hard_timeout"],
        error_kind: ErrorKind,
        transient: bool,
        exit_code: int | None,
        message: str | None = None,
    ) -> TaskOutcome:
        error = make_air_error(
            kind=error_kind,
            message=message or f"fake worker {kind}",
            retryability=Retryability.TRANSIENT if transient else Retryability.UNKNOWN,
        )
        return TaskOutcome(
            task_id=request.task_spec.id,
            agent_id=request.agent_id,
            kind=kind,
            error=error,
            exit_code=exit_code,
            transient=transient,
        )

    def _result(self, request: SuperviseRequest, step: FakeStep, status: str) -> TaskOutcome:
        spec = request.task_spec
        error = None
        worker_status = WorkerStatus.COMPLETED
        if status == "verification_failed":
            worker_status = WorkerStatus.FAILED
            error = make_air_error(kind=ErrorKind.VERIFICATION_FAILED, message="tests failed")
        elif status != "completed":
            worker_status = WorkerStatus(status)
            if worker_status != WorkerStatus.BLOCKED:
                said = f": {step.summary}" if step.summary else ""
                error = make_air_error(kind=ErrorKind.TASK_FAILED, message=f"worker {status}{said}")
        payload = None
        if step.result is not None:
            contract = ROLE_RESULT_MODELS[spec.output_contract]
            payload = contract.model_validate(dict(step.result)).model_dump(mode="json")
        result = WorkerResult(
            task_id=spec.id,
            agent_id=request.agent_id,
            agent_type=AGENT_TYPE_FOR_TASK[spec.type],
            status=worker_status,
            summary=step.summary or f"fake {status} after {step.duration:g}s",
            result=payload,
            changed_files=list(step.changed_files) or [path for path, _ in step.writes],
            error=error,
        )
        return TaskOutcome(
            task_id=spec.id,
            agent_id=request.agent_id,
            kind="result",
            result=result,
            exit_code=0,
        )


_SCRIPT_STEP_FIELDS = frozenset({"duration", "ending", "polite", "cancel_delay"})
"""What a YAML script may set: no ``writes`` (they would bypass the PermissionEngine) and no
``changed_files`` (a claim of changes nothing made)."""


def load_fake_script(path: str, *, heartbeat_interval: float = 1.0) -> FakeTaskRunner:
    """A FakeTaskRunner from a YAML script: ``default: {duration, ending, ...}`` and, per task
    id, a list of steps (attempt 1, 2, ...). Its workers write nothing.

    Raises:
        AirException: ``validation_error`` naming the file and the reason.
    """
    import yaml

    from air.yamlload import load

    def step(raw: Any, where: str) -> FakeStep:
        if not isinstance(raw, dict) or not set(raw) <= _SCRIPT_STEP_FIELDS:
            raise ValueError(f"{where}: a step is a mapping of {sorted(_SCRIPT_STEP_FIELDS)}")
        return FakeStep(**raw)

    try:
        with open(path, encoding="utf-8") as handle:
            data = load(handle.read(), name=handle.name) or {}
        if not isinstance(data, dict):
            raise ValueError("a fake script is a mapping")
        default = step(data.pop("default", {"duration": 0.05}), "default")
        script: dict[str, list[FakeStep]] = {}
        for key, steps in data.items():
            if not isinstance(steps, list):
                raise ValueError(f"{key}: a list of steps")
            script[str(key)] = [step(s, str(key)) for s in steps]
    except (OSError, yaml.YAMLError, TypeError, ValueError) as exc:
        raise AirException.of(
            kind=ErrorKind.VALIDATION_ERROR,
            message=f"{path}: bad fake script: {exc}",
            user_action="A fake script maps task ids to lists of {duration, ending} steps.",
        ) from exc
    return FakeTaskRunner(script, default=default, heartbeat_interval=heartbeat_interval)


def _write_files(root: str, writes: Sequence[tuple[str, str]]) -> None:
    for rel, text in writes:
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)


class MemoryLedger:
    """A ``Ledger`` kept in memory that validates every payload against the event registry.

    For quick scheduler experiments and the AgentMonitor's unit tests; the real ledger is
    ``air.nursery.ledger.SessionLedger`` over the session's SQLite event store.
    """

    def __init__(self, session_id: str = "ses_memory", project_id: str = "prj_memory") -> None:
        self.session_id = session_id
        self.project_id = project_id
        self.events: list[RuntimeEvent] = []
        self._fold = FoldCursor()

    async def record(self, type: str, payload: dict[str, Any]) -> RuntimeEvent:
        model = payload_model(type)
        if model is None:
            raise AirException.of(
                kind=ErrorKind.SYSTEM_ERROR,
                message=f"unknown event type {type}",
                user_action="This is a bug in air; report it.",
            )
        body = model.model_validate(payload).model_dump(mode="json")
        event = new_event(
            type,
            body,
            session_id=self.session_id,
            source=EventSource(kind="scheduler"),
            project_id=self.project_id,
        )
        self.events.append(event)
        self._fold.feed(event)
        await trio.lowlevel.checkpoint()
        return event

    def history(self) -> list[RuntimeEvent]:
        return list(self.events)

    def history_of(self, *types: str, task_id: str | None = None) -> list[RuntimeEvent]:
        return [e for e in self.events if e.type in types and task_id in (None, _task_of(e))]

    def state(self) -> SessionState:
        return self._fold.state

    def knows(self, event_type: str) -> bool:
        return (event_type, 1) in PAYLOADS


def _task_of(event: RuntimeEvent) -> str | None:
    """The task an event is about, as the ``events`` row's ``task_id`` column has it."""
    payload = event.payload
    spec = payload.get("task_spec")
    found = payload.get("task_id") or (spec.get("id") if isinstance(spec, dict) else None)
    return None if found is None else str(found)
