"""Soft timeout, extension, hard timeout, stall probe and handshake deadline, each a deadline
of the real WorkerManager, checked in virtual time (MockClock autojump) against fake workers:
the times asserted are virtual seconds, exact, and each test takes milliseconds of real time."""

from __future__ import annotations

import errno
from typing import Any

import pytest
import trio
import trio.testing

from air.contracts.error import ErrorKind, machine_failure
from air.contracts.task import TaskType
from air.contracts.worker_result import WorkerStatus
from air.supervision.seams import SuperviseRequest
from air.supervision.task_outcome import TaskOutcome
from air.supervision.worker_manager import WorkerManager
from air.testing.launcher import FakeIO, scripted
from tests.supervision.conftest import Rig, bounded_nursery

PARTIAL = {
    "status": "partial",
    "summary": "wrapped up",
    "stop_reason": "soft_timeout",
    "result": {"verdict": "approved", "findings": []},
}


def _controls(io: FakeIO, kind: str) -> list[float]:
    return [t for t, c in io.controls if c.get("type") == kind]


def _started(io: FakeIO) -> float:
    """The virtual time of ``agent.start``: the handshake and the deadlines count from it."""
    return _controls(io, "agent.start")[0]


async def _supervise(manager: WorkerManager, request: SuperviseRequest) -> TaskOutcome:
    outcome = await manager.supervise(request)
    await trio.lowlevel.checkpoint()
    return outcome


async def test_soft_timeout_asks_for_a_wrap_up_at_its_deadline(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    worker = scripted([{"until": "agent.wrap_up"}, {"result": PARTIAL}])
    async with bounded_nursery() as nursery:
        manager, launcher = rig.manager(nursery, worker)
        outcome = await _supervise(manager, rig.request(soft_timeout_ms=10_000))
    io = launcher.launches[0][2]
    t0 = _started(io)
    assert _controls(io, "agent.wrap_up") == [t0 + 10]
    assert outcome.kind == "result"
    assert outcome.result is not None
    assert outcome.result.status == WorkerStatus.PARTIAL
    assert outcome.exit_code == 0
    assert launcher.launches[0][1].signals == []  # it exited on its own after its result
    assert rig.types()[-1] == "agent.completed"


async def test_extend_timeout_moves_the_soft_and_hard_deadlines(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    """Extended by 20 s at t0+5: the wrap-up comes at t0+30, not t0+10; the worker ignores it
    and the hard deadline (60 s) is met at t0+80, where the group is killed (exit 5)."""
    worker = scripted([{"until": "agent.wrap_up"}, {"silent": True}])
    box: list[TaskOutcome] = []
    async with bounded_nursery() as nursery:
        manager, launcher = rig.manager(nursery, worker, stall_after_s=0)
        request = rig.request(soft_timeout_ms=10_000, hard_timeout_ms=60_000)

        async def run() -> None:
            box.append(await _supervise(manager, request))

        nursery.start_soon(run)
        await trio.sleep(5)
        await manager.extend_timeout(request.agent_id, 20_000, "needs longer")
    io, handle = launcher.launches[0][2], launcher.launches[0][1]
    t0 = _started(io)
    assert _controls(io, "agent.extend_timeout") == [t0 + 5]
    assert _controls(io, "agent.wrap_up") == [t0 + 30]
    assert [t for t, _ in handle.signals] == [t0 + 80]
    assert box[0].kind == "hard_timeout"
    assert box[0].exit_code == 5


async def test_a_wrap_up_is_asked_again_after_an_extension_past_it(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    worker = scripted([{"until": "agent.wrap_up"}, {"until": "agent.wrap_up"}, {"result": PARTIAL}])
    async with bounded_nursery() as nursery:
        manager, launcher = rig.manager(nursery, worker, stall_after_s=0)
        request = rig.request(soft_timeout_ms=10_000)

        async def run() -> None:
            await _supervise(manager, request)

        nursery.start_soon(run)
        await trio.sleep(12)
        await manager.extend_timeout(request.agent_id, 8_000, "one more turn")
    io = launcher.launches[0][2]
    t0 = _started(io)
    assert _controls(io, "agent.wrap_up") == [t0 + 10, t0 + 18]


async def test_hard_timeout_kills_the_group_and_reports_exit_5(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    """A hung worker that ignores SIGTERM: SIGTERM at the hard deadline, SIGKILL after the
    grace; the outcome reports exit code 5 whatever the signal left."""
    worker = scripted([{"hang": True}])
    async with bounded_nursery() as nursery:
        manager, launcher = rig.manager(
            nursery, worker, ignore_sigterm=True, stall_after_s=0, kill_grace_s=3
        )
        outcome = await _supervise(manager, rig.request(hard_timeout_ms=30_000))
        ended = trio.current_time()
    io, handle = launcher.launches[0][2], launcher.launches[0][1]
    t0 = _started(io)
    assert handle.signals == [(t0 + 30, "SIGTERM"), (t0 + 33, "SIGKILL")]
    assert ended == t0 + 33
    assert handle.code == -9
    assert outcome.kind == "hard_timeout"
    assert outcome.exit_code == 5
    assert outcome.transient is False
    assert outcome.error is not None
    assert outcome.error.kind == ErrorKind.TIMEOUT
    failed = rig.event("agent.failed")
    assert failed["exit_code"] == 5
    assert failed["error"]["kind"] == "timeout"


async def test_a_silent_worker_is_probed_then_killed_as_stalled(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    worker = scripted([{"until": "never"}], answer_probes=False)
    async with bounded_nursery() as nursery:
        manager, launcher = rig.manager(nursery, worker, stall_after_s=10, stall_kill_after_s=5)
        outcome = await _supervise(manager, rig.request())
    io, handle = launcher.launches[0][2], launcher.launches[0][1]
    t0 = _started(io)
    assert _controls(io, "agent.get_state") == [t0 + 10]
    assert [(t, s) for t, s in handle.signals] == [(t0 + 15, "SIGTERM")]
    assert outcome.kind == "stalled"
    assert outcome.transient is True
    assert outcome.error is not None
    assert outcome.error.kind == ErrorKind.WORKER_STALLED


async def test_an_answered_probe_keeps_the_worker_alive(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    """Probes at every 10 s of silence, each answered by a heartbeat: no kill; the soft
    deadline at 95 s ends the run with the worker's partial result."""
    worker = scripted([{"until": "agent.wrap_up"}, {"result": PARTIAL}], answer_probes=True)
    async with bounded_nursery() as nursery:
        manager, launcher = rig.manager(nursery, worker, stall_after_s=10, stall_kill_after_s=5)
        outcome = await _supervise(manager, rig.request(soft_timeout_ms=95_000))
    io = launcher.launches[0][2]
    t0 = _started(io)
    assert _controls(io, "agent.get_state") == [t0 + 10 * k for k in range(1, 10)]
    assert outcome.kind == "result"
    assert launcher.launches[0][1].signals == []


async def test_the_handshake_deadline_ends_a_mute_worker_as_spawn_error(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    worker = scripted([], ready=False)
    async with bounded_nursery() as nursery:
        manager, launcher = rig.manager(nursery, worker, handshake_timeout_s=15)
        outcome = await _supervise(manager, rig.request())
    io, handle = launcher.launches[0][2], launcher.launches[0][1]
    t0 = _started(io)
    assert [t for t, _ in handle.signals] == [t0 + 15]
    assert outcome.kind == "spawn_error"
    assert outcome.transient is True
    assert outcome.error is not None
    assert outcome.error.kind == ErrorKind.WORKER_CRASHED
    assert "worker.ready" in outcome.error.message


async def test_a_wrong_protocol_version_is_a_protocol_error(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    worker = scripted([], protocol_version=2)
    async with bounded_nursery() as nursery:
        manager, _ = rig.manager(nursery, worker)
        outcome = await _supervise(manager, rig.request())
    assert outcome.kind == "protocol_error"
    assert outcome.error is not None
    assert "protocol version mismatch" in outcome.error.message


async def test_a_launch_that_fails_is_a_transient_spawn_error(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    async with bounded_nursery() as nursery:
        manager, launcher = rig.manager(nursery, scripted([]))
        launcher.fail = OSError("no such interpreter")
        outcome = await _supervise(manager, rig.request())
    assert outcome.kind == "spawn_error"
    assert outcome.transient is True
    assert launcher.launches == []


async def test_a_launch_without_a_file_descriptor_left_stops_the_run(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    """EMFILE at a worker's launch is the machine's limit, not the task's: it was a transient
    spawn_error (retried, a debug task made, each failing the same way, the run ending
    "failed" without naming the limit); it now leaves the supervision as it came, for the
    runtime's edge to end the run naming ``ulimit -n`` (tests/cli/test_machine_limits.py)."""
    async with bounded_nursery() as nursery:
        manager, launcher = rig.manager(nursery, scripted([]))
        launcher.fail = OSError(errno.EMFILE, "Too many open files")
        with pytest.raises(OSError, match="Too many open files") as raised:
            await _supervise(manager, rig.request())
    assert machine_failure(raised.value) is not None
    assert launcher.launches == []


async def test_a_cancelled_worker_gets_the_exit_grace_then_is_killed(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    """agent.cancel at t0+5; the worker ignores it; its grace scope ends the run at t0+5+4."""
    worker = scripted([{"silent": True}])
    box: list[TaskOutcome] = []
    async with bounded_nursery() as nursery:
        manager, launcher = rig.manager(nursery, worker, exit_grace_s=4, stall_after_s=0)
        request = rig.request()

        async def run() -> None:
            box.append(await _supervise(manager, request))

        nursery.start_soon(run)
        await trio.sleep(5)
        await manager.cancel(request.agent_id, "the user asked")
    io, handle = launcher.launches[0][2], launcher.launches[0][1]
    t0 = _started(io)
    assert _controls(io, "agent.cancel") == [t0 + 5]
    assert [t for t, _ in handle.signals] == [t0 + 9]
    assert box[0].kind == "crashed"
    assert box[0].error is not None
    assert box[0].error.kind == ErrorKind.CANCELLED
    assert rig.event("agent.cancelled")["reason"] == "the user asked"


async def test_cancelling_the_supervising_scope_kills_the_worker_and_propagates(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    worker = scripted([{"silent": True}])
    async with bounded_nursery() as nursery:
        manager, launcher = rig.manager(nursery, worker, stall_after_s=0)
        with trio.move_on_after(7) as scope:
            await manager.supervise(rig.request())
    assert scope.cancelled_caught
    io, handle = launcher.launches[0][2], launcher.launches[0][1]
    assert [t for t, _ in handle.signals] == [_started(io) + 7]
    assert handle.code == -15
    assert rig.event("agent.cancelled")["reason"] == "the supervising scope was cancelled"


async def test_tool_calls_are_served_and_answered_in_order(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    steps: list[dict[str, Any]] = [{"call": "echo", "input": {"i": i}} for i in range(20)]
    worker = scripted([*steps, {"result": {**PARTIAL, "status": "completed"}}])
    async with bounded_nursery() as nursery:
        manager, _ = rig.manager(nursery, worker)
        outcome = await _supervise(manager, rig.request(type=TaskType.REVIEW))
    assert outcome.kind == "result"
    assert outcome.result is not None
    assert outcome.result.status == WorkerStatus.COMPLETED


async def test_the_fake_is_not_a_launch_the_parent_trusts_blindly(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    """The parent's own guards run on fake workers too: a result naming another task."""
    worker = scripted([{"result": {**PARTIAL, "task_id": "task_other"}}])
    async with bounded_nursery() as nursery:
        manager, _ = rig.manager(nursery, worker)
        outcome = await _supervise(manager, rig.request())
    assert outcome.kind == "protocol_error"
    assert outcome.error is not None
    assert "names another task" in outcome.error.message
