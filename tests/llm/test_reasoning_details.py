"""OpenRouter's ``reasoning_details``: read from a chat stream into one block, its items merged
by the rule of OpenRouter's own client (a ``reasoning.text`` right after another continues it;
any other item kept as it came), never a stream event, bounded; sent back on that turn's
assistant message only where a server sent it, left out by the other wires and by what air
re-reads. The strict server refuses, as OpenRouter does, a Gemini 3 tool call back without its
signature and a Claude thinking text that is not the one signed (its pieces sent back
unmerged). A whole batch on google/gemini-3-flash-preview: tests/llm/test_calc_end_to_end.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from air.context.row_text import render_blocks
from air.contracts.provider import (
    CanonicalMessage,
    MessageStopEvent,
    ModelConfig,
    ProviderCompletionInput,
    ProviderErrorEvent,
    ReasoningDetailsBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from air.llm import stream_assembly
from air.llm.anthropic_wire import request_to_anthropic
from air.llm.convert import AnthropicCanonicalConverter
from air.llm.manager import ProviderManager
from air.llm.responses_wire import responses_body
from air.llm.tool_names import ToolNameMap
from air.llm.wire_memo import EncodedTurns
from air.testing.openai_rules import openai_problem
from air.testing.openrouter_rules import detail_signature, reasoning_stream
from tests.llm.conftest import FAKE_KEY
from tests.llm.helpers import collect, models_config, request
from tests.llm.servers import LocalServer, Reply, blocks_sse

CONVERT = AnthropicCanonicalConverter()
ENV = {"AIR_TEST_KEY": FAKE_KEY}
HEADERS = {"authorization": f"Bearer {FAKE_KEY}"}
GEMINI = "google/gemini-3-flash-preview"
CLAUDE = "anthropic/claude-sonnet-4.5"
SIGNED = detail_signature("claude", "first the tokenizer")
CALL = ToolUseBlock(id="call_1", name="read_file", input={"path": "a.py"})
STREAMED = [  # each delta's items: a Claude thinking in pieces, then what is never merged
    [{"type": "reasoning.text", "text": "first ", "format": "anthropic-claude-v1", "index": 0}],
    [{"type": "reasoning.text", "text": "the tokenizer", "index": 0}],
    [
        {"type": "reasoning.text", "text": "", "signature": SIGNED, "index": 0},
        {"type": "reasoning.encrypted", "data": "b3BhcXVl", "id": "rs_1", "index": 1},
    ],
    [{"type": "reasoning.text", "text": "then", "index": 2}],
    [{"type": "reasoning.summary", "summary": "looked", "index": 3, "later_field": [1]}],
]
MERGED = ReasoningDetailsBlock(
    details=[
        {
            "type": "reasoning.text",
            "text": "first the tokenizer",
            "format": "anthropic-claude-v1",
            "index": 0,
            "signature": SIGNED,
        },
        {"type": "reasoning.encrypted", "data": "b3BhcXVl", "id": "rs_1", "index": 1},
        {"type": "reasoning.text", "text": "then", "index": 2},
        {"type": "reasoning.summary", "summary": "looked", "index": 3, "later_field": [1]},
    ]
)


def _config(url: str, model: str = "wire-model") -> Any:
    config = models_config("openai", url)
    provider = config.providers["p"]
    m1 = provider.models["m1"].model_copy(update={"api_model": model})
    provider = provider.model_copy(update={"models": {"m1": m1}})
    return config.model_copy(update={"providers": {"p": provider}})


async def _ask(url: str, req: ProviderCompletionInput, model: str = "wire-model") -> Any:
    manager = ProviderManager(_config(url, model), env=ENV)
    try:
        return await collect(manager, req)
    finally:
        await manager.aclose()


def _tool_call() -> tuple[str, str, list[str]]:
    return ("call_1", "read_file", ['{"path": "a.py"}'])


async def test_the_details_merge_into_one_block_and_no_event(server: LocalServer) -> None:
    blocks = [("reasoning_details", STREAMED), ("tool_use", _tool_call())]
    server.push(Reply(chunks=blocks_sse("openai", blocks, "tool_use")))
    got = await _ask(server.url, request())
    stop = got.events[-1]
    assert isinstance(stop, MessageStopEvent)
    assert stop.content == [MERGED, CALL]
    shown = "".join(str(e) for e in got.events if not isinstance(e, MessageStopEvent))
    assert "tokenizer" not in shown
    assert "b3BhcXVl" not in shown


def _conversation(reply: list[Any]) -> list[CanonicalMessage]:
    return [
        CanonicalMessage(role="user", content=[TextBlock(text="fix it")]),
        CanonicalMessage(role="assistant", content=reply),
    ]


def test_they_go_back_on_their_own_turn_as_merged_and_read_back_the_same() -> None:
    sent = CONVERT.messages_to_openai(_conversation([MERGED, CALL]))
    assert sent[1]["reasoning_details"] == MERGED.details
    assert sent[1]["tool_calls"][0]["id"] == "call_1"
    plain = CONVERT.messages_to_openai(_conversation([TextBlock(text="done")]))
    assert "reasoning_details" not in plain[1]  # only where the server sent them
    empty = CONVERT.messages_to_openai(_conversation([ReasoningDetailsBlock(details=[]), CALL]))
    assert empty[1]["reasoning_details"] == []  # a server's empty list goes back as it came
    _, back = CONVERT.messages_from_openai(sent)
    assert back[1].content == [MERGED, CALL]


def test_the_other_wires_and_air_s_own_reading_leave_them_out() -> None:
    req = ProviderCompletionInput(
        provider_id="p", model_id="m", messages=_conversation([MERGED, CALL])
    )
    responses = responses_body(req, "gpt-6", ToolNameMap([]), EncodedTurns(), ModelConfig())
    for said in (json.dumps(request_to_anthropic(req, "claude-test")), responses.decode()):
        assert "tokenizer" not in said
        assert "b3BhcXVl" not in said
    assert "tokenizer" not in render_blocks([MERGED.model_dump(), CALL.model_dump()])


async def test_details_past_their_bound_fail_the_turn(
    server: LocalServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stream_assembly, "DETAILS_MAX", 100)
    endless = [[{"type": "reasoning.encrypted", "data": "x" * 40}] for _ in range(3)]
    blocks = [("reasoning_details", endless), ("text", ["done"])]
    server.push(Reply(chunks=blocks_sse("openai", blocks, "end_turn")))
    got = await _ask(server.url, request())
    error = got.events[-1]
    assert isinstance(error, ProviderErrorEvent), got.types
    assert error.error.kind == "protocol_error"
    assert "reasoning_details past 100 characters" in error.error.message


@pytest.mark.parametrize(
    ("details", "said"),
    [
        (7, "reasoning_details that is not a list"),
        ([{"text": "no type"}], "a reasoning_details item without a type"),
        ([{"type": "reasoning.text", "text": 3}], "reasoning.text without a string text"),
    ],
    ids=["list", "type", "text"],
)
async def test_details_of_another_shape_are_a_protocol_error(
    server: LocalServer, details: Any, said: str
) -> None:
    blocks = [("reasoning_details", [details]), ("text", ["done"])]
    server.push(Reply(chunks=blocks_sse("openai", blocks, "end_turn")))
    got = await _ask(server.url, request())
    error = got.events[-1]
    assert isinstance(error, ProviderErrorEvent), got.types
    assert error.error.kind == "protocol_error"
    assert error.error.message == f"p: {said}"


def _body(model: str, details: list[Any] | None) -> dict[str, Any]:
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    back = {} if details is None else {"reasoning_details": details}
    return {
        "model": model,
        "stream": True,
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [call], **back},
            {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
        ],
    }


def _merged(deltas: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    asm = stream_assembly.Assembler("p")
    asm.details[0] = []
    asm.order.append(0)
    for items in deltas:
        asm.more_details(0, items)
    block = asm.content()[0]
    assert isinstance(block, ReasoningDetailsBlock)
    return block.details


def _upstream(problem: Any) -> str:
    assert problem is not None
    assert (problem.status, problem.message) == (400, "Provider returned error")
    return str(problem.metadata["raw"])


def test_the_strict_server_refuses_gemini_behind_openrouter_without_its_signature() -> None:
    streamed = reasoning_stream(GEMINI, "look at a.py first", "call_1")
    raw = _upstream(openai_problem(HEADERS, _body(GEMINI, None)))
    assert raw.startswith("Gemini models require OpenRouter reasoning details to be preserved")
    assert "Function call is missing a thought_signature in functionCall parts" in raw
    assert "`default_api:f` , position 2." in raw
    text_only = [i for items in streamed for i in items if i["type"] == "reasoning.text"]
    assert "missing a thought_signature" in _upstream(
        openai_problem(HEADERS, _body(GEMINI, text_only))
    )
    forged = _merged(reasoning_stream(GEMINI, "look at a.py first", "call_2"))
    for item in forged:
        item["id"] = "call_1"
    assert "Corrupted thought signature." in _upstream(
        openai_problem(HEADERS, _body(GEMINI, forged))
    )
    assert openai_problem(HEADERS, _body(GEMINI, _merged(streamed))) is None
    assert openai_problem(HEADERS, _body("google/gemini-2.5-flash", None)) is None


def test_the_strict_server_refuses_claude_s_thinking_back_unmerged() -> None:
    streamed = reasoning_stream(CLAUDE, "look at a.py first", "call_1")
    assert len(streamed) == 3  # two pieces, then the signature in a piece of its own
    unmerged = [i for items in streamed for i in items]
    raw = _upstream(openai_problem(HEADERS, _body(CLAUDE, unmerged)))
    assert json.loads(raw)["error"]["message"] == (
        "messages.1.content.0: Invalid `signature` in `thinking` block"
    )
    assert openai_problem(HEADERS, _body(CLAUDE, _merged(streamed))) is None


async def test_an_agent_loop_behind_openrouter_brings_the_signature_back() -> None:
    """Two requests through air against the strict server playing Gemini 3 behind OpenRouter:
    the second carries the first reply's details as merged, and is answered."""
    with LocalServer(api_key=FAKE_KEY) as strict:
        blocks = [
            ("reasoning_details", reasoning_stream(GEMINI, "look at a.py first", "call_1")),
            ("tool_use", _tool_call()),
        ]
        strict.push(
            Reply(chunks=blocks_sse("openai", blocks, "tool_use", model=GEMINI)),
            Reply(chunks=blocks_sse("openai", [("text", ["fixed"])], "end_turn", model=GEMINI)),
        )
        first = (await _ask(strict.url, request(), GEMINI)).stop
        result = ToolResultBlock(tool_use_id="call_1", content="print(1)")
        again = request(
            messages=[
                *request().messages,
                CanonicalMessage(role="assistant", content=first.content),
                CanonicalMessage(role="user", content=[result]),
            ]
        )
        second = await _ask(strict.url, again, GEMINI)
        rejected = [r.problem for r in strict.rejected]
        sent = [r.body for r in strict.requests]
    assert rejected == []
    assert isinstance(second.events[-1], MessageStopEvent), second.types
    assert second.stop.content == [TextBlock(text="fixed")]
    back = sent[1]["messages"][2]
    assert back["reasoning_details"] == _merged(
        reasoning_stream(GEMINI, "look at a.py first", "call_1")
    )
    assert "reasoning" not in back  # OpenRouter's text beside the details: never sent back
