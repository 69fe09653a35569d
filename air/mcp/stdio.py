"""The stdio transport of an MCP session: a server's process and its lines, bounded.

Owns ``open_stdio``: start a stdio server (a session of its own, the SDK's minimal environment
plus the server's variables and air's run marker, stderr to ``errlog``) and connect the SDK's
``ClientSession`` to it through memory streams, as the SDK's own ``stdio_client`` does, except
for what the server sends: each line of its stdout is one JSON-RPC message, read once as it
arrives and at most ``MAX_MESSAGE_BYTES`` long (IMPL-MCP-3). The SDK's transport joins an
unfinished line to each new chunk, so a server that never ends a line held the parent's loop
busy and grew it for as long as it wrote (a call's whole timeout), and a 40 MiB answer never
arrived at all. A line past the bound ends the connection at once (``StdioLink.problem`` says
why; pending calls fail); the process is stopped, and the caller's marker sweep follows. At the
end: stdin closed, ``STOP_GRACE_S`` for the server to exit, then its group killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any, TextIO

import anyio
import trio

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
    from mcp.shared.message import SessionMessage

__all__ = ["MAX_MESSAGE_BYTES", "STOP_GRACE_S", "StdioLink", "open_stdio", "over_the_bound"]

MAX_MESSAGE_BYTES = 32 * 1024 * 1024
"""The longest message (one line) a stdio server may send, as a model server's plain reply."""
STOP_GRACE_S = 2.0
"""How long a server may take to exit once its stdin is closed (the SDK's own grace)."""
_READ = 1 << 20


def over_the_bound(what: str = "one MCP message") -> str:
    """How a refusal past ``MAX_MESSAGE_BYTES`` says it (stdio and HTTP alike)."""
    return f"over {MAX_MESSAGE_BYTES // (1024 * 1024)} MiB (air's bound for {what})"


class StdioLink:
    """The two streams a ``ClientSession`` takes, and why the server's side ended early."""

    def __init__(
        self,
        pid: int,
        read: MemoryObjectReceiveStream[SessionMessage | Exception],
        write: MemoryObjectSendStream[SessionMessage],
    ) -> None:
        self.pid = pid
        """The server's process (the leader of its own session and group)."""
        self.read = read
        self.write = write
        self.problem: str | None = None
        """Set when air ended the connection because of what the server sent."""


@contextlib.asynccontextmanager
async def open_stdio(
    command: str,
    args: Sequence[str],
    *,
    env: dict[str, str],
    cwd: str,
    errlog: TextIO,
) -> AsyncIterator[StdioLink]:
    """Start the server and yield its link; stop it on exit (shielded, bounded).

    Raises:
        OSError: the server could not be started.
    """
    from mcp.client.stdio import get_default_environment

    proc = await trio.lowlevel.open_process(
        [command, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errlog,
        env=get_default_environment() | env,
        cwd=cwd,
        start_new_session=True,
    )
    to_session, read = anyio.create_memory_object_stream[Any](0)
    write, from_session = anyio.create_memory_object_stream[Any](0)
    link = StdioLink(proc.pid, read, write)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_read_lines, proc, to_session, link)
            nursery.start_soon(_write_lines, proc, from_session, to_session)
            try:
                yield link
            finally:
                with trio.CancelScope(shield=True):
                    await _stop(proc)
                nursery.cancel_scope.cancel()
    finally:
        for stream in (to_session, read, write, from_session):
            stream.close()


async def _read_lines(proc: trio.Process, to_session: Any, link: StdioLink) -> None:
    """Each line the server writes, as one message for the session, each byte looked at once."""
    from mcp.shared.message import SessionMessage
    from mcp.types import jsonrpc_message_adapter

    assert proc.stdout is not None
    buf = bytearray()
    with to_session:
        while True:
            try:
                chunk = await proc.stdout.receive_some(_READ)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                return
            if not chunk:
                return
            start = len(buf)
            buf += chunk
            end = buf.find(b"\n", start)
            while end >= 0 and end <= MAX_MESSAGE_BYTES:
                line = bytes(buf[:end])
                del buf[: end + 1]
                item: Any
                try:
                    item = SessionMessage(jsonrpc_message_adapter.validate_json(line))
                except ValueError as exc:  # the session surfaces a bad line as a value
                    item = exc
                try:
                    await to_session.send(item)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return  # the session is gone
                end = buf.find(b"\n")
            if end > MAX_MESSAGE_BYTES or (end < 0 and len(buf) > MAX_MESSAGE_BYTES):
                link.problem = f"sent a message {over_the_bound()}; the connection is closed"
                _kill_group(proc)
                return


async def _write_lines(proc: trio.Process, from_session: Any, to_session: Any) -> None:
    assert proc.stdin is not None
    with from_session:
        async for message in from_session:
            data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
            try:
                await proc.stdin.send_all(data.encode() + b"\n")
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                to_session.close()  # the session sees the connection end, not a hung request
                return


async def _stop(proc: trio.Process) -> None:
    assert proc.stdin is not None
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        await proc.stdin.aclose()
    with trio.move_on_after(STOP_GRACE_S):
        await proc.wait()
    if proc.returncode is None:
        _kill_group(proc)
        with trio.move_on_after(STOP_GRACE_S):
            await proc.wait()


def _kill_group(proc: trio.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # its own session: the group is its pid
