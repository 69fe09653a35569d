"""A finished worker's pipes are closed by the parent at once, on every end path (issue #27):
normal end, cancel, kill at the hard timeout, protocol violation and a failed start.

Real local workers (``LocalLauncher``) behind a launcher that keeps every launch, as the ssh and
srun launchers keep their handles for the session's sweep: without the close, each ended
worker's stdin, stdout and stderr stay open in the parent for as long as the launcher lives.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
import trio

from air.contracts.error import AirException
from air.contracts.runtime import ContextPack
from air.contracts.task import TaskType
from air.ipc.launcher import Launched, LaunchSpec, LocalLauncher
from air.supervision.task_outcome import TaskOutcome
from air.supervision.worker_manager import WorkerManager
from air.testing.workers import command_for
from tests.workers.conftest import Env, result_text, text_turn

FAST = {"kill_grace_s": 0.5, "exit_grace_s": 1.0, "handshake_timeout_s": 20.0}


class KeepingLauncher:
    """A ``LocalLauncher`` that keeps every ``Launched`` (what a remote launcher keeps)."""

    def __init__(self) -> None:
        self.inner = LocalLauncher()
        self.launched: list[Launched] = []

    async def launch(self, spec: LaunchSpec) -> Launched:
        launched = await self.inner.launch(spec)
        self.launched.append(launched)
        return launched


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def keeping(env: Env, turns: list[dict[str, Any]], **config: Any) -> WorkerManager:
    manager = env.manager(turns, **FAST, **config)
    manager.launcher = KeepingLauncher()
    return manager


async def healthy(env: Env) -> tuple[TaskOutcome, KeepingLauncher]:
    manager = keeping(env, [text_turn(result_text("completed", "fine", {"verdict": "approved"}))])
    outcome = await manager.supervise(env.request(type=TaskType.REVIEW))
    assert isinstance(manager.launcher, KeepingLauncher)
    return outcome, manager.launcher


async def cancelled_after_start(env: Env) -> KeepingLauncher:
    """A silent worker whose supervising scope is cancelled once it started."""
    manager = keeping(env, [], command=command_for("stall"), stall_after_s=60.0)
    request = env.request(type=TaskType.REVIEW)
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(manager.supervise, request)
            while not env.events.of_type("agent.started", request.agent_id):  # noqa: ASYNC110
                await trio.sleep(0.05)  # a real worker starting
            scope.cancel()
    assert env.events.types(request.agent_id)[-1] == "agent.cancelled"
    assert isinstance(manager.launcher, KeepingLauncher)
    return manager.launcher


async def test_every_end_path_closes_the_workers_pipes(env: Env) -> None:
    with trio.fail_after(60):
        await healthy(env)  # what the first worker opens for good (the slot pool, ...)
        before = open_fds()
        ended: list[KeepingLauncher] = []
        for _ in range(3):
            outcome, launcher = await healthy(env)
            assert outcome.kind == "result"
            ended.append(launcher)
        garbage = keeping(env, [], command=command_for("garbage"))
        assert (await garbage.supervise(env.request(type=TaskType.REVIEW))).kind == "protocol_error"
        killed = keeping(env, [], command=command_for("ignore_sigterm"))
        request = env.request(type=TaskType.REVIEW, hard_timeout_ms=800)
        assert (await killed.supervise(request)).kind == "hard_timeout"
        unready = keeping(env, [], command=command_for("bad_version"))
        assert (await unready.supervise(env.request(type=TaskType.REVIEW))).kind == "protocol_error"
        ended.append(await cancelled_after_start(env))
        for manager in (garbage, killed, unready):
            assert isinstance(manager.launcher, KeepingLauncher)
            ended.append(manager.launcher)
        after = open_fds()

    launches = [launched for launcher in ended for launched in launcher.launched]
    assert len(launches) == 7
    # without the close each worker's stdout and stderr stay open (stdin was closed): 14 here
    assert after <= before, (before, after)
    for launched in launches:
        process = launched.handle.process  # type: ignore[attr-defined]
        for stream in (process.stdin, process.stdout, process.stderr):
            assert stream.fileno() == -1  # a closed FdStream's descriptor


async def test_a_failed_spawn_closes_the_workers_pipes(env: Env) -> None:
    """``WorkerManager.spawn`` (a worker for a caller) that fails its handshake."""
    manager = keeping(env, [], command=command_for("bad_version"))
    request = env.request(type=TaskType.REVIEW)
    with trio.fail_after(30), pytest.raises(AirException, match="protocol version"):
        await manager.spawn(request, ContextPack())
    assert isinstance(manager.launcher, KeepingLauncher)
    (launched,) = manager.launcher.launched
    process = launched.handle.process  # type: ignore[attr-defined]
    assert [s.fileno() for s in (process.stdin, process.stdout, process.stderr)] == [-1] * 3
