"""The Launcher seam: how a worker is started and reached (issue #11 item 3; IMPL-LAUNCH-1).

Owns: ``LaunchSpec`` (what to start: agent, run marker, cwd, command, extra environment),
``WorkerHandle`` (signal / kill / wait one worker's process group; close its local client's
pipes: ``close_pipes``), ``Launched`` (the worker's byte streams and its handle), the
``Launcher`` protocol, ``LocalHandle`` and ``LocalLauncher``
— today's subprocess path: ``python -P -m air.roles`` in its own session with the allowlisted
environment and the run marker (IMPL-SBX-4), adopting the pre-started spare worker
(``air.ipc.spare``, IMPL-START-2) for the first launch that would start the same command. The
NDJSON channel over the streams is ``air.ipc.process.WorkerProcess``; a memory-stream launcher
for tests is ``air.testing.launcher.FakeLauncher``.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import trio

from air.ipc.environment import worker_environment
from air.ipc.procs import MARKER_ENV, ProcessIdentity, kill_tree, read_identity

if TYPE_CHECKING:
    from air.ipc.spare import PopenProcess, SpareWorker

__all__ = [
    "LaunchSpec",
    "Launched",
    "Launcher",
    "LocalHandle",
    "LocalLauncher",
    "WorkerHandle",
    "close_pipes",
    "worker_command",
]


def worker_command(module: str = "air.roles") -> list[str]:
    """``python -P -m air.roles``: ``-P`` keeps the worker's cwd (a workspace, which workers and
    the commands they run can write) out of ``sys.path``, so a planted ``air/`` package there is
    never imported in place of air's own."""
    return [sys.executable, "-P", "-m", module]


class LaunchSpec(NamedTuple):
    """One worker to start.

    Args:
        command: ``None``: the standard worker (``worker_command()``), which a spare may serve.
        env: variables set on top of the allowlisted environment (a test's switches).
        time_s: seconds until the task's deadline (a batch system's time limit).
        progress: how a launcher that waits (an allocation) reports it (``task.progress``).
        placed: how a launcher that places the worker elsewhere reports where, as soon as it
            knows (a host's name and config, its boot id, pid and start time, a Slurm job id,
            also while queued): the run record keeps it for recovery's sweep.
    """

    agent_id: str
    marker: str
    cwd: str | None = None
    command: Sequence[str] | None = None
    env: dict[str, str] | None = None
    time_s: float | None = None
    progress: Callable[[str], Awaitable[None]] | None = None
    placed: Callable[[dict[str, Any]], None] | None = None


class WorkerHandle(Protocol):
    """The process side of a launched worker: who it is, how to stop it, how it ended."""

    identity: ProcessIdentity

    @property
    def returncode(self) -> int | None: ...

    async def kill_tree(self, grace_s: float) -> bool:
        """SIGTERM the worker's group (and its marked descendants), wait ``grace_s``, SIGKILL."""
        ...

    async def wait(self) -> int: ...

    async def aclose(self) -> None:
        """Close what the parent holds of the ended worker's local client (its pipes), at once
        and without signalling anything: they must not wait for the garbage collector."""
        ...


async def close_pipes(process: trio.Process | PopenProcess) -> None:
    """Close a local process's stdin, stdout and stderr streams (already closed ones too)."""
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            await trio.aclose_forcefully(stream)


class Launched(NamedTuple):
    """A started worker: the parent writes ``send``, reads ``receive`` (NDJSON) and ``stderr``;
    a read-only record, so a NamedTuple (IMPL-BOOT-14)."""

    send: trio.abc.SendStream
    receive: trio.abc.ReceiveStream
    stderr: trio.abc.ReceiveStream | None
    handle: WorkerHandle
    marker: str
    """The run marker the worker carries (an adopted spare keeps its own)."""


class Launcher(Protocol):
    async def launch(self, spec: LaunchSpec) -> Launched:
        """Start one worker; ``OSError`` when it cannot start."""
        ...


class LocalHandle:
    """A local worker process (``trio.Process`` or an adopted spare's ``PopenProcess``)."""

    def __init__(self, process: trio.Process | PopenProcess, marker: str) -> None:
        self.process = process
        self.marker = marker
        self.identity: ProcessIdentity = read_identity(process.pid)

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    async def kill_tree(self, grace_s: float) -> bool:
        return await kill_tree(self.identity, marker=self.marker, grace_s=grace_s)

    async def wait(self) -> int:
        return await self.process.wait()

    async def aclose(self) -> None:
        await close_pipes(self.process)


def local_launched(process: trio.Process | PopenProcess, marker: str) -> Launched:
    """The streams and handle of a local worker process."""
    assert process.stdin is not None
    assert process.stdout is not None
    return Launched(
        send=process.stdin,
        receive=process.stdout,
        stderr=process.stderr,
        handle=LocalHandle(process, marker),
        marker=marker,
    )


class LocalLauncher:
    """Workers as local subprocesses; the spare (if any) serves the first standard launch."""

    def __init__(self, spare: SpareWorker | None = None) -> None:
        self.spare = spare

    def take_spare(self, spec: LaunchSpec) -> SpareWorker | None:
        """The spare, once, if it is alive and ``spec`` starts the standard worker with no extra
        environment (IMPL-START-2); any other launch lets an unused spare go."""
        spare, self.spare = self.spare, None
        if spare is None:
            return None
        if spec.command is None and spec.env is None and spare.alive():
            return spare
        spare.close()
        return None

    async def launch(self, spec: LaunchSpec) -> Launched:
        spare = self.take_spare(spec)
        if spare is not None:
            return local_launched(spare.adopt(), spare.marker)
        env = worker_environment()
        env.update(spec.env or {})
        env[MARKER_ENV] = spec.marker
        env.setdefault("PYTHONUNBUFFERED", "1")
        process = await trio.lowlevel.open_process(
            list(spec.command or worker_command()),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            cwd=spec.cwd,
            env=env,
        )
        return local_launched(process, spec.marker)
