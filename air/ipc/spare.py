"""A spare worker: ``python -m air.roles`` started before the parent's own imports (IMPL-START-2).

Owns ``SpareWorker``: ``start`` spawns the worker with the standard library only (no Trio, no
pydantic), as the very first thing ``air run`` does, so that the worker imports its runtime on
the other core while the parent imports and opens its session; ``adopt`` hands the process to the
launcher inside Trio for the first task, in place of a fresh spawn. A spare that is
never adopted is killed by ``close``; if the parent dies first, the spare reads end-of-file on
stdin and exits.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING

from air.ipc.environment import worker_environment

if TYPE_CHECKING:
    import trio

__all__ = ["PopenProcess", "SpareWorker"]

_MARKER_ENV = "AIR_WORKER_RUN"  # air.ipc.procs.MARKER_ENV (that module imports Trio)


class SpareWorker:
    """One pre-started worker process waiting for its ``agent.start``."""

    def __init__(self, popen: subprocess.Popen[bytes], marker: str, cwd: str) -> None:
        self.popen = popen
        self.marker = marker
        self.cwd = cwd
        self.adopted = False
        self._closed = False

    @classmethod
    def start(cls, cwd: str, command: Sequence[str] | None = None) -> SpareWorker | None:
        """Spawn a worker in ``cwd`` with the allowlisted worker environment (the same one
        ``WorkerProcess.spawn`` gives every worker); None if it cannot start."""
        marker = "spare." + os.urandom(8).hex()
        env = {**worker_environment(), _MARKER_ENV: marker}
        env.setdefault("PYTHONUNBUFFERED", "1")
        try:
            popen = subprocess.Popen(
                # air.ipc.process.worker_command() (that module imports Trio)
                list(command or [sys.executable, "-P", "-m", "air.roles"]),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                cwd=cwd,
                env=env,
            )
        except OSError:
            return None  # the run spawns its workers the usual way (and reports any failure)
        return cls(popen, marker, cwd)

    def alive(self) -> bool:
        return self.popen.poll() is None

    def adopt(self) -> PopenProcess:
        """The spare's process, for the launcher to hand to a ``WorkerProcess`` (call inside
        Trio, at most once)."""
        self.adopted = True
        return PopenProcess(self.popen)

    def close(self) -> None:
        """Let an unused spare go at once: it has done nothing but import, so it is killed
        (SIGKILL, then reaped: no wait on its imports inside the caller's event loop)."""
        if self.adopted or self._closed:
            return
        self._closed = True
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.wait()
        for pipe in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            if pipe is not None:
                pipe.close()


class PopenProcess:
    """The part of ``trio.Process`` a WorkerProcess uses, over a ``subprocess.Popen``: its pipes
    as Trio streams and an awaitable ``wait`` (a pidfd on Linux, else a thread)."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self._popen = popen
        self.pid = popen.pid
        self.stdin: trio.abc.SendStream | None = _stream(popen.stdin)
        self.stdout: trio.abc.ReceiveStream | None = _stream(popen.stdout)
        self.stderr: trio.abc.ReceiveStream | None = _stream(popen.stderr)

    @property
    def returncode(self) -> int | None:
        return self._popen.poll()

    async def wait(self) -> int:
        import trio

        code = self._popen.poll()
        if code is not None:
            return code
        try:
            pidfd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):
            return await trio.to_thread.run_sync(self._popen.wait, abandon_on_cancel=True)
        try:
            await trio.lowlevel.wait_readable(pidfd)
        finally:
            os.close(pidfd)
        return self._popen.wait()


def _stream(pipe: IO[bytes] | None) -> trio.lowlevel.FdStream | None:
    """A Trio stream owning a dup of ``pipe``'s descriptor (the file object is closed)."""
    import trio

    if pipe is None:
        return None
    stream = trio.lowlevel.FdStream(os.dup(pipe.fileno()))
    pipe.close()
    return stream
