"""A worker's protocol lines beside srun's stdio (issue #27 item 3; IMPL-SLURM-5).

Slurm before 24.05 (this machine's 22.05) forwards a step's stdout from slurmstepd to srun in
messages of at most 1 KiB, one ``write`` each, on a TCP socket without ``TCP_NODELAY``
(``src/slurmd/slurmstepd/io.c``; Slurm sets it from 24.05, commit 1807bce846): from the second
message of a line on, Nagle's algorithm holds the rest until srun acknowledges the first, and
srun, answering nothing on that socket, delays its ACK by ~40 ms. Every reply of more than 1 KiB
paid that. So the worker's lines do not go through srun; srun only places and supervises it.

Owns both halves. ``SideChannel`` (the parent's): a listener on the host's ``callback_address``
and a one-time token, offered to the step as one line on srun's stdin (``offer``: never in argv
or the environment); ``accept`` takes the first connection that presents the token, closes
every other one at once and then the listener, and returns the worker's stdio as streams with
``TCP_NODELAY``. ``connect`` (the node's: ``python -P -m air.remote.sidechannel connect --
WORKER...``, under the guard): reads that line, connects back, presents the token and becomes
the worker with the socket as its stdin and stdout (stderr stays srun's). The parent closing the
socket, or dying, is the worker's stdin EOF, as over a pipe.
"""

from __future__ import annotations

import hmac
import os
import secrets
import socket
import sys

import trio

__all__ = ["OFFER_PREFIX", "SideChannel", "connect", "main"]

OFFER_PREFIX = b"air-side "
"""The line on srun's stdin: ``air-side ADDRESS PORT TOKEN``."""
TOKEN_WAIT_S = 5.0
"""How long a connection may take to present the token before it is closed."""
LINE_MAX = 512


class _SendHalf(trio.abc.SendStream):
    """The worker's stdin: closing it is the socket's EOF, the other direction stays open."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await self.stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.stream.wait_send_all_might_not_block()

    async def aclose(self) -> None:
        try:
            await self.stream.send_eof()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass


class SideChannel:
    """The parent's listener for one worker (module docstring)."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.token = secrets.token_hex(32)
        self.listener: trio.socket.SocketType | None = None
        self.refused = 0
        """Connections closed for not presenting the token."""

    async def open(self) -> None:
        family = socket.AF_INET6 if ":" in self.address else socket.AF_INET
        listener = trio.socket.socket(family, socket.SOCK_STREAM)
        try:
            await listener.bind((self.address, 0))
            listener.listen(16)
        except OSError:
            listener.close()
            raise
        self.listener = listener

    def offer(self) -> bytes:
        """The line the step reads on its stdin."""
        assert self.listener is not None
        port = self.listener.getsockname()[1]
        return OFFER_PREFIX + f"{self.address} {port} {self.token}\n".encode()

    async def accept(self) -> tuple[trio.abc.SendStream, trio.abc.ReceiveStream]:
        """The worker's connection (its stdin, its stdout); the listener is closed after it.
        Waits until cancelled (the caller bounds it)."""
        assert self.listener is not None
        listener = self.listener
        won: list[trio.SocketStream] = []
        try:
            async with trio.open_nursery() as nursery:
                while True:
                    sock, _ = await listener.accept()
                    nursery.start_soon(self._check, trio.SocketStream(sock), won, nursery)
        finally:
            self.close()
        stream = won[0]
        stream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, True)
        return _SendHalf(stream), stream

    async def _check(
        self, stream: trio.SocketStream, won: list[trio.SocketStream], nursery: trio.Nursery
    ) -> None:
        try:
            line = bytearray()
            with trio.move_on_after(TOKEN_WAIT_S):
                while b"\n" not in line and len(line) <= LINE_MAX:
                    data = await stream.receive_some(LINE_MAX)
                    if not data:
                        break
                    line += data
            presented, nl, rest = bytes(line).partition(b"\n")
            good = hmac.compare_digest(presented, self.token.encode()) and bool(nl) and not rest
            if good and not won:
                won.append(stream)
                nursery.cancel_scope.cancel()
        except (trio.BrokenResourceError, OSError):
            pass
        finally:
            if stream not in won:
                self.refused += 1
                stream.socket.close()

    async def hand_over(
        self, stdin: trio.abc.SendStream, wait_s: float
    ) -> tuple[trio.abc.SendStream, trio.abc.ReceiveStream] | None:
        """The step runs: offer the channel on its ``stdin`` (srun's) and take its connection
        (the step's stdin and stdout); None when nothing connected within ``wait_s``."""
        try:
            await stdin.send_all(self.offer())
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self.close()
            return None
        with trio.move_on_after(wait_s):
            return await self.accept()
        self.close()
        return None

    def close(self) -> None:
        if self.listener is not None:
            self.listener.close()
            self.listener = None


def _read_offer() -> tuple[str, int, bytes]:
    """The offer line from stdin, byte by byte (nothing after it is consumed)."""
    line = b""
    while not line.endswith(b"\n") and len(line) <= LINE_MAX:
        byte = os.read(0, 1)
        if not byte:
            break
        line += byte
    if not line.startswith(OFFER_PREFIX):
        raise ValueError("no side-channel offer on stdin")
    address, port, token = line[len(OFFER_PREFIX) :].decode().split()
    return address, int(port), token.encode()


def connect(command: list[str]) -> int:
    """Connect back to the parent and become ``command`` with the socket as stdin and stdout."""
    try:
        address, port, token = _read_offer()
        sock = socket.create_connection((address, port), timeout=30)
    except (ValueError, OSError) as exc:
        sys.stderr.write(f"air.remote.sidechannel: {exc}\n")
        return 2
    sock.settimeout(None)  # blocking again: the worker's stdio
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(token + b"\n")
    os.dup2(sock.fileno(), 0)
    os.dup2(sock.fileno(), 1)
    sock.close()
    os.execvp(command[0], command)
    return 2  # not reached: execvp raises on failure


def main(argv: list[str]) -> int:
    if len(argv) >= 3 and argv[0] == "connect" and argv[1] == "--":
        return connect(argv[2:])
    sys.stderr.write("usage: python -m air.remote.sidechannel connect -- CMD...\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
