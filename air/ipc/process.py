"""WorkerProcess: one worker's NDJSON channel, parent side (SDD §8.1).

Owns: the channel over a launched worker's streams (``air.ipc.launcher``): sending envelopes,
receiving decoded envelopes (protocol violations come back as values), capturing stderr
(bounded tail), ``kill_tree`` / ``wait`` through the worker's handle, and ``aclose``: once the
worker ended, every stream of the channel and of the handle is closed at once (not left to the
garbage collector, nor to a launcher that keeps its handles for a later sweep). ``spawn`` is the
local subprocess path (``LocalLauncher``: ``python -P -m air.roles``, ``start_new_session=True``,
a run marker, an environment built from ``WORKER_ENV_ALLOWLIST``: a worker never holds a
credential, the parent serves its model calls; IMPL-SBX-4).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING

import trio

from air.contracts.ipc import IpcEnvelope
from air.ipc.environment import WORKER_ENV_ALLOWLIST, worker_environment
from air.ipc.framing import (
    DEFAULT_MAX_LINE_BYTES,
    YIELD_EVERY,
    LineDecoder,
    ProtocolViolation,
    locked_send,
    read_ready,
    receive_chunk,
)
from air.ipc.launcher import (
    Launched,
    LaunchSpec,
    LocalLauncher,
    WorkerHandle,
    local_launched,
    worker_command,
)
from air.ipc.procs import ProcessIdentity
from air.ipc.protocol import WorkerProtocol

if TYPE_CHECKING:
    from air.ipc.spare import PopenProcess

__all__ = [
    "STDERR_TAIL_BYTES",
    "WORKER_ENV_ALLOWLIST",
    "WorkerProcess",
    "worker_command",
    "worker_environment",
]

STDERR_TAIL_BYTES = 256 * 1024


class WorkerProcess:
    """A launched worker's channel. Build it from a ``Launched`` (or a local process), then
    ``receive()`` in a loop."""

    def __init__(
        self,
        process: trio.Process | PopenProcess | Launched,
        *,
        agent_id: str,
        marker: str | None = None,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    ) -> None:
        if isinstance(process, Launched):
            launched = process
        else:
            assert marker is not None
            launched = local_launched(process, marker)
        self.launched = launched
        self.handle: WorkerHandle = launched.handle
        self.agent_id = agent_id
        self.marker = launched.marker
        self.identity: ProcessIdentity = launched.handle.identity
        self.protocol = WorkerProtocol("parent")
        self._stdin = launched.send
        self._stdout = launched.receive
        self._stderr = launched.stderr
        self._decoder = LineDecoder(max_line_bytes)
        self._pending: deque[bytes | ProtocolViolation] = deque()
        self._eof = False
        self._unyielded = 0
        self._send_lock = trio.Lock()
        self.closed = False
        self.stderr_tail = bytearray()
        self.stderr_total = 0

    @property
    def process(self) -> trio.Process | PopenProcess:
        """The local process (only for a worker started by ``LocalLauncher``)."""
        process = getattr(self.handle, "process", None)
        assert process is not None, "not a local worker process"
        return process  # type: ignore[no-any-return]

    @property
    def pid(self) -> int:
        return self.identity.pid

    @property
    def returncode(self) -> int | None:
        return self.handle.returncode

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
        """Start a local worker (``LocalLauncher`` without a spare).

        Args:
            env: variables set on top of the allowlisted environment, a deliberate choice of
                the caller (a test's switches); air itself passes none.
        """
        spec = LaunchSpec(
            agent_id=agent_id,
            marker=marker,
            cwd=cwd,
            command=list(command or worker_command()),
            env=env,
        )
        launched = await LocalLauncher().launch(spec)
        return cls(launched, agent_id=agent_id, max_line_bytes=max_line_bytes)

    async def send(self, envelope: IpcEnvelope) -> bool:
        """Write one line; False when the worker's stdin is closed."""
        data = self.protocol.encode(envelope)
        try:
            await locked_send(self._send_lock, self._stdin, data)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            return False
        return True

    async def send_line(self, data: bytes) -> bool:
        """Write one encoded line (``air.ipc.protocol.LineEncoder``); False when stdin is closed."""
        try:
            await locked_send(self._send_lock, self._stdin, data)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            return False
        return True

    async def receive(self) -> IpcEnvelope | ProtocolViolation | None:
        """The next message, a protocol violation, or None at a clean end of stream."""
        if self._unyielded >= YIELD_EVERY:
            self._unyielded = 0
            await trio.lowlevel.checkpoint()
        while not self._pending:
            if self._eof:
                return None
            try:
                chunk = await read_ready(self._stdout)
                if chunk is None:
                    self._unyielded = 0
                    chunk = await receive_chunk(self._stdout, drained=True)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                chunk = b""
            if not chunk:
                self._eof = True
                err = self._decoder.eof()
                if err is not None:
                    return err
                return None
            self._pending.extend(self._decoder.feed(chunk))
        self._unyielded += 1
        item = self._pending.popleft()
        if isinstance(item, ProtocolViolation):
            return item
        try:
            return self.protocol.decode(item)
        except ProtocolViolation as exc:
            return exc

    async def pump_stderr(self) -> None:
        """Read stderr to its end, keeping the last ``STDERR_TAIL_BYTES``."""
        if self._stderr is None:
            return
        while True:
            try:
                chunk = await receive_chunk(self._stderr)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return
            if not chunk:
                return
            self.stderr_total += len(chunk)
            self.stderr_tail += chunk
            if len(self.stderr_tail) > STDERR_TAIL_BYTES:
                del self.stderr_tail[: len(self.stderr_tail) - STDERR_TAIL_BYTES]

    async def close_stdin(self) -> None:
        with trio.move_on_after(1):
            try:
                await self._stdin.aclose()
            except (trio.BrokenResourceError, OSError):
                pass

    async def kill_tree(self, grace_s: float = 3.0) -> bool:
        return await self.handle.kill_tree(grace_s)

    async def wait(self) -> int:
        return await self.handle.wait()

    async def aclose(self) -> None:
        """Close the channel's streams (stdin, stdout, stderr) and the handle's own pipes, at
        once; idempotent. Call it once the worker was reaped: a read still pending ends as EOF."""
        if self.closed:
            return
        self.closed = True
        for stream in (self._stdin, self._stdout, self._stderr):
            if stream is not None:
                await trio.aclose_forcefully(stream)
        await self.handle.aclose()
