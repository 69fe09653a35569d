"""LineDecoder bounds, WorkerProtocol's payload fast path, encode and timestamps at their edges:
each assertion pins a branch a mutant flipped without failing the older tests
(docs/mutation.md)."""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, datetime
from typing import Any

import pytest
import trio
import trio.testing

from air.contracts.ipc import ToolCallPayload
from air.ipc.framing import (
    EofMidLine,
    InvalidEnvelope,
    InvalidJson,
    LineDecoder,
    LineTooLong,
    WrongDirection,
    locked_send,
    receive_chunk,
)
from air.ipc.protocol import WorkerProtocol, make_envelope


def test_a_line_of_exactly_the_limit_passes_and_one_more_byte_does_not() -> None:
    dec = LineDecoder(max_line_bytes=5)
    assert dec.feed(b"12345\n") == [b"12345"]
    out = dec.feed(b"123456\nok\n")
    assert len(out) == 2
    assert isinstance(out[0], LineTooLong)
    assert out[0].error.message == "a worker line exceeded 5 bytes"
    assert out[0].error.detail == "limit 5"
    assert out[0].error.metadata == {"code": "line_too_long"}
    assert out[1] == b"ok"
    # an oversized line whose newline is in the same chunk does not swallow the next line
    assert dec.feed(b"1234567890\nnext\n")[1:] == [b"next"]
    # a newline first, blank lines and a line split at its newline
    assert dec.feed(b"\n\n  \nab") == []
    assert dec.feed(b"\ncd\n") == [b"ab", b"cd"]
    assert dec.buffered == 0


def test_discarding_ends_at_the_first_newline_of_a_later_chunk() -> None:
    dec = LineDecoder(max_line_bytes=4)
    assert isinstance(dec.feed(b"toolongline")[0], LineTooLong)
    assert dec.feed(b"more") == []
    assert dec.feed(b"\nfine\n") == [b"fine"]
    assert dec.feed(b"x\n") == [b"x"]
    big = LineDecoder(max_line_bytes=4)
    big.feed(b"abcdefgh")
    assert big.eof() is None  # a discarded line is not a mid-line EOF
    assert big.buffered == 0
    half = LineDecoder()
    half.feed(b"abc")
    err = half.eof()
    assert isinstance(err, EofMidLine)
    assert err.error.message == "the stream ended in the middle of a line (3 bytes)"
    assert half.buffered == 0
    assert half.eof() is None


def test_tool_call_payloads_fast_path_and_checked_path() -> None:
    proto = WorkerProtocol("parent")
    fast = make_envelope(
        "tool.call", {"name": "fs.read", "input": {"path": "a"}}, session_id="s", agent_id="a"
    )
    call = proto.payload(fast)
    assert isinstance(call, ToolCallPayload)
    assert (call.name, call.input) == ("fs.read", {"path": "a"})
    # not two keys, or not the right types: the model decides
    extra = make_envelope("tool.call", {"input": {}}, session_id="s", agent_id="a")
    with pytest.raises(InvalidEnvelope):
        proto.payload(extra)
    bads: list[dict[str, Any]] = [{"name": 3, "input": {}}, {"name": "x", "input": [1]}]
    for bad in [*bads, {"input": {}}]:
        msg = make_envelope("tool.call", dict(bad), session_id="s", agent_id="a")
        with pytest.raises(InvalidEnvelope) as info:
            proto.payload(msg)
        assert info.value.error.message == "the payload of a tool.call message is invalid"
        assert info.value.error.detail
    # another kind with a name/input-shaped payload is validated by its own model
    log = make_envelope("log", {"name": "x", "input": {}}, session_id="s", agent_id="a")
    with pytest.raises(InvalidEnvelope) as info:
        proto.payload(log)
    assert info.value.error.message == "the payload of a log message is invalid"


def test_encode_writes_correlation_ids_only_when_set() -> None:
    plain = make_envelope("log", {"message": "m"}, session_id="s", agent_id="a", id="m1")
    data = json.loads(WorkerProtocol.encode(plain))
    assert "correlation_id" not in data
    assert data["id"] == "m1"
    reply = make_envelope("tool.result", {}, session_id="s", agent_id="a", correlation_id="c1")
    line = WorkerProtocol.encode(reply)
    assert line.endswith(b"\n")
    assert json.loads(line)["correlation_id"] == "c1"
    assert plain.model_fields_set == {
        "v",
        "id",
        "kind",
        "ts",
        "session_id",
        "agent_id",
        "correlation_id",
        "payload",
    }
    assert plain.model_dump()["payload"] == {"message": "m"}
    assert plain.model_copy(update={"kind": "event"}).kind == "event"


def test_timestamps_are_utc_iso_with_microseconds() -> None:
    stamps = []
    for _ in range(3):
        stamps.append(make_envelope("log", {}, session_id="s", agent_id="a").ts)
        time.sleep(0.002)
    for ts in stamps:
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", ts), ts
        parsed = datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
        assert abs(parsed.timestamp() - time.time()) < 120
    assert stamps == sorted(stamps)
    assert len(set(stamps)) == 3


def test_decode_errors_name_the_problem() -> None:
    proto = WorkerProtocol("parent")
    with pytest.raises(InvalidJson) as info:
        proto.decode(b"{nope")
    assert info.value.error.message == "a worker line is not JSON"
    assert info.value.error.detail
    control = make_envelope("control", {"type": "agent.cancel"}, session_id="s", agent_id="a")
    with pytest.raises(WrongDirection) as wrong:
        proto.decode(WorkerProtocol.encode(control))
    assert wrong.value.error.message == "message kind 'control' is not allowed worker to parent"
    worker = WorkerProtocol("worker")
    call = make_envelope("tool.call", {"name": "x", "input": {}}, session_id="s", agent_id="a")
    with pytest.raises(WrongDirection) as back:
        worker.decode(WorkerProtocol.encode(call))
    assert back.value.error.message == "message kind 'tool.call' is not allowed parent to worker"
    bad = {"v": 1, "id": "m", "kind": "log", "ts": "t", "session_id": "s", "agent_id": "a"}
    with pytest.raises(InvalidEnvelope) as shape:
        proto.decode(json.dumps({**bad, "payload": 3}))
    assert shape.value.error.detail is not None
    assert shape.value.error.detail.startswith("payload: ")
    assert len(shape.value.error.detail) <= 500


async def test_locked_send_and_receive_chunk_on_memory_streams() -> None:
    send, receive = trio.testing.memory_stream_one_way_pair()
    lock = trio.Lock()
    await locked_send(lock, send, b"hello\n")
    assert not lock.locked()
    assert await receive_chunk(receive, 3) == b"hel"
    assert await receive_chunk(receive) == b"lo\n"
    release = trio.Event()

    async def hold() -> None:
        async with lock:
            await release.wait()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(hold)
        await trio.testing.wait_all_tasks_blocked()
        with trio.move_on_after(0.05) as scope:
            await locked_send(lock, send, b"waits")
        assert scope.cancelled_caught
        release.set()
    await locked_send(lock, send, b"after\n")
    assert await receive_chunk(receive) == b"after\n"
