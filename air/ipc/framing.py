"""Sans-IO NDJSON framing: a bounded line buffer and the typed protocol violations (SDD §8.2).

Owns: ``LineDecoder`` (feed bytes, get complete lines; an oversized line or EOF in the middle
of a line becomes a typed error item, never an exception escaping ``feed``) and the
``ProtocolViolation`` family, each an ``AirException`` of kind ``protocol_error``.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass

import trio

from air.contracts.error import AirException, ErrorKind, Retryability, make_air_error

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "RECEIVE_BYTES",
    "EofMidLine",
    "InvalidEnvelope",
    "InvalidJson",
    "LineDecoder",
    "LineTooLong",
    "ProtocolViolation",
    "VersionMismatch",
    "WrongDirection",
    "locked_send",
    "read_ready",
    "receive_chunk",
]

DEFAULT_MAX_LINE_BYTES = 4 * 1024 * 1024
RECEIVE_BYTES = 64 * 1024
"""One read takes up to a whole pipe buffer; every queued line in it is split from the chunk."""
YIELD_EVERY = 32
"""A reader that found data waiting this many times in a row passes through the scheduler
before it reads again (``trio.lowlevel.checkpoint``): deadlines (a worker's hard timeout, the
stall watch) and other tasks run even while a peer keeps the pipe full."""


class ProtocolViolation(AirException):
    """A worker broke the protocol; the parent ends that worker with this recorded reason."""

    code = "protocol_error"

    def __init__(self, message: str, *, detail: str | None = None) -> None:
        super().__init__(
            make_air_error(
                kind=ErrorKind.PROTOCOL_ERROR,
                message=message,
                detail=detail,
                retryability=Retryability.TRANSIENT,
                user_action="Check the worker's stderr log artifact; a retry may succeed.",
                metadata={"code": self.code},
            )
        )


class LineTooLong(ProtocolViolation):
    code = "line_too_long"


class EofMidLine(ProtocolViolation):
    code = "eof_mid_line"


class InvalidJson(ProtocolViolation):
    code = "invalid_json"


class InvalidEnvelope(ProtocolViolation):
    code = "invalid_envelope"


class WrongDirection(ProtocolViolation):
    code = "wrong_direction"


class VersionMismatch(ProtocolViolation):
    code = "version_mismatch"


@dataclass(eq=False)
class LineDecoder:
    """Split a byte stream into lines of at most ``max_line_bytes`` (newline excluded).

    ``feed`` returns complete lines (bytes) and, for a line over the bound, one ``LineTooLong``
    item; the rest of that line is discarded up to its newline. Memory stays bounded by
    ``max_line_bytes`` whatever the input.
    """

    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES

    def __post_init__(self) -> None:
        self._buf = bytearray()
        self._discarding = False

    def feed(self, data: bytes | bytearray) -> list[bytes | ProtocolViolation]:
        out: list[bytes | ProtocolViolation] = []
        start = 0
        n = len(data)
        while start < n:
            nl = data.find(b"\n", start)
            end = n if nl < 0 else nl
            if self._discarding:
                if nl >= 0:
                    self._discarding = False
                start = end + 1
                continue
            if len(self._buf) + (end - start) > self.max_line_bytes:
                self._buf.clear()
                out.append(
                    LineTooLong(
                        f"a worker line exceeded {self.max_line_bytes} bytes",
                        detail=f"limit {self.max_line_bytes}",
                    )
                )
                self._discarding = nl < 0
                start = end + 1
                continue
            self._buf += data[start:end]
            if nl >= 0:
                line = bytes(self._buf)
                self._buf.clear()
                if line.strip():
                    out.append(line)
            start = end + 1
        return out

    def eof(self) -> ProtocolViolation | None:
        """Call at end of stream: a partial line left over is an ``EofMidLine`` error."""
        if self._buf.strip() and not self._discarding:
            size = len(self._buf)
            self._buf.clear()
            return EofMidLine(f"the stream ended in the middle of a line ({size} bytes)")
        self._buf.clear()
        return None

    @property
    def buffered(self) -> int:
        return len(self._buf)


async def locked_send(lock: trio.Lock, stream: trio.abc.SendStream, data: bytes) -> None:
    """``send_all`` under ``lock``; on an ``FdStream`` whose lock is free, write straight away.

    The fast path skips ``send_all``'s scheduler round trip and the lock bookkeeping (a pipe
    write of a protocol line rarely blocks): it checks for cancellation and, with no other
    sender mid-line, writes what the pipe takes — nothing can yield between the check and the
    write, so lines never interleave. Any rest is sent under the lock by ``send_all``, which
    also turns any error into Trio's typed ones.
    """
    if isinstance(stream, trio.lowlevel.FdStream) and not lock.locked():
        await trio.lowlevel.checkpoint_if_cancelled()  # raises or returns: it never yields
        try:
            sent = os.write(stream.fileno(), data)
        except OSError:
            sent = 0
        if sent == len(data):
            return
        lock.acquire_nowait()  # free, and nothing yielded since the check
        try:
            await stream.send_all(memoryview(data)[sent:])
        finally:
            lock.release()
        return
    try:
        lock.acquire_nowait()
    except trio.WouldBlock:
        await lock.acquire()
    try:
        await stream.send_all(data)
    finally:
        lock.release()


async def read_ready(
    stream: trio.abc.ReceiveStream, max_bytes: int = RECEIVE_BYTES
) -> bytes | None:
    """What an ``FdStream`` holds right now, without parking: ``None`` when the pipe is empty
    (or ``stream`` is no ``FdStream``); ``b""`` at end of stream. Checks for cancellation, but
    is no schedule point: a caller that keeps finding data must pass through the scheduler
    itself now and then (``YIELD_EVERY``).

    On one core a peer that was woken by our last write usually ran and answered before we
    read again; reading first then saves the park in ``wait_readable`` (an ``epoll_ctl`` and a
    scheduler round trip) of every receive (IMPL-IPC-4).
    """
    if not isinstance(stream, trio.lowlevel.FdStream):
        return None
    await trio.lowlevel.checkpoint_if_cancelled()
    try:
        return os.read(stream.fileno(), max_bytes)
    except BlockingIOError:
        return None
    except OSError as exc:
        if exc.errno == errno.EBADF:
            raise trio.ClosedResourceError("the pipe was already closed") from None
        raise trio.BrokenResourceError from exc


async def receive_chunk(
    stream: trio.abc.ReceiveStream, max_bytes: int = RECEIVE_BYTES, *, drained: bool = False
) -> bytes:
    """``receive_some`` without its scheduler round trip when data is already waiting.

    On an ``FdStream`` (the worker pipes): check for cancellation, try a non-blocking read and
    only park in ``wait_readable`` when the pipe is empty; ``drained`` (the previous read took
    less than it asked for, so the pipe is most likely empty) parks first and saves the failed
    read. ``b""`` is end of stream; a closed stream raises ``ClosedResourceError``, another OS
    error ``BrokenResourceError``. One task at a time may read a stream (as with
    ``receive_some``).
    """
    if not isinstance(stream, trio.lowlevel.FdStream):
        return bytes(await stream.receive_some(max_bytes))
    if drained and stream.fileno() >= 0:
        await trio.lowlevel.wait_readable(stream.fileno())
    else:
        await trio.lowlevel.checkpoint_if_cancelled()
    while True:
        fd = stream.fileno()
        try:
            return os.read(fd, max_bytes)
        except BlockingIOError:
            await trio.lowlevel.wait_readable(fd)
        except OSError as exc:
            if exc.errno == errno.EBADF:
                raise trio.ClosedResourceError("the pipe was already closed") from None
            raise trio.BrokenResourceError from exc
