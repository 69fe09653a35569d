"""The machine-wide worker slot pool (IMPL-SLOT-1): real ``flock`` files, real processes.

A slot is an exclusive lock on an open file, so two descriptors in one process contend like two
processes do; a ``kill -9`` of a holder frees its slots with no cleanup; the depth tiers keep
slots for deeper tasks; a wait for a slot is cancellable and says once that the task is queued.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from air.contracts.error import AirException, ErrorKind
from air.supervision.slots import SIZE_ENV, Slot, SlotPool, pool_size, reserved_for

OWNER = {"session_id": "ses_t", "task_id": "t"}


def _take(pool: SlotPool, n: int, depth: int = 0) -> list[Slot]:
    slots = [pool.try_acquire(depth, OWNER) for _ in range(n)]
    assert all(s is not None for s in slots)
    return [s for s in slots if s is not None]


def test_the_pool_caps_holders_and_a_release_frees_one(tmp_path: Path) -> None:
    pool = SlotPool(str(tmp_path / "slots"), 2)
    held = _take(pool, 2)
    assert pool.try_acquire(0, OWNER) is None  # full: another open file holds each lock
    other = SlotPool(str(tmp_path / "slots"), 2)  # a second air process's view of the pool
    assert other.try_acquire(0, OWNER) is None
    held[0].release()
    again = other.try_acquire(0, OWNER)
    assert again is not None
    assert [h.record["pid"] for h in pool.holders()] == [os.getpid(), os.getpid()]
    for slot in (held[1], again):
        slot.release()
    assert pool.holders() == []


def test_depth_tiers_hold_slots_back_for_deeper_tasks(tmp_path: Path) -> None:
    assert [reserved_for(d, 4) for d in (0, 1, 2)] == [1, 0, 0]
    assert [reserved_for(d, 8) for d in (0, 1, 2, 3)] == [2, 1, 0, 0]
    assert [reserved_for(d, 2) for d in (0, 1)] == [0, 0]  # a small pool reserves nothing
    pool = SlotPool(str(tmp_path / "slots"), 4)
    top = _take(pool, 3, depth=0)
    assert pool.try_acquire(0, OWNER) is None  # the last slot is kept for a child task
    child = pool.try_acquire(1, OWNER)
    assert child is not None
    assert sorted(h.depth for h in pool.holders()) == [0, 0, 0, 1]
    for slot in [*top, child]:
        slot.release()


def test_a_record_without_depth_counts_as_depth_zero(tmp_path: Path) -> None:
    """A slot held by a record with no ``depth`` (an older air) still fills the top tier."""
    import fcntl

    pool = SlotPool(str(tmp_path / "slots"), 4)
    os.makedirs(pool.directory)
    fds = []
    for index in range(3):
        fd = os.open(os.path.join(pool.directory, f"slot-{index}"), os.O_RDWR | os.O_CREAT)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, json.dumps({"pid": os.getpid()}).encode())
        fds.append(fd)
    try:
        assert pool.try_acquire(0, OWNER) is None
        child = pool.try_acquire(1, OWNER)
        assert child is not None
        child.release()
    finally:
        for fd in fds:
            os.close(fd)


HOLDER = """
import sys, time
from air.supervision.slots import SlotPool
pool = SlotPool(sys.argv[1], 2)
held = [pool.try_acquire(0, {"task_id": "holder"}) for _ in range(2)]
assert all(held)
print("held", flush=True)
time.sleep(120)
"""


def test_kill_minus_9_of_a_holder_frees_its_slots(tmp_path: Path) -> None:
    directory = str(tmp_path / "slots")
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, directory], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "held"
        pool = SlotPool(directory, 2)
        holders = pool.holders()
        assert [(h.record["pid"], h.alive) for h in holders] == [(proc.pid, True)] * 2
        assert pool.try_acquire(0, OWNER) is None
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        slots = _take(pool, 2)  # the kernel dropped both locks: no cleanup needed
        for slot in slots:
            slot.release()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


async def test_a_wait_is_cancellable_says_queued_once_and_takes_nothing(tmp_path: Path) -> None:
    pool = SlotPool(str(tmp_path / "slots"), 1)
    held = _take(pool, 1)
    told: list[str] = []

    async def queued() -> None:
        told.append("queued for a slot")

    with trio.move_on_after(0.5) as waited:
        await pool.acquire(0, OWNER, on_wait=queued)
    assert waited.cancelled_caught
    assert told == ["queued for a slot"]
    held[0].release()
    async with pool.hold(0, OWNER) as slot:  # the cancelled wait left nothing behind
        assert slot.index == 0
    assert pool.holders() == []


async def test_a_waiter_gets_the_slot_when_it_is_released(tmp_path: Path) -> None:
    pool = SlotPool(str(tmp_path / "slots"), 1)
    held = _take(pool, 1)
    got: list[int] = []

    async def waiter() -> None:
        slot = await pool.acquire(0, OWNER)
        got.append(slot.index)
        slot.release()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        await trio.sleep(0.1)
        assert got == []
        held[0].release()
    assert got == [0]


def test_the_size_comes_from_the_environment_then_the_user_config(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".air").mkdir(parents=True)
    assert pool_size(str(home), {}) == len(os.sched_getaffinity(0))
    (home / ".air" / "config.yaml").write_text("worker_slots: 3\n")
    assert pool_size(str(home), {}) == 3
    assert pool_size(str(home), {SIZE_ENV: "5"}) == 5
    assert SlotPool.for_user(str(home), {}).directory == str(home / ".air" / "locks" / "slots")


@pytest.mark.parametrize(
    ("env", "config"),
    [
        ({SIZE_ENV: "0"}, None),
        ({SIZE_ENV: "many"}, None),
        ({}, "worker_slots: -1\n"),
        ({}, "worker_slots: [1]\n"),
        ({}, "- 2\n"),
        ({}, "worker_slots: true\n"),
    ],
)
def test_a_bad_size_is_a_config_error(
    tmp_path: Path, env: dict[str, str], config: str | None
) -> None:
    (tmp_path / ".air").mkdir()
    if config is not None:
        (tmp_path / ".air" / "config.yaml").write_text(config)
    with pytest.raises(AirException) as caught:
        pool_size(str(tmp_path), env)
    assert caught.value.error.kind == ErrorKind.CONFIG_ERROR
    assert caught.value.error.user_action


def test_no_slot_is_taken_while_another_process_counts(tmp_path: Path) -> None:
    """The pool mutex: while another holder of ``slots.lock`` counts, nothing is taken (a
    count and a take are one step, so two processes cannot both pass the tier rule)."""
    import fcntl

    pool = SlotPool(str(tmp_path / "slots"), 2)
    os.makedirs(pool.directory)
    fd = os.open(os.path.join(pool.directory, "slots.lock"), os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        assert pool.try_acquire(0, OWNER) is None
    finally:
        os.close(fd)
    slot = pool.try_acquire(0, OWNER)
    assert slot is not None
    slot.release()
