"""A task's whole-task deadline in supervision (IMPL-DEADLINE-1, runner-contract invariants
14-15): the real WorkerManager over fake workers in virtual time, with a real slot pool. The
deadline ends the wait for a machine-wide slot (phase ``queued``), the handshake (``starting``)
and the running worker (``running``); a waiting task says once that it is queued for a slot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio
import trio.testing

from air.contracts.error import ErrorKind
from air.supervision.seams import SuperviseRequest
from air.supervision.slots import SlotPool
from air.supervision.worker_manager import QUEUED_MESSAGE
from air.testing.launcher import scripted
from tests.supervision.conftest import Rig, bounded_nursery

RESULT = {"status": "completed", "summary": "ok", "result": {"verdict": "approved", "findings": []}}


def _with_deadline(request: SuperviseRequest, in_s: float) -> SuperviseRequest:
    return request.model_copy(update={"deadline_at": trio.current_time() + in_s, "timeout_s": in_s})


def _progress(rig: Rig) -> list[str]:
    return [
        str(e.payload.get("message"))
        for durable, e in rig.events.events
        if not durable and e.type == "task.progress"
    ]


async def test_the_deadline_ends_a_wait_for_a_slot_as_queued(
    rig: Rig, tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    pool = SlotPool(str(tmp_path / "slots"), 1)
    held = pool.try_acquire(0, {"task_id": "someone else"})
    assert held is not None
    async with bounded_nursery() as nursery:
        manager, launcher = rig.manager(nursery, scripted([{"result": RESULT}]))
        manager.slots = pool
        t0 = trio.current_time()
        outcome = await manager.supervise(_with_deadline(rig.request(), 10))
        ended = trio.current_time()
    held.release()
    assert ended == t0 + 10
    assert outcome.kind == "hard_timeout"
    assert outcome.timeout_phase == "queued"
    assert outcome.error is not None
    assert outcome.error.kind == ErrorKind.TIMEOUT
    assert (outcome.error.metadata or {})["timeout_phase"] == "queued"
    assert launcher.launches == []  # no worker was started
    assert rig.events.types() == []  # nothing durable about an agent that never existed
    assert _progress(rig) == [QUEUED_MESSAGE]


async def test_a_worker_holds_its_slot_until_it_is_reaped(
    rig: Rig, tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    pool = SlotPool(str(tmp_path / "slots"), 1)
    held = pool.try_acquire(0, {"task_id": "someone else"})
    assert held is not None
    seen: list[Any] = []

    async def worker_body(io: Any) -> int:
        seen.append([h.record.get("task_id") for h in pool.holders()])
        return await scripted([{"result": RESULT}])(io)

    async with bounded_nursery() as nursery:
        manager, _ = rig.manager(nursery, worker_body)
        manager.slots = pool
        request = _with_deadline(rig.request(), 100)

        async def release_later() -> None:
            await trio.sleep(5)
            held.release()

        nursery.start_soon(release_later)
        outcome = await manager.supervise(request)
    assert outcome.kind == "result"
    assert seen == [[request.task_spec.id]]  # the worker ran holding the only slot
    assert pool.holders() == []  # and gave it back
    queued, got = _progress(rig)
    assert queued == QUEUED_MESSAGE
    assert got.startswith("got a worker slot after 5.")  # polled with backoff: within 0.2 s


async def test_the_deadline_ends_a_handshake_as_starting(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    async with bounded_nursery() as nursery:
        manager, launcher = rig.manager(nursery, scripted([], ready=False), handshake_timeout_s=15)
        t0 = trio.current_time()
        outcome = await manager.supervise(_with_deadline(rig.request(), 4))
    assert launcher.launches[0][1].signals[0] == (t0 + 4, "SIGTERM")  # not at the 15 s
    assert outcome.kind == "hard_timeout"
    assert outcome.timeout_phase == "starting"
    assert outcome.exit_code == 5


async def test_the_deadline_ends_a_running_worker_before_its_own_hard_timeout(
    rig: Rig, autojump_clock: trio.testing.MockClock
) -> None:
    async with bounded_nursery() as nursery:
        manager, launcher = rig.manager(nursery, scripted([{"hang": True}]), stall_after_s=0)
        t0 = trio.current_time()
        request = _with_deadline(rig.request(hard_timeout_ms=600_000), 30)
        outcome = await manager.supervise(request)
    handle = launcher.launches[0][1]
    assert handle.signals[0] == (t0 + 30, "SIGTERM")  # the task's deadline, not 600 s
    assert outcome.kind == "hard_timeout"
    assert outcome.timeout_phase == "running"
    assert outcome.exit_code == 5


async def test_a_cancel_right_after_the_slot_is_taken_gives_it_back(
    rig: Rig, tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """The "got a worker slot" notice is the one await between taking the slot and running:
    a cancel there releases the slot (it would otherwise stay held until air exits)."""
    from air.testing.workers.harness import RecordingEvents

    class SlowNotices(RecordingEvents):
        async def ingest_ephemeral(self, event: Any) -> None:
            await super().ingest_ephemeral(event)
            if str(event.payload.get("message", "")).startswith("got a worker slot"):
                await trio.sleep_forever()

    rig.events = SlowNotices()
    pool = SlotPool(str(tmp_path / "slots"), 1)
    held = pool.try_acquire(0, {"task_id": "someone else"})
    assert held is not None
    async with bounded_nursery() as nursery:
        manager, launcher = rig.manager(nursery, scripted([{"result": RESULT}]))
        manager.slots = pool

        async def release_later() -> None:
            await trio.sleep(5)
            held.release()

        nursery.start_soon(release_later)
        with trio.move_on_after(20) as cancelled:
            await manager.supervise(_with_deadline(rig.request(), 100))
    assert cancelled.cancelled_caught
    assert launcher.launches == []
    assert pool.holders() == []
