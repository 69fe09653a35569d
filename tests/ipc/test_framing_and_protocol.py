"""The sans-IO framing and WorkerProtocol: typed errors for every bad input, fuzzed."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from air.contracts.error import AirException
from air.contracts.ipc import IPC_PROTOCOL_VERSION
from air.ipc.framing import (
    EofMidLine,
    InvalidEnvelope,
    InvalidJson,
    LineDecoder,
    LineTooLong,
    ProtocolViolation,
    VersionMismatch,
    WrongDirection,
)
from air.ipc.protocol import WorkerProtocol, make_envelope


def test_lines_split_across_chunks_are_joined() -> None:
    dec = LineDecoder(max_line_bytes=100)
    assert dec.feed(b'{"a"') == []
    assert dec.feed(b':1}\n{"b":2}\n{"c"') == [b'{"a":1}', b'{"b":2}']
    assert dec.buffered == 4
    assert dec.feed(b":3}\n") == [b'{"c":3}']
    assert dec.eof() is None


def test_oversized_line_is_one_typed_error_and_the_stream_recovers() -> None:
    dec = LineDecoder(max_line_bytes=10)
    out = dec.feed(b"x" * 7)
    assert out == []
    out = dec.feed(b"y" * 7)
    assert len(out) == 1
    assert isinstance(out[0], LineTooLong)
    assert out[0].kind == "protocol_error"
    assert dec.feed(b"zzz" * 1000) == []
    assert dec.buffered == 0
    assert dec.feed(b'end\n{"ok":1}\n') == [b'{"ok":1}']


def test_eof_mid_line_is_reported() -> None:
    dec = LineDecoder()
    dec.feed(b'{"half":')
    err = dec.eof()
    assert isinstance(err, EofMidLine)
    assert err.error.user_action


def _line(kind: str, **payload: object) -> bytes:
    env = make_envelope(kind, dict(payload), session_id="s", agent_id="a")
    return WorkerProtocol.encode(env)


def test_round_trip_and_direction() -> None:
    parent, worker = WorkerProtocol("parent"), WorkerProtocol("worker")
    msg = parent.decode(_line("tool.call", name="fs.read", input={"path": "x"}))
    assert msg.kind == "tool.call"
    assert msg.payload == {"name": "fs.read", "input": {"path": "x"}}
    with pytest.raises(WrongDirection):
        parent.decode(_line("control", type="agent.cancel", reason="no"))
    with pytest.raises(WrongDirection):
        worker.decode(_line("worker.result"))
    ctl = worker.decode(_line("control", type="agent.extend_timeout", extra_ms=5, reason="r"))
    assert worker.payload(ctl).extra_ms == 5


_ENV = b'{"v":%s,"id":"x","kind":"log","ts":"t","session_id":"s","agent_id":"a","payload":{}}'


def test_the_envelope_template_itself_is_valid() -> None:
    msg = WorkerProtocol("parent").decode(_ENV % b"1")
    assert (msg.v, msg.kind, msg.payload, msg.correlation_id) == (1, "log", {}, None)


@pytest.mark.parametrize(
    ("line", "error"),
    [
        (b"not json", InvalidJson),
        (b"[1,2]", InvalidEnvelope),
        (b'{"v":2,"id":"x"}', VersionMismatch),
        (
            b'{"v":1,"id":"x","kind":"nope","ts":"t","session_id":"s","agent_id":"a"}',
            InvalidEnvelope,
        ),
        (b'{"v":1,"id":"x","kind":"log","ts":"t","session_id":"s"}', InvalidEnvelope),
        (b"\xff\xfe", InvalidJson),
        # the strict one-pass validation must not coerce what the protocol does not allow
        (_ENV % b"true", VersionMismatch),
        (_ENV % b"1.0", VersionMismatch),
        (_ENV % b'"1"', VersionMismatch),
        ((_ENV % b"1")[:-1] + b',"extra":1}', InvalidEnvelope),
        ((_ENV % b"1").replace(b'"id":"x"', b'"id":7'), InvalidEnvelope),
        ((_ENV % b"1").replace(b'"payload":{}', b'"payload":[]'), InvalidEnvelope),
    ],
)
def test_bad_lines_raise_typed_protocol_errors(line: bytes, error: type[ProtocolViolation]) -> None:
    with pytest.raises(error) as info:
        WorkerProtocol("parent").decode(line)
    assert isinstance(info.value, AirException)
    assert (info.value.error.metadata or {}).get("code") == error.code


def test_payload_validation_is_typed() -> None:
    proto = WorkerProtocol("parent")
    msg = proto.decode(_line("tool.call", input={"no": "name"}))
    with pytest.raises(InvalidEnvelope):
        proto.payload(msg)


def test_check_protocol_version() -> None:
    assert WorkerProtocol.check_protocol_version(IPC_PROTOCOL_VERSION)
    assert not WorkerProtocol.check_protocol_version(IPC_PROTOCOL_VERSION + 1)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(chunks=st.lists(st.binary(max_size=64), max_size=12))
def test_fuzz_decoder_bytes_never_raise_untyped(chunks: list[bytes]) -> None:
    dec = LineDecoder(max_line_bytes=32)
    proto = WorkerProtocol("parent")
    items: list[bytes | ProtocolViolation] = []
    for c in chunks:
        items.extend(dec.feed(c))
    tail = dec.eof()
    for item in items:
        if isinstance(item, bytes):
            assert len(item) <= 32
            try:
                proto.decode(item)
            except ProtocolViolation:
                pass
    assert tail is None or isinstance(tail, EofMidLine)


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from(
        [
            "control",
            "event",
            "log",
            "tool.call",
            "tool.result",
            "worker.result",
            "worker.checkpoint",
            "protocol.error",
            "tool.stream",
            "x",
        ]
    ),
    payload=_json,
    extra=st.dictionaries(st.sampled_from(["v", "id", "ts", "agent_id", "correlation_id"]), _json),
)
def test_fuzz_envelopes_never_raise_untyped(
    kind: str, payload: object, extra: dict[str, object]
) -> None:
    raw = {
        "v": 1,
        "id": "m",
        "kind": kind,
        "ts": "t",
        "session_id": "s",
        "agent_id": "a",
        "payload": payload,
        **extra,
    }
    for side in ("parent", "worker"):
        proto = WorkerProtocol(side)
        try:
            msg = proto.decode(json.dumps(raw))
            proto.payload(msg)
        except ProtocolViolation:
            pass
