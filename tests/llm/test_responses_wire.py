"""OpenAI's Responses API as an openai_compatible model's wire (air/llm/responses_wire.py,
responses_stream.py), over real HTTP against the strict server: the request air sends, the
canonical stream of a reasoning turn (text, tool use, usage with cached tokens, the stop
reason), its reasoning item kept and replayed as the API requires between tool calls (and left
out on the other wires, never shown as the answer), and failures mapped as the chat wire maps
them, retried as before."""

from __future__ import annotations

import json
from typing import Any

import pytest

from air.agents.turns import TurnResult
from air.contracts.error import AirException
from air.contracts.provider import (
    CanonicalMessage,
    ModelConfig,
    ModelsConfig,
    OpenAIReasoningBlock,
    ProviderConfig,
    ProviderKind,
    StopReason,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from air.llm.anthropic_wire import anthropic_body, request_to_anthropic
from air.llm.catalogue import complete_model
from air.llm.convert import AnthropicCanonicalConverter
from air.llm.manager import ProviderManager
from air.llm.responses_stream import ResponsesStreamNormalizer
from air.llm.responses_wire import responses_body
from air.llm.tool_names import ToolNameMap
from air.llm.wire_memo import EncodedTurns
from air.testing.anthropic_rules import anthropic_problem
from air.testing.openai_rules import openai_problem
from air.testing.responses_replies import seal
from tests.llm.conftest import FAKE_KEY
from tests.llm.helpers import FAST_RETRY, collect, request
from tests.llm.servers import LocalServer, Reply, blocks_sse, json_reply

MODEL = "gpt-6.1-sol"
HEADERS = {
    "authorization": f"Bearer {FAKE_KEY}",
    "x-api-key": FAKE_KEY,
    "anthropic-version": "2023-06-01",
}


def _config(url: str, **fields: Any) -> ModelsConfig:
    provider = ProviderConfig(
        kind=ProviderKind.OPENAI_COMPATIBLE,
        base_url=url + "/v1",
        auth_ref="AIR_TEST_KEY",
        timeout_s=10,
        read_timeout_s=10,
        models={MODEL: complete_model(MODEL, ModelConfig(**fields))},
    )
    return ModelsConfig(default=f"p/{MODEL}", retry=FAST_RETRY, providers={"p": provider})


def _turn(*blocks: tuple[str, Any], stop: str = "tool_use") -> Reply:
    return Reply(chunks=blocks_sse("responses", list(blocks), stop, model=MODEL, reasoning=True))


def _sse(*events: dict[str, Any]) -> list[bytes]:
    return [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events]


CREATED = {"type": "response.created", "response": {"id": "resp_1", "model": MODEL}}
CALL = ("tool_use", ("call_1", "read_file", ['{"path"', ': "a"}']))


async def test_a_reasoning_turn_is_streamed_kept_and_replayed(server: LocalServer) -> None:
    manager = ProviderManager(_config(server.url), env={"AIR_TEST_KEY": FAKE_KEY})
    first = request(model_id=MODEL)
    try:
        server.push(_turn(("text", ["Rea", "ding."]), CALL))
        got = await collect(manager, first)
        stop = got.events[-1]
        assert got.types == [
            "message_start",
            "text_delta",
            "text_delta",
            "tool_use_start",
            "tool_use_input_delta",
            "tool_use_input_delta",
            "tool_use_stop",
            "message_stop",
        ]
        assert stop.type == "message_stop"
        assert stop.stop_reason is StopReason.TOOL_USE
        assert (stop.usage.input_tokens, stop.usage.cache_read_input_tokens) == (11, 5)
        assert stop.usage.cost_usd is not None
        assert stop.usage.cost_usd > 0
        reasoning, text, call = stop.content
        assert isinstance(reasoning, OpenAIReasoningBlock)
        assert reasoning.encrypted_content == seal(reasoning.id)
        tok = reasoning.id[3:]
        assert reasoning.next_item_ids == [f"msg_{tok}_0", f"fc_{tok}_1"]
        assert text == TextBlock(text="Reading.")
        assert call == ToolUseBlock(id="call_1", name="read_file", input={"path": "a"})
        assert TurnResult(status="complete", content=stop.content).text == "Reading."
        second = first.model_copy(
            update={
                "messages": [
                    *first.messages,
                    CanonicalMessage(role="assistant", content=stop.content),
                    CanonicalMessage(
                        role="user",
                        content=[ToolResultBlock(tool_use_id="call_1", content="text of a")],
                    ),
                ]
            }
        )
        server.push(_turn(("text", ["Done."]), stop="end_turn"))
        again = await collect(manager, second)
        assert again.events[-1].type == "message_stop"
        assert again.events[-1].stop_reason is StopReason.END_TURN
    finally:
        await manager.aclose()
    assert [r.problem for r in server.rejected] == []
    assert [r.path for r in server.requests] == ["/v1/responses"] * 2
    body = server.requests[0].body
    assert {k: body[k] for k in ("stream", "store", "instructions", "max_output_tokens")} == {
        "stream": True,
        "store": False,
        "instructions": "You are terse.",
        "max_output_tokens": 256,
    }
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["tools"] == [
        {
            "type": "function",
            "name": "read_file",
            "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            "strict": False,
        }
    ]
    assert body["input"] == [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    ]
    replayed = server.requests[1].body["input"][1:]
    assert [(i["type"], i.get("id")) for i in replayed] == [
        ("reasoning", reasoning.id),
        ("message", f"msg_{tok}_0"),
        ("function_call", f"fc_{tok}_1"),
        ("function_call_output", None),
    ]
    assert replayed[0]["encrypted_content"] == seal(reasoning.id)
    assert (replayed[2]["call_id"], replayed[3]["call_id"]) == ("call_1", "call_1")
    assert replayed[3]["output"] == "text of a"


def test_reasoning_blocks_are_left_out_on_the_anthropic_and_chat_wires() -> None:
    reasoning = OpenAIReasoningBlock(id="rs_1", encrypted_content="gAAAAB-x", next_item_ids=["f"])
    call = ToolUseBlock(id="call_1", name="read_file", input={"path": "a"})
    req = request(
        messages=[
            *request().messages,
            CanonicalMessage(role="assistant", content=[reasoning, call]),
            CanonicalMessage(role="user", content=[ToolResultBlock(tool_use_id="call_1")]),
        ]
    )
    names = ToolNameMap(["read_file"])
    chat = AnthropicCanonicalConverter()
    bodies = {
        "anthropic": json.loads(anthropic_body(req, "claude-sonnet-5-5", names, EncodedTurns())),
        "chat": json.loads(chat.request_to_openai_body(req, "gpt-4.1", names, EncodedTurns())),
    }
    assert bodies["anthropic"] == request_to_anthropic(req, "claude-sonnet-5-5", names)
    assert bodies["chat"] == chat.request_to_openai(req, "gpt-4.1", names)
    for body in bodies.values():
        assert "rs_1" not in json.dumps(body)
    assert anthropic_problem(HEADERS, bodies["anthropic"]) is None
    assert openai_problem(HEADERS, bodies["chat"]) is None


def _failed(code: str) -> list[bytes]:
    error = {"code": code, "message": f"{code} here"}
    failed = {"type": "response.failed", "response": {"id": "resp_1", "error": error}}
    return _sse(CREATED, failed)


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        (Reply(chunks=_failed("rate_limit_exceeded")), "rate_limited"),
        (Reply(chunks=_failed("server_error")), "provider_error"),
        (
            Reply(chunks=_sse(CREATED, {"type": "error", "code": "server_error", "message": "x"})),
            "",
        ),
        (Reply(status=500, headers={}, chunks=[b'{"error": {"message": "boom"}}']), ""),
        (Reply(chunks=_turn(("text", ["never ends"]), stop="end_turn").chunks, drop_after=4), ""),
    ],
    ids=["rate", "failed", "error", "http500", "cut"],
)
async def test_a_transient_failure_is_retried_as_on_the_chat_wire(
    server: LocalServer, reply: Reply, kind: str
) -> None:
    manager = ProviderManager(_config(server.url), env={"AIR_TEST_KEY": FAKE_KEY})
    try:
        server.push(reply, _turn(("text", ["ok"]), stop="end_turn"))
        got = await collect(manager, request(model_id=MODEL))
    finally:
        await manager.aclose()
    assert got.events[-1].type == "message_stop", got.events[-1]
    assert len(server.requests) == 2
    if kind:
        norm = ResponsesStreamNormalizer("p", MODEL)
        events = [e for c in reply.chunks for e in norm.feed(json.loads(c.split(b"data: ")[1]))]
        assert events[-1].type == "error"
        assert (events[-1].error.kind, events[-1].error.retryability) == (kind, "transient")


async def test_a_refused_request_ends_in_the_apis_error_once(server: LocalServer) -> None:
    config = _config(server.url, params={"reasoning": {"effort": "none"}})
    manager = ProviderManager(config, env={"AIR_TEST_KEY": FAKE_KEY})
    try:
        got = await collect(manager, request(model_id=MODEL))
    finally:
        await manager.aclose()
    last = got.events[-1]
    assert last.type == "error"
    assert (last.error.kind, last.error.retryability) == ("provider_error", "never")
    assert "Invalid value: 'none'" in last.error.message
    assert len(server.requests) == 1
    server.rejected.clear()


async def test_an_incomplete_reply_and_a_plain_json_one(server: LocalServer) -> None:
    manager = ProviderManager(_config(server.url), env={"AIR_TEST_KEY": FAKE_KEY})
    whole = {
        "id": "resp_2",
        "model": MODEL,
        "status": "completed",
        "output": [
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "plain", "annotations": []}],
            },
            {
                "id": "fc_1",
                "type": "function_call",
                "call_id": "call_9",
                "name": "read_file",
                "arguments": '{"path": "b"}',
                "status": "completed",
            },
        ],
        "usage": {
            "input_tokens": 20,
            "output_tokens": 3,
            "input_tokens_details": {"cached_tokens": 8, "cache_write_tokens": 4},
        },
    }
    try:
        server.push(_turn(("text", ["cut"]), stop="max_tokens"), json_reply(200, whole))
        cut = await collect(manager, request(model_id=MODEL))
        plain = await collect(manager, request(model_id=MODEL))
    finally:
        await manager.aclose()
    assert cut.events[-1].type == "message_stop"
    assert cut.events[-1].stop_reason is StopReason.MAX_TOKENS
    stop = plain.events[-1]
    assert stop.type == "message_stop"
    assert stop.stop_reason is StopReason.TOOL_USE
    assert stop.content == [
        TextBlock(text="plain"),
        ToolUseBlock(id="call_9", name="read_file", input={"path": "b"}),
    ]
    usage = stop.usage
    assert (usage.input_tokens, usage.cache_read_input_tokens) == (8, 8)
    assert usage.cache_creation_input_tokens == 4


def test_what_the_wire_cannot_carry_is_refused_not_dropped() -> None:
    model = complete_model(MODEL, ModelConfig())
    with pytest.raises(AirException) as stops:
        responses_body(
            request(stop_sequences=["END"]), MODEL, ToolNameMap([]), EncodedTurns(), model
        )
    assert stops.value.error.kind == "validation_error"
    norm = ResponsesStreamNormalizer("p", MODEL)
    norm.feed(CREATED)
    search = {"type": "web_search_call", "id": "ws_1"}
    for event in (
        {"type": "response.output_item.added", "output_index": 0, "item": search},
        {"type": "response.audio.delta", "delta": "x"},
    ):
        with pytest.raises(AirException) as bad:
            norm.feed(event)
        assert bad.value.error.kind == "protocol_error"
