"""WorkerProcess: one worker subprocess and its NDJSON pipe, parent side (SDD §8.1).

Owns: spawning ``python -m air.roles`` (``sys.executable``, ``start_new_session=True``, a run
marker in the environment, an environment built from ``WORKER_ENV_ALLOWLIST``: a worker never
holds a credential, the parent serves its model calls; IMPL-SBX-4), sending envelopes,
receiving decoded envelopes (protocol violations come back as values), capturing stderr
(bounded tail), and ``kill_tree``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import deque
from collections.abc import Mapping, Sequence

import trio

from air.contracts.ipc import IpcEnvelope
from air.ipc.framing import (
    DEFAULT_MAX_LINE_BYTES,
    RECEIVE_BYTES,
    LineDecoder,
    ProtocolViolation,
    locked_send,
    receive_chunk,
)
from air.ipc.procs import MARKER_ENV, ProcessIdentity, kill_tree, read_identity
from air.ipc.protocol import WorkerProtocol

__all__ = [
    "STDERR_TAIL_BYTES",
    "WORKER_ENV_ALLOWLIST",
    "WorkerProcess",
    "worker_command",
    "worker_environment",
]

STDERR_TAIL_BYTES = 256 * 1024

WORKER_ENV_ALLOWLIST = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    "TMPDIR",
    "VIRTUAL_ENV",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONNOUSERSITE",
    "PYTHONSAFEPATH",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONHASHSEED",
    "PYTHONIOENCODING",
    "PYTHONUTF8",
    "PYTHONFAULTHANDLER",
    "PYTHONDEVMODE",
    "PYTHONWARNINGS",
    "COVERAGE_PROCESS_START",
)
"""What a worker inherits from air: what ``python -m air.roles`` needs to start and import air
(interpreter, venv and path, locale, HOME for the user site-packages). No key, token or agent
socket: workers reach the model only through the parent (IMPL-SBX-4)."""


def worker_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The allowlisted part of ``environ`` (default ``os.environ``) a worker starts with."""
    source = os.environ if environ is None else environ
    return {k: source[k] for k in WORKER_ENV_ALLOWLIST if k in source}


def worker_command(module: str = "air.roles") -> list[str]:
    return [sys.executable, "-m", module]


class WorkerProcess:
    """A spawned worker. Use ``await WorkerProcess.spawn(...)`` then ``receive()`` in a loop."""

    def __init__(
        self,
        process: trio.Process,
        *,
        agent_id: str,
        marker: str,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    ) -> None:
        self.process = process
        self.agent_id = agent_id
        self.marker = marker
        self.identity: ProcessIdentity = read_identity(process.pid)
        self.protocol = WorkerProtocol("parent")
        self._decoder = LineDecoder(max_line_bytes)
        self._pending: deque[bytes | ProtocolViolation] = deque()
        self._eof = False
        self._drained = False
        self._send_lock = trio.Lock()
        self.stderr_tail = bytearray()
        self.stderr_total = 0

    @property
    def pid(self) -> int:
        return self.process.pid

    @classmethod
    async def spawn(
        cls,
        *,
        agent_id: str,
        marker: str,
        cwd: str | None = None,
        command: Sequence[str] | None = None,
        env: dict[str, str] | None = None,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    ) -> WorkerProcess:
        """Start the worker.

        Args:
            env: variables set on top of the allowlisted environment, a deliberate choice of
                the caller (a test's switches); air itself passes none.
        """
        full_env = worker_environment()
        full_env.update(env or {})
        full_env[MARKER_ENV] = marker
        full_env.setdefault("PYTHONUNBUFFERED", "1")
        proc = await trio.lowlevel.open_process(
            list(command or worker_command()),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            cwd=cwd,
            env=full_env,
        )
        return cls(proc, agent_id=agent_id, marker=marker, max_line_bytes=max_line_bytes)

    async def send(self, envelope: IpcEnvelope) -> bool:
        """Write one line; False when the worker's stdin is closed."""
        data = self.protocol.encode(envelope)
        assert self.process.stdin is not None
        try:
            await locked_send(self._send_lock, self.process.stdin, data)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            return False
        return True

    async def receive(self) -> IpcEnvelope | ProtocolViolation | None:
        """The next message, a protocol violation, or None at a clean end of stream."""
        assert self.process.stdout is not None
        while not self._pending:
            if self._eof:
                return None
            try:
                chunk = await receive_chunk(self.process.stdout, drained=self._drained)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                chunk = b""
            if not chunk:
                self._eof = True
                err = self._decoder.eof()
                if err is not None:
                    return err
                return None
            self._drained = len(chunk) < RECEIVE_BYTES
            self._pending.extend(self._decoder.feed(chunk))
        item = self._pending.popleft()
        if isinstance(item, ProtocolViolation):
            return item
        try:
            return self.protocol.decode(item)
        except ProtocolViolation as exc:
            return exc

    async def pump_stderr(self) -> None:
        """Read stderr to its end, keeping the last ``STDERR_TAIL_BYTES``."""
        assert self.process.stderr is not None
        while True:
            try:
                chunk = await receive_chunk(self.process.stderr)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return
            if not chunk:
                return
            self.stderr_total += len(chunk)
            self.stderr_tail += chunk
            if len(self.stderr_tail) > STDERR_TAIL_BYTES:
                del self.stderr_tail[: len(self.stderr_tail) - STDERR_TAIL_BYTES]

    async def close_stdin(self) -> None:
        if self.process.stdin is not None:
            with trio.move_on_after(1):
                try:
                    await self.process.stdin.aclose()
                except (trio.BrokenResourceError, OSError):
                    pass

    async def kill_tree(self, grace_s: float = 3.0) -> bool:
        return await kill_tree(self.identity, marker=self.marker, grace_s=grace_s)

    async def wait(self) -> int:
        return await self.process.wait()
