"""The real anthropic SDK and real httpx against local servers on 127.0.0.1 speaking each wire
format: streamed and plain replies, tool use, 429 + retry-after, 529, a connection dropped
mid-stream, malformed SSE and a 401 — through ProviderManager, nothing mocked."""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import aclosing

import pytest

from air.contracts.error import ErrorKind, Retryability
from air.contracts.provider import (
    CacheControl,
    MessageStopEvent,
    ProviderCompletionInput,
    ProviderErrorEvent,
    StopReason,
    TextBlock,
    ToolUseBlock,
    ToolUseStopEvent,
)
from air.llm.manager import ProviderManager
from tests.llm.conftest import FAKE_KEY
from tests.llm.helpers import (
    WIRES,
    Collected,
    Wire,
    collect,
    models_config,
    request,
    sse_for,
)
from tests.llm.servers import LocalServer, Reply, Turn, json_reply

ENV = {"AIR_TEST_KEY": FAKE_KEY}


def _error_body(wire: Wire, kind: str, message: str) -> dict[str, object]:
    if wire != "openai":
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"type": kind, "message": message}}


async def _complete(
    wire: Wire, server: LocalServer, req: ProviderCompletionInput | None = None
) -> tuple[Collected, ProviderManager]:
    """One ``ProviderManager.complete`` against ``server``; the manager is closed after it."""
    manager = ProviderManager(models_config(wire, server.url), env=ENV)
    try:
        return await collect(manager, req or request()), manager
    finally:
        await manager.aclose()


def _stop(events: Sequence[object]) -> MessageStopEvent:
    last = events[-1]
    assert isinstance(last, MessageStopEvent), last
    return last


def _error(events: Sequence[object]) -> ProviderErrorEvent:
    last = events[-1]
    assert isinstance(last, ProviderErrorEvent), last
    return last


@pytest.mark.parametrize("wire", WIRES)
async def test_streamed_text_reply(wire: Wire, server: LocalServer) -> None:
    server.push(Reply(chunks=sse_for(wire, Turn(text=["Hel", "lo ", "world"]))))
    got, manager = await _complete(wire, server)
    assert got.types == ["message_start", "text_delta", "text_delta", "text_delta", "message_stop"]
    stop = _stop(got.events)
    assert stop.stop_reason is StopReason.END_TURN
    assert stop.content == [TextBlock(text="Hello world")]
    assert stop.usage.output_tokens == 7
    assert stop.usage.cache_read_input_tokens == 5
    assert stop.usage.cost_usd is not None
    assert stop.usage.cost_usd > 0
    assert manager.usage.for_task("task_1") == manager.usage.total
    sent = server.requests[0]
    assert sent.body["model"] == "wire-model"
    assert sent.body["stream"] is True
    if wire != "openai":
        assert sent.path == "/v1/messages"
        assert sent.body["system"] == "You are terse."
        assert sent.body["tools"][0]["input_schema"]["properties"]["path"] == {"type": "string"}
        assert FAKE_KEY in (
            sent.headers.get("x-api-key", "") + sent.headers.get("authorization", "")
        )
    else:
        assert sent.path == "/v1/chat/completions"
        assert sent.body["messages"][0] == {"role": "system", "content": "You are terse."}
        assert sent.body["tools"][0]["function"]["name"] == "read_file"
        assert sent.headers["authorization"] == f"Bearer {FAKE_KEY}"


@pytest.mark.parametrize(
    ("wire", "client"),
    [
        ("anthropic_http", "h11"),
        ("openai", "h11"),
        ("anthropic", "sdk"),
        ("anthropic_http", "httpx"),
        ("openai", "httpx"),
    ],
)
async def test_turns_that_stop_at_the_final_event_keep_one_connection(
    wire: Wire, client: str, server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As air's turns read a reply: up to the final event, then the stream is closed. The rest
    of the chunked body is drained, so the next turn reuses the connection (a TLS handshake per
    turn otherwise) and still gets its own reply whole: over air's own client, the SDK's
    (``transport: sdk``) and httpx (what the HTTP adapters use when the environment names a
    proxy; here one that ``NO_PROXY`` skips for the local server). httpx closes a connection
    whose reply was not read to its end."""
    if client == "httpx":
        monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
        monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    manager = ProviderManager(models_config(wire, server.url), env=ENV)
    try:
        for text in ("one", "two", "three"):
            server.push(Reply(chunks=sse_for(wire, Turn(text=[text]))))
            async with aclosing(manager.complete(request())) as stream:
                async for event in stream:
                    if isinstance(event, MessageStopEvent):
                        assert event.content == [TextBlock(text=text)]
                        break
    finally:
        await manager.aclose()
    assert len(server.requests) == 3
    assert server.connections == 1


@pytest.mark.parametrize("wire", WIRES)
async def test_plain_json_reply_when_server_ignores_streaming(
    wire: Wire, server: LocalServer
) -> None:
    if wire != "openai":
        body: dict[str, object] = {
            "id": "msg_plain",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [
                {"type": "text", "text": "plain"},
                {"type": "tool_use", "id": "toolu_9", "name": "read_file", "input": {"path": "x"}},
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 4, "output_tokens": 2},
        }
    else:
        body = {
            "id": "chatcmpl-plain",
            "object": "chat.completion",
            "model": "gpt-test",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": "plain",
                        "tool_calls": [
                            {
                                "id": "toolu_9",
                                "type": "function",
                                "function": {"name": "read_file", "arguments": '{"path": "x"}'},
                            }
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": {"prompt_tokens": 4, "completion_tokens": 2},
        }
    server.push(json_reply(200, body))
    got, _ = await _complete(wire, server)
    stop = _stop(got.events)
    assert stop.stop_reason is StopReason.TOOL_USE
    assert stop.content == [
        TextBlock(text="plain"),
        ToolUseBlock(id="toolu_9", name="read_file", input={"path": "x"}),
    ]
    assert (stop.usage.input_tokens, stop.usage.output_tokens) == (4, 2)


@pytest.mark.parametrize("wire", WIRES)
async def test_streamed_tool_use(wire: Wire, server: LocalServer) -> None:
    turn = Turn(
        text=["Reading."],
        tool=("toolu_1", "read_file", ['{"pa', 'th": "src/a.py"}']),
        stop="tool_use",
    )
    server.push(Reply(chunks=sse_for(wire, turn)))
    got, _ = await _complete(wire, server)
    assert got.types == [
        "message_start",
        "text_delta",
        "tool_use_start",
        "tool_use_input_delta",
        "tool_use_input_delta",
        "tool_use_stop",
        "message_stop",
    ]
    tool_stop = got.events[5]
    assert isinstance(tool_stop, ToolUseStopEvent)
    assert tool_stop.input == {"path": "src/a.py"}
    stop = _stop(got.events)
    assert stop.stop_reason is StopReason.TOOL_USE
    assert stop.content[1] == ToolUseBlock(
        id="toolu_1", name="read_file", input={"path": "src/a.py"}
    )


@pytest.mark.parametrize("wire", WIRES)
async def test_429_retry_after_is_honoured_then_succeeds(wire: Wire, server: LocalServer) -> None:
    server.push(
        json_reply(
            429, _error_body(wire, "rate_limit_error", "slow down"), {"retry-after-ms": "40"}
        ),
        Reply(chunks=sse_for(wire, Turn(text=["ok"]))),
    )
    got, manager = await _complete(wire, server)
    assert _stop(got.events).content == [TextBlock(text="ok")]
    assert len(server.requests) == 2
    record = manager.calls[-1]
    assert record.attempts == 2
    assert record.errors[0].kind is ErrorKind.RATE_LIMITED
    # the configured backoff is <= 10 ms; the chosen wait follows the server's 40 ms instead
    assert record.waits[0] >= 0.04


@pytest.mark.parametrize("wire", WIRES)
async def test_529_overloaded_retried_until_attempts_run_out(
    wire: Wire, server: LocalServer
) -> None:
    overloaded = _error_body(wire, "overloaded_error", "Overloaded")
    server.push(*(json_reply(529, overloaded) for _ in range(3)))
    got, manager = await _complete(wire, server)
    assert got.types == ["error"]
    error = _error(got.events).error
    assert error.kind is ErrorKind.PROVIDER_ERROR
    assert error.retryability is Retryability.TRANSIENT
    assert (error.metadata or {})["attempts"] == 3
    assert len(server.requests) == 3
    assert len(manager.calls[-1].waits) == 2


@pytest.mark.parametrize("wire", WIRES)
async def test_529_then_success(wire: Wire, server: LocalServer) -> None:
    server.push(
        json_reply(529, _error_body(wire, "overloaded_error", "Overloaded")),
        Reply(chunks=sse_for(wire, Turn(text=["fine"]))),
    )
    got, manager = await _complete(wire, server)
    assert _stop(got.events).content == [TextBlock(text="fine")]
    assert manager.calls[-1].attempts == 2


@pytest.mark.parametrize("wire", WIRES)
async def test_connection_dropped_mid_stream_retries_the_turn(
    wire: Wire, server: LocalServer
) -> None:
    chunks = sse_for(wire, Turn(text=["one ", "two ", "three"]))
    server.push(
        Reply(chunks=chunks, drop_after=3 if wire == "openai" else 5),
        Reply(chunks=sse_for(wire, Turn(text=["again"]))),
    )
    got, manager = await _complete(wire, server)
    # the cut attempt streamed some deltas; the retried turn starts again at message_start
    assert got.types.count("message_start") == 2
    assert _stop(got.events).content == [TextBlock(text="again")]
    record = manager.calls[-1]
    assert record.attempts == 2
    assert record.errors[0].retryability is Retryability.TRANSIENT
    assert len(server.requests) == 2
    assert server.requests[0].body == server.requests[1].body  # the same turn, not turn 1


@pytest.mark.parametrize("wire", WIRES)
async def test_connection_dropped_before_any_event_is_retried(
    wire: Wire, server: LocalServer
) -> None:
    server.push(
        Reply(chunks=sse_for(wire, Turn(text=["x"])), drop_after=0),
        Reply(chunks=sse_for(wire, Turn(text=["second"]))),
    )
    got, _ = await _complete(wire, server)
    assert _stop(got.events).content == [TextBlock(text="second")]
    assert len(server.requests) == 2


@pytest.mark.parametrize("wire", WIRES)
async def test_malformed_sse_is_a_protocol_error(wire: Wire, server: LocalServer) -> None:
    chunks = sse_for(wire, Turn(text=["a"]))
    event = "event: content_block_delta\n" if wire != "openai" else ""
    bad = f"{event}data: {{not json at all\n\n".encode()
    server.push(Reply(chunks=[chunks[0], bad, *chunks[1:]]))
    got, _ = await _complete(wire, server)
    error = _error(got.events).error
    assert error.kind is ErrorKind.PROTOCOL_ERROR
    assert "malformed SSE" in error.message
    assert len(server.requests) == 1


@pytest.mark.parametrize("wire", WIRES)
async def test_401_is_auth_error_not_retried_and_key_not_echoed(
    wire: Wire, server: LocalServer
) -> None:
    # the server echoes the key it received; air must not carry it into the error
    body = _error_body(wire, "authentication_error", f"invalid x-api-key {FAKE_KEY}")
    server.push(json_reply(401, body), json_reply(401, body))
    got, _ = await _complete(wire, server)
    error = _error(got.events).error
    assert error.kind is ErrorKind.AUTH_ERROR
    assert error.retryability is Retryability.NEVER
    assert error.user_action
    assert FAKE_KEY not in json.dumps(error.model_dump(mode="json"))
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [307, 301])
@pytest.mark.parametrize("wire", WIRES)
async def test_a_redirect_is_not_followed_and_the_key_goes_nowhere(
    wire: Wire, status: int, server: LocalServer
) -> None:
    """A reply that points elsewhere (the configured endpoint moved, a gateway, a captive
    portal) ends the turn: config_error naming where, never retried. Followed, the SDK at its
    declared floor (0.46, httpx 0.27) sent the x-api-key header to the other origin."""
    path = "/v1/chat/completions" if wire == "openai" else "/v1/messages"
    with LocalServer() as elsewhere:
        elsewhere.push(Reply(chunks=sse_for(wire, Turn(text=["moved"]))))
        moved = json_reply(status, {}, {"location": elsewhere.url + path})
        server.push(moved, moved)
        got, _ = await _complete(wire, server)
        assert elsewhere.requests == []
    error = _error(got.events).error
    assert error.kind is ErrorKind.CONFIG_ERROR
    assert error.retryability is Retryability.NEVER
    assert f"(HTTP {status}) to {elsewhere.url}{path}" in error.message
    assert "base_url" in (error.user_action or "")
    assert len(server.requests) == 1


@pytest.mark.parametrize("wire", WIRES)
async def test_missing_key_raises_before_sending(wire: Wire, server: LocalServer) -> None:
    from air.contracts.error import AirException

    manager = ProviderManager(models_config(wire, server.url), env={})
    try:
        with pytest.raises(AirException) as info:
            await collect(manager, request())
    finally:
        await manager.aclose()
    assert info.value.kind is ErrorKind.AUTH_ERROR
    assert "AIR_TEST_KEY" in str(info.value)
    assert server.requests == []


@pytest.mark.parametrize("wire", WIRES)
async def test_too_long_prompt_is_context_overflow(wire: Wire, server: LocalServer) -> None:
    message = "prompt is too long: 250000 tokens > 200000 maximum"
    server.push(json_reply(400, _error_body(wire, "invalid_request_error", message)))
    got, _ = await _complete(wire, server)
    error = _error(got.events).error
    assert error.kind is ErrorKind.CONTEXT_OVERFLOW
    assert error.retryability is Retryability.AFTER_CHANGE
    assert len(server.requests) == 1


async def test_anthropic_prompt_caching_markers_pass_through(server: LocalServer) -> None:
    server.push(Reply(chunks=sse_for("anthropic", Turn(text=["cached"]))))
    system = [TextBlock(text="long stable prefix", cache_control=CacheControl())]
    got, _ = await _complete("anthropic", server, request(system=system))
    assert _stop(got.events).usage.cache_creation_input_tokens == 3
    assert server.requests[0].body["system"] == [
        {"type": "text", "text": "long stable prefix", "cache_control": {"type": "ephemeral"}}
    ]


@pytest.mark.parametrize("wire", WIRES)
async def test_valid_json_of_the_wrong_shape_is_a_protocol_error(
    wire: Wire, server: LocalServer
) -> None:
    chunks = sse_for(wire, Turn(text=["a"]))
    if wire == "openai":
        bad = b'data: {"id": "x", "choices": [{"index": 0, "delta": {"tool_calls": [{}]}}]}\n\n'
    else:
        bad = b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 7}\n\n'
    server.push(Reply(chunks=[chunks[0], bad, *chunks[1:]]))
    got, _ = await _complete(wire, server)
    error = _error(got.events).error
    assert error.kind is ErrorKind.PROTOCOL_ERROR
    assert error.user_action
