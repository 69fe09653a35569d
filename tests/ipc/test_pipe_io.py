"""The pipe fast paths of ``air.ipc.framing`` on real OS pipes: ``locked_send`` writes straight
to the fd and hands a partial write to ``send_all``; ``receive_chunk`` reads without a scheduler
round trip, parks first when told the pipe is drained, and maps a closed pipe to Trio's errors;
``read_ready`` reads what waits without parking, and the two readers built on it (the parent's
``WorkerProcess.receive`` and the worker's ``WorkerRuntime``) still pass through the scheduler
every ``YIELD_EVERY`` reads while a peer keeps their pipe full (IMPL-IPC-4)."""

from __future__ import annotations

import json
import os
import time

import pytest
import trio

from air.contracts.ipc import AgentStartControl
from air.contracts.platform import ProcessIdentity
from air.contracts.runtime import AgentRuntimeContext, AgentType, ContextPack, PermissionTemplate
from air.contracts.task import TaskSpec, TaskType
from air.contracts.tool_runs import ToolResultEnvelope
from air.contracts.worker_result import WorkerResult, WorkerStatus
from air.ipc.framing import (
    RECEIVE_BYTES,
    YIELD_EVERY,
    LineDecoder,
    locked_send,
    read_ready,
    receive_chunk,
)
from air.ipc.launcher import Launched
from air.ipc.process import WorkerProcess
from air.ipc.protocol import LineEncoder, WorkerProtocol, make_envelope
from air.ipc.runtime import WorkerRuntime
from air.testing.launcher import FAKE_BOOT_ID, FakeHandle


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


async def test_read_ready_takes_what_waits_and_never_parks() -> None:
    rx, tx = _pipe()
    assert await read_ready(rx) is None  # empty: no park, no wait
    os.write(tx.fileno(), b"a\nb\n")
    assert await read_ready(rx) == b"a\nb\n"
    _send, receive = trio.testing.memory_stream_pair()
    assert await read_ready(receive) is None  # no pipe: the caller's receive_some path
    with trio.CancelScope() as scope:
        scope.cancel()
        os.write(tx.fileno(), b"c\n")
        await read_ready(rx)  # a cancelled reader takes nothing
    assert scope.cancelled_caught
    await tx.aclose()
    assert await read_ready(rx) == b"c\n"
    assert await read_ready(rx) == b""
    await rx.aclose()
    with pytest.raises(trio.ClosedResourceError):
        await read_ready(rx)


def _start(**options: object) -> AgentStartControl:
    return AgentStartControl(
        task_spec=TaskSpec(id="task_p", type=TaskType.REVIEW, title="t", description="t"),
        context_pack=ContextPack(),
        runtime=AgentRuntimeContext(
            session_id="ses_p",
            project_id="p",
            agent_id="a",
            permission_template=PermissionTemplate.REVIEWER,
        ),
        options=options,
    )


def _done(rt: WorkerRuntime) -> WorkerResult:
    return WorkerResult(
        task_id=rt.task_id,
        agent_id=rt.agent_id,
        agent_type=AgentType.REVIEWER,
        status=WorkerStatus.COMPLETED,
        summary="ok",
        result={"verdict": "approved", "findings": []},
    )


_P = LineEncoder(session_id="ses_p", agent_id="a")


def _log_lines(n: int) -> bytes:
    return b"".join(_P.line("log", {"level": "info", "message": str(i)}) for i in range(n))


async def test_a_parent_reader_whose_pipe_stays_full_still_meets_its_deadline() -> None:
    """A worker that keeps the parent's pipe full (here: 200 lines already waiting) must not
    hold off the parent's deadlines — a hard timeout is a cancel scope the scheduler fires only
    when the read loop passes through it. The deadline has passed before the first read: the
    loop is cancelled within ``YIELD_EVERY`` messages, not after the whole pipe (it read 200
    before)."""
    rx, tx = _pipe()
    data = _log_lines(200)
    assert len(data) < 65536  # it all waits in the pipe buffer
    os.write(tx.fileno(), data)
    handle = FakeHandle(identity=ProcessIdentity(pid=4_100_000, boot_id=FAKE_BOOT_ID))
    proc = WorkerProcess(
        Launched(send=tx, receive=rx, stderr=None, handle=handle, marker="m"), agent_id="a"
    )
    got = 0
    with trio.move_on_after(0.001):
        # the deadline passes before the first read, unseen by the (blocked) scheduler
        time.sleep(0.002)  # noqa: ASYNC251
        while await proc.receive() is not None:
            got += 1
    assert 0 < got <= YIELD_EVERY
    await tx.aclose()
    await rx.aclose()


async def test_a_worker_whose_pipe_stays_full_lets_its_other_tasks_run() -> None:
    """The worker's reader takes what waits without parking; every ``YIELD_EVERY`` messages it
    passes through the scheduler anyway, so its body and heartbeats are not starved by a parent
    that keeps its pipe full (here: 128 controls already waiting, which the body watches
    arrive)."""
    n = 4 * YIELD_EVERY
    to_worker_rx, to_worker_tx = _pipe()
    from_worker_rx, from_worker_tx = _pipe()
    controls = b"".join(
        _P.line("control", {"type": "agent.extend_timeout", "extra_ms": 1, "reason": "r"})
        for _ in range(n)
    )
    assert len(controls) < 65536
    os.write(to_worker_tx.fileno(), controls)
    runtime = WorkerRuntime(
        _start(),
        session_id="ses_p",
        agent_id="a",
        agent_type=AgentType.REVIEWER,
        receive=to_worker_rx,
        send=from_worker_tx,
    )
    seen: list[int] = []

    async def body(rt: WorkerRuntime) -> WorkerResult:
        while rt.extra_timeout_ms < n:
            seen.append(rt.extra_timeout_ms)
            await trio.lowlevel.checkpoint()
        return _done(rt)

    with trio.fail_after(10):
        assert await runtime.run(body) == 0
    # the body ran while the controls were being read, not only before and after
    assert [v for v in seen if 0 < v < n]
    for stream in (to_worker_rx, to_worker_tx, from_worker_rx, from_worker_tx):
        await stream.aclose()


async def test_a_caller_never_blocks_in_poll_while_a_task_of_its_batch_waits_to_run() -> None:
    """``tasks_runnable`` counts the next batch's queue, not the rest of the batch being run.
    Here the body's helper task and the body wake at the same deadline, so they run in one
    batch in either order; the helper is what answers the tool call (as the parent would).
    When the body runs first, its empty pipe must not make it block the loop in poll: the
    helper has not run yet. Blocked, it would wait for the next heartbeat deadline (a
    heartbeat line before the result shows it); each order comes up in 8 rounds with
    probability 1 - 2**-8."""
    for _ in range(8):
        assert await _two_calls_the_second_in_a_shared_batch() == ["worker.result"]


async def _two_calls_the_second_in_a_shared_batch() -> list[str]:
    """The kinds of the messages a worker sends besides its tool calls."""
    to_worker_rx, to_worker_tx = _pipe()
    from_worker_rx, from_worker_tx = _pipe()
    runtime = WorkerRuntime(
        _start(heartbeat_s=10.0),
        session_id="ses_p",
        agent_id="a",
        agent_type=AgentType.REVIEWER,
        receive=to_worker_rx,
        send=from_worker_tx,
    )

    async def answer() -> None:
        while (line := await read_ready(from_worker_rx)) is None:
            await trio.lowlevel.checkpoint()  # not parked on I/O: a runnable task
        call = json.loads(line)
        assert call["kind"] == "tool.call"
        result = ToolResultEnvelope(tool_run_id="tr_x", tool_name="noop", status="ok")
        os.write(
            to_worker_tx.fileno(),
            _P.line("tool.result", result, correlation_id=call["id"]),
        )

    async def body(rt: WorkerRuntime) -> WorkerResult:
        at = trio.current_time() + 0.05

        async def parent() -> None:
            await answer()  # the first call: the background reader then waits for _idle
            await trio.sleep_until(at)
            await answer()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(parent)
            assert (await rt.call_tool("noop", {})).status == "ok"
            await trio.sleep_until(at)  # wakes in the parent's batch
            assert (await rt.call_tool("noop", {})).status == "ok"
        return _done(rt)

    with trio.fail_after(60):
        assert await runtime.run(body) == 0
    sent = [json.loads(line) for line in os.read(from_worker_rx.fileno(), 65536).splitlines()]
    for stream in (to_worker_rx, to_worker_tx, from_worker_rx, from_worker_tx):
        await stream.aclose()
    return [m["kind"] for m in sent]
