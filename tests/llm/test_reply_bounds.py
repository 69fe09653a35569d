"""What a model's server sends is bounded before it is held: one SSE event and a whole reply
body at most ``EVENT_MAX``, a stream at most ``STREAM_MAX`` bytes, the body of an error reply
read to 64 KiB only. A server's bug (an event never ended, a reply of gigabytes, a stream
without end, an error page that never ends) is a protocol error of that turn, never a parent
that grows without bound or waits for the rest of an error page."""

from __future__ import annotations

import json

import pytest

from air.contracts.error import ErrorKind
from air.contracts.provider import ProviderErrorEvent
from air.llm import sse
from air.llm.manager import ProviderManager
from air.llm.sse import EVENT_MAX, ReplyTooLarge, SSEDecoder
from tests.llm.conftest import FAKE_KEY
from tests.llm.helpers import WIRES, Wire, collect, models_config, request, sse_for
from tests.llm.servers import LocalServer, Reply, Turn

ENV = {"AIR_TEST_KEY": FAKE_KEY}
CHUNK = 64 * 1024


async def _error_of(wire: Wire, server: LocalServer, **config: object) -> ProviderErrorEvent:
    manager = ProviderManager(models_config(wire, server.url, **config), env=ENV)  # type: ignore[arg-type]
    try:
        got = await collect(manager, request())
    finally:
        await manager.aclose()
    last = got.events[-1]
    assert isinstance(last, ProviderErrorEvent), got.types
    return last


def test_an_event_is_refused_past_its_bound_and_not_before() -> None:
    decoder = SSEDecoder()
    head = b"data: "
    assert decoder.feed_data(head) == []
    fed = len(head)
    piece = b"x" * CHUNK
    while fed + CHUNK <= EVENT_MAX:
        assert decoder.feed_data(piece) == []
        fed += CHUNK
    with pytest.raises(ReplyTooLarge):
        decoder.feed_data(piece)


def test_an_event_in_many_chunks_is_the_event_whole() -> None:
    data = "y" * (3 * CHUNK + 5)
    stream = f"event: e\r\ndata: {data}\r\n\r\ndata: next\r\n\r\n".encode()
    decoder = SSEDecoder()
    events = []
    for at in range(0, len(stream), 1000):
        events += decoder.feed(stream[at : at + 1000])
    assert events == [("e", data), ("message", "next")]
    assert decoder.close() == []


@pytest.mark.parametrize("wire", WIRES)
async def test_a_streamed_event_never_ended_is_a_protocol_error(
    wire: Wire, server: LocalServer
) -> None:
    first = sse_for(wire, Turn(text=["a"]))[0]
    endless = [b"data: ", *[b"z" * CHUNK] * (EVENT_MAX // CHUNK + 2)]
    server.push(Reply(chunks=[first, *endless]))
    error = (await _error_of(wire, server)).error
    assert error.kind is ErrorKind.PROTOCOL_ERROR, error
    assert "too large" in error.message
    assert len(server.requests) == 1


@pytest.mark.parametrize("wire", WIRES)
async def test_a_plain_reply_over_the_bound_is_a_protocol_error(
    wire: Wire, server: LocalServer
) -> None:
    # a server that ignored stream=true: one JSON body, here one text of EVENT_MAX characters
    text = "w" * EVENT_MAX
    message: dict[str, object]
    if wire == "openai":
        message = {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}
    else:
        content = [{"type": "text", "text": text}]
        message = {"type": "message", "role": "assistant", "content": content}
    body = json.dumps(message).encode()
    chunks = [body[at : at + CHUNK] for at in range(0, len(body), CHUNK)]
    server.push(Reply(headers={"content-type": "application/json"}, chunks=chunks))
    error = (await _error_of(wire, server)).error
    assert error.kind is ErrorKind.PROTOCOL_ERROR, error
    assert "too large" in error.message


@pytest.mark.parametrize("wire", ["anthropic_http", "openai"])
async def test_an_error_reply_is_read_to_its_first_64_kib(wire: Wire, server: LocalServer) -> None:
    # the error's JSON, then a page that stalls: air reads its head and answers at once (read
    # whole, the turn waited for the read timeout and became a transport error)
    said = {"type": "invalid_request_error", "message": "no such parameter"}
    head = json.dumps({"type": "error", "error": said} if wire != "openai" else {"error": said})
    page = (head + " " * (CHUNK + 100)).encode()
    server.push(
        Reply(
            status=400,
            headers={"content-type": "text/event-stream"},
            chunks=[page, b" " * CHUNK],
            stall_after=1,
            stall_s=3,
        )
    )
    error = (await _error_of(wire, server, read_timeout_s=1)).error
    assert error.kind is ErrorKind.PROVIDER_ERROR, error
    assert "HTTP 400" in error.message
    assert "no such parameter" in error.message
    assert len(server.requests) == 1


@pytest.mark.parametrize("wire", WIRES)
async def test_a_stream_that_never_ends_is_a_protocol_error_at_its_bound(
    wire: Wire, server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Valid events, each small, without end: the reply's bytes are bounded too (STREAM_MAX,
    128 MiB; lowered here to 256 KiB so the test streams only ~2x that): before, a server that
    streamed on grew the parent for as long as it did."""
    monkeypatch.setattr(sse, "STREAM_MAX", 256 * 1024)
    endless = sse_for(wire, Turn(text=["x" * 1000] * 500))  # ~0.5 MB of deltas, then its end
    server.push(Reply(chunks=endless))
    error = (await _error_of(wire, server)).error
    assert error.kind is ErrorKind.PROTOCOL_ERROR, error
    assert "too large" in error.message
    server.push(Reply(chunks=sse_for(wire, Turn(text=["x" * 1000] * 100))))  # ~0.1 MB: whole
    manager = ProviderManager(models_config(wire, server.url), env=ENV)
    try:
        got = await collect(manager, request())
    finally:
        await manager.aclose()
    assert got.types[-1] == "message_stop", got.types
