"""The pipe fast paths of ``air.ipc.framing`` on real OS pipes: ``locked_send`` writes straight
to the fd and hands a partial write to ``send_all``; ``receive_chunk`` reads without a scheduler
round trip, parks first when told the pipe is drained, and maps a closed pipe to Trio's errors."""

from __future__ import annotations

import os

import pytest
import trio

from air.ipc.framing import RECEIVE_BYTES, LineDecoder, locked_send, receive_chunk
from air.ipc.protocol import WorkerProtocol, make_envelope


def _pipe() -> tuple[trio.lowlevel.FdStream, trio.lowlevel.FdStream]:
    r, w = os.pipe()
    return trio.lowlevel.FdStream(r), trio.lowlevel.FdStream(w)


async def test_lines_bigger_than_the_pipe_buffer_arrive_whole_and_in_order() -> None:
    rx, tx = _pipe()
    lock = trio.Lock()
    # 40 envelopes of ~300 KiB each, far over the 64 KiB pipe buffer: most writes are partial
    lines = [
        WorkerProtocol.encode(
            make_envelope("log", {"message": f"{i}:" + "x" * 300_000}, session_id="s", agent_id="a")
        )
        for i in range(40)
    ]
    got: list[bytes] = []

    async def reader() -> None:
        decoder = LineDecoder()
        drained = False
        while True:
            chunk = await receive_chunk(rx, drained=drained)
            if not chunk:
                return
            drained = len(chunk) < RECEIVE_BYTES
            got.extend(item for item in decoder.feed(chunk) if isinstance(item, bytes))

    async def writer(part: list[bytes]) -> None:
        for line in part:
            await locked_send(lock, tx, line)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(reader)
        async with trio.open_nursery() as writers:
            writers.start_soon(writer, lines[::2])
            writers.start_soon(writer, lines[1::2])
        await tx.aclose()
    # two concurrent writers: the lock keeps every line whole, each writer's lines in order
    assert sorted(got) == sorted(line.rstrip(b"\n") for line in lines)
    proto = WorkerProtocol("parent")
    seen = [int(proto.decode(line).payload["message"].split(":")[0]) for line in got]
    evens = [n for n in seen if n % 2 == 0]
    odds = [n for n in seen if n % 2 == 1]
    assert evens == sorted(evens)
    assert odds == sorted(odds)
    await rx.aclose()


async def test_a_drained_reader_parks_until_data_comes_and_sees_eof() -> None:
    rx, tx = _pipe()
    got: list[bytes] = []

    async def reader() -> None:
        got.append(await receive_chunk(rx, drained=True))
        got.append(await receive_chunk(rx, drained=True))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(reader)
        await trio.testing.wait_all_tasks_blocked()
        assert got == []
        await locked_send(trio.Lock(), tx, b"hello\n")
        await trio.testing.wait_all_tasks_blocked()
        assert got == [b"hello\n"]
        await tx.aclose()
    assert got == [b"hello\n", b""]
    await rx.aclose()


async def test_closed_and_broken_pipes_raise_trio_errors() -> None:
    rx, tx = _pipe()
    await rx.aclose()
    with pytest.raises(trio.ClosedResourceError):
        await receive_chunk(rx)
    with pytest.raises(trio.ClosedResourceError):
        await receive_chunk(rx, drained=True)
    # the read end is gone: the fast write fails and send_all reports a broken pipe
    with pytest.raises(trio.BrokenResourceError):
        await locked_send(trio.Lock(), tx, b"nobody reads this\n")
    await tx.aclose()
    with pytest.raises(trio.ClosedResourceError):
        await locked_send(trio.Lock(), tx, b"closed\n")


async def test_a_cancelled_sender_writes_nothing() -> None:
    rx, tx = _pipe()
    with trio.CancelScope() as scope:
        scope.cancel()
        await locked_send(trio.Lock(), tx, b"never\n")
    assert scope.cancelled_caught
    await tx.aclose()
    assert await receive_chunk(rx) == b""
    await rx.aclose()
